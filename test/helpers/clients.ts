/**
 * What the client-library tests (test/clients.test.ts, test/doc-examples.test.ts) need around the
 * clients: a live `facecompute serve` with a key, the Python package built from clients/python into
 * a temporary directory, and clients/js's built entry point.
 *
 * The package is built offline from a copy of clients/python (pip --no-index --no-build-isolation,
 * with the setuptools of .venvs/client-python), which proves `pip install ./clients/python` works and
 * keeps build/ and *.egg-info out of the checkout. Nothing is fetched: the venv is made by
 * scripts/bootstrap.sh, and tests run with PIP_NO_INDEX.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './shared.js';
import { modelServerEnv } from './real-stack.js';
import { freePort } from './ports.js';

export const CLIENT_PYTHON_VENV = resolve(REPO_ROOT, '.venvs', 'client-python');
export const CLIENT_PYTHON = join(CLIENT_PYTHON_VENV, 'bin', 'python');
export const CLIENT_JS_DIR = resolve(REPO_ROOT, 'clients', 'js');

export interface LiveServe {
  gateway: string;
  console: string;
  metrics: string;
  logs: string[];
  /** Null while serve runs; its exit code or signal once it stopped. */
  exited(): string | null;
  /** A new anonymous account's REST key. */
  newKey(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** `facecompute serve` with Facenet and Dlib on free loopback ports; `extra` env overrides. */
export async function startServe(extra: Record<string, string> = {}): Promise<LiveServe> {
  const [gateway, mcp, consolePort, modelServer, metrics] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, modelServerEnv(modelServer), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_METRICS_PORT: String(metrics),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-clients-data-')),
    ...extra,
  });
  const logs: string[] = [];
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const gw = `http://127.0.0.1:${gateway}`;
  const con = `http://127.0.0.1:${consolePort}`;
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`serve exited ${proc.exitCode}: ${logs.join('').slice(-3000)}`);
    if ((await fetch(`${gw}/readiness`).catch(() => null))?.status === 200) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`serve not ready in 240 s: ${logs.join('').slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    gateway: gw,
    console: con,
    metrics: `http://127.0.0.1:${metrics}`,
    logs,
    exited: () => (proc.exitCode !== null || proc.signalCode !== null ? `exit ${proc.exitCode ?? proc.signalCode}` : null),
    async newKey(name) {
      const session = (await (await fetch(`${con}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
      const res = await fetch(`${con}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
      const { key } = (await res.json()) as { key: string };
      if (!key) throw new Error(`no key: ${res.status}`);
      return key;
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
  };
}

/**
 * Builds and installs clients/python into a fresh directory (pip install --target, offline) and
 * returns it, for PYTHONPATH. Throws with pip's output when the package does not install.
 */
export function installPythonClient(): string {
  if (!existsSync(CLIENT_PYTHON)) throw new Error(`${CLIENT_PYTHON} is missing: scripts/bootstrap.sh makes it (python3 -m venv .venvs/client-python && .venvs/client-python/bin/python -m pip install --require-hashes --no-deps -r clients/python/requirements-test.txt)`);
  const dir = mkdtempSync(join(tmpdir(), 'fc-client-python-'));
  const src = join(dir, 'src');
  cpSync(resolve(REPO_ROOT, 'clients', 'python'), src, { recursive: true, filter: (p) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info|\.pytest_cache)$/.test(p) });
  const site = join(dir, 'site');
  const r = spawnSync(CLIENT_PYTHON, ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--no-deps', '--no-build-isolation', '--no-index', '--target', site, src], { encoding: 'utf8', env: { ...process.env, PIP_NO_INDEX: '1' } });
  if (r.status !== 0) throw new Error(`pip install ./clients/python failed (${r.status}): ${r.stdout}${r.stderr}`);
  return site;
}

/** Runs a command to its end (killed after timeoutMs), with its stdout and stderr as one text. */
export function run(cmd: string, args: string[], opts: { cwd: string; env: Record<string, string>; timeoutMs: number }): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs);
    p.once('error', (err) => {
      clearTimeout(timer);
      res({ code: null, out: `${out}\ncould not run ${cmd}: ${err.message}` });
    });
    p.once('exit', (code) => {
      clearTimeout(timer);
      res({ code, out });
    });
  });
}
