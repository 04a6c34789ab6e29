/**
 * A real model server (Facenet, the default, and Dlib; the detectors whose weights are in
 * ../shared/weights) as a child process, for end-to-end tests of the gateway and the MCP endpoint. It
 * fails loudly, never skips, when the weights or the converter environment are missing. Facenet comes
 * from the models cache, where scripts/bootstrap.sh fetches it (`facecompute models fetch Facenet`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './shared.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { freePort } from './ports.js';

export interface RealModelServer {
  url: string;
  port: number;
  proc: ChildProcess;
  logs: string[];
  stop(): Promise<void>;
}

export const MODELS_CACHE = resolve(process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO_ROOT, '.models-cache'));

/** Environment of a model server serving Facenet (the default) and Dlib with every installed detector. */
export function modelServerEnv(port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    FACECOMPUTE_MODEL_SERVER_PORT: String(port),
    FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR,
    FACECOMPUTE_MODELS_CACHE: MODELS_CACHE,
    FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Dlib',
    FACECOMPUTE_DEFAULT_MODEL: 'Facenet',
    FACECOMPUTE_LOG_LEVEL: 'warn',
    ...extra,
  };
}

export async function startRealModelServer(extra: Record<string, string> = {}, readyTimeoutMs = 240_000): Promise<RealModelServer> {
  const port = await freePort();
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) clean[k] = v;
  // The sources, not a possibly stale dist/ build.
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'model-server'], {
    env: { ...clean, ...modelServerEnv(port, extra) },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: REPO_ROOT,
  });
  const logs: string[] = [];
  proc.stdout?.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`model server exited ${proc.exitCode}: ${logs.join('')}`);
    try {
      const r = await fetch(`${url}/internal/readiness`);
      const body = (await r.json()) as { status: string; error: string };
      if (body.status === 'ready') break;
      if (body.status === 'error') throw new Error(`model server warmup failed (${body.error}): ${logs.join('')}`);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('model server')) throw err;
    }
    if (Date.now() > deadline) throw new Error(`model server not ready in ${readyTimeoutMs} ms: ${logs.join('')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    port,
    proc,
    logs,
    stop: async () => {
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** A configuration for in-process gateway/MCP/console pointed at `modelServerUrl`, with a fresh SQLite store. */
export function stackConfig(modelServerUrl: string, extra: Record<string, string> = {}): Config {
  return loadConfig({
    FACECOMPUTE_MODEL_SERVER_URLS: modelServerUrl,
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-stack-')),
    FACECOMPUTE_ALLOWED_MODELS: 'Facenet,Dlib',
    FACECOMPUTE_DEFAULT_MODEL: 'Facenet',
    FACECOMPUTE_LOG_LEVEL: 'silent',
    ...extra,
  });
}
