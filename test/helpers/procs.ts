/** Spawning the gateway and the fake model server as real processes for tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { REPO_ROOT } from './shared.js';

export interface Proc {
  proc: ChildProcess;
  port: number;
  lines: string[];
  extra: Record<string, number>;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

export async function spawnProc(script: string, env: Record<string, string>, timeoutMs = 20_000, nodeArgs: string[] = []): Promise<Proc> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) clean[k] = v;
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', resolve(REPO_ROOT, script)], { env: { ...clean, FACECOMPUTE_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO_ROOT });
  const lines: string[] = [];
  const extra: Record<string, number> = {};
  const exited = new Promise<number | null>((r) => proc.on('exit', (c) => r(c)));
  const port = await new Promise<number>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`${script} did not start: ${lines.join('\n')}`)), timeoutMs);
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        const m = /^([A-Z]+) (\d+)$/.exec(line);
        if (m) {
          extra[m[1]!] = Number(m[2]);
          if (m[1] === 'LISTENING') { clearTimeout(timer); res(Number(m[2])); }
        }
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => lines.push(d.toString()));
    proc.on('exit', (c) => { clearTimeout(timer); rej(new Error(`${script} exited ${c}: ${lines.join('\n')}`)); });
  });
  return { proc, port, lines, extra, exited, kill: (s = 'SIGTERM') => { if (proc.exitCode === null) proc.kill(s); } };
}

export const startFakeModelServer = (env: Record<string, string> = {}) => spawnProc('test/helpers/fake-model-server.ts', env);

export const startGateway = (env: Record<string, string>, nodeArgs: string[] = []) => spawnProc('test/helpers/gateway-entry.ts', { FACECOMPUTE_GATEWAY_PORT: '0', FACECOMPUTE_HOST: '127.0.0.1', ...env }, 20_000, nodeArgs);

export async function setFault(msPort: number, mode: string, delay_ms = 0): Promise<void> {
  await fetch(`http://127.0.0.1:${msPort}/__fault`, { method: 'POST', body: JSON.stringify({ mode, delay_ms }) });
}
