/**
 * A listener that cannot bind stops the command: it logs which one and why, exits with
 * EXIT_LISTEN_FAILED (3), and leaves nothing behind (serve's model-server child is gone too). Checked
 * for `serve` (each of its listeners, the metrics listener and the child's) and for every
 * single-surface command, with a taken port and with an address this host does not have.
 * Run from the sources, so a stale build cannot hide a regression.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';
import { EXIT_LISTEN_FAILED } from '../src/http/listen.js';

const EXIT_BOUND_MS = 120_000;

async function occupy(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, server };
}

interface Outcome {
  code: number | null;
  output: string;
}

async function runCommand(command: string, env: Record<string, string>): Promise<Outcome> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) clean[k] = v;
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), command], {
    env: { ...clean, FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-listen-')), FACECOMPUTE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: REPO_ROOT,
  });
  let output = '';
  proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((r) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      r(null);
    }, EXIT_BOUND_MS);
    proc.once('exit', (c) => {
      clearTimeout(timer);
      r(c);
    });
  });
  return { code, output };
}

async function ports(): Promise<Record<string, string>> {
  return {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(await freePort()),
    FACECOMPUTE_MCP_PORT: String(await freePort()),
    FACECOMPUTE_CONSOLE_PORT: String(await freePort()),
  };
}

function failedToListen(t: Test, o: Outcome, surface: string, why = 'EADDRINUSE'): void {
  t.equal(o.code, EXIT_LISTEN_FAILED, `exits ${EXIT_LISTEN_FAILED}, not left running (exit ${o.code}): ${o.output.slice(-600)}`);
  t.match(o.output, new RegExp(`the ${surface} cannot listen on [^ ]+: .*\\(${why}\\)`), 'says which listener and why');
  t.match(o.output, /"level":60/, 'a fatal line in the JSON log');
}


const single: Array<{ command: string; variable: string; surface: string; env?: Record<string, string> }> = [
  { command: 'gateway', variable: 'FACECOMPUTE_GATEWAY_PORT', surface: 'gateway', env: { FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1' } },
  { command: 'gateway', variable: 'FACECOMPUTE_METRICS_PORT', surface: 'metrics listener', env: { FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1' } },
  { command: 'mcp', variable: 'FACECOMPUTE_MCP_PORT', surface: 'MCP endpoint', env: { FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1' } },
  { command: 'console', variable: 'FACECOMPUTE_CONSOLE_PORT', surface: 'console' },
];

for (const c of single) {
  t.test(`${c.command}: its ${c.surface} port is taken`, async (t) => {
    const taken = await occupy();
    t.teardown(() => taken.server.close());
    const o = await runCommand(c.command, { ...(await ports()), ...c.env, [c.variable]: String(taken.port) });
    failedToListen(t, o, c.surface);
  });
}

t.test('console: an address this host does not have (EADDRNOTAVAIL)', async (t) => {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never a local address.
  const o = await runCommand('console', { ...(await ports()), FACECOMPUTE_HOST: '192.0.2.1' });
  failedToListen(t, o, 'console', 'EADDRNOTAVAIL');
});

t.test('model-server: its port is taken', async (t) => {
  const taken = await occupy();
  t.teardown(() => taken.server.close());
  const o = await runCommand('model-server', modelServerEnv(taken.port));
  failedToListen(t, o, 'model server');
});

for (const variable of ['FACECOMPUTE_CONSOLE_PORT', 'FACECOMPUTE_GATEWAY_PORT', 'FACECOMPUTE_MCP_PORT', 'FACECOMPUTE_METRICS_PORT']) {
  t.test(`serve: ${variable} is taken; the model-server child stops too`, async (t) => {
    const taken = await occupy();
    t.teardown(() => taken.server.close());
    const child = await freePort();
    const o = await runCommand('serve', { ...modelServerEnv(child), ...(await ports()), [variable]: String(taken.port) });
    const surface = { FACECOMPUTE_CONSOLE_PORT: 'console', FACECOMPUTE_GATEWAY_PORT: 'gateway', FACECOMPUTE_MCP_PORT: 'MCP endpoint', FACECOMPUTE_METRICS_PORT: 'metrics listener' }[variable]!;
    failedToListen(t, o, surface);
    const gone = await fetch(`http://127.0.0.1:${child}/internal/readiness`).catch(() => null);
    t.equal(gone, null, 'no model server left behind');
  });
}

t.test("serve: the model-server child's port is taken", async (t) => {
  const taken = await occupy();
  t.teardown(() => taken.server.close());
  const o = await runCommand('serve', { ...modelServerEnv(taken.port), ...(await ports()) });
  failedToListen(t, o, 'model server');
  t.match(o.output, /fatal status; not restarting/, 'not restarted in a loop');
});
