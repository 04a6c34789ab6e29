/**
 * `facecompute serve` (or `npm start`) as a child process on free loopback ports with a fresh data
 * directory, for tests of what a user starts: its environment is the caller's, with none of the test
 * run's FACECOMPUTE_* settings, plus `env`. `ready()` waits for /readiness 200 (or the process's end).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

export interface ServeProc {
  proc: ChildProcess;
  gw: string;
  console: string;
  /** The local model-server child's base URL (its /internal/ routes). */
  modelServer: string;
  logs: string[];
  /** The exit code once it has ended. */
  exited: Promise<number | null>;
  /** /readiness status once 200, or the last status (0: no answer) when the process ended or time ran out. */
  ready(timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

type Spawner = (command: string, args: string[], opts: SpawnOptions) => ChildProcess;

/** The environment of a user's shell: the caller's, minus every FACECOMPUTE_* variable. */
export function userEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  return { ...env, ...extra };
}

export async function startServe(command: string, args: string[], env: Record<string, string>, opts: { cwd?: string; spawner?: Spawner } = {}): Promise<ServeProc> {
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const fullEnv = {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_MODEL_SERVER_PORT: String(modelServer),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-serve-data-')),
    FACECOMPUTE_LOG_LEVEL: 'warn',
    ...env,
  };
  const proc = (opts.spawner ?? spawn)(command, args, { env: fullEnv, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  proc.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  const gw = `http://127.0.0.1:${gateway}`;
  return {
    proc,
    gw,
    console: `http://127.0.0.1:${consolePort}`,
    modelServer: `http://127.0.0.1:${modelServer}`,
    logs,
    exited,
    async ready(timeoutMs = 240_000) {
      const deadline = Date.now() + timeoutMs;
      let status = 0;
      while (Date.now() < deadline && proc.exitCode === null && proc.signalCode === null) {
        status = (await fetch(`${gw}/readiness`).catch(() => null))?.status ?? 0;
        if (status === 200) return 200;
        await new Promise((r) => setTimeout(r, 200));
      }
      return status;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** An anonymous account's REST key, as the README's first lines make one. */
export async function anonymousKey(consoleUrl: string): Promise<string> {
  const signup = (await (await fetch(`${consoleUrl}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const key = (await (await fetch(`${consoleUrl}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${signup.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'test' }) })).json()) as { key: string };
  return key.key;
}
