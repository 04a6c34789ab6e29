/**
 * `facecompute serve` end to end: one command brings up the gateway, the MCP endpoint, the console
 * and a model-server child; /readiness turns 200 once the child has warmed its models; SIGTERM
 * stops the child too. Run twice: from the sources (so that a stale build cannot hide a regression)
 * and through bin/facecompute.js, which runs the esbuild bundle that `npm run build:ts` writes and
 * the README's commands start (so that a module the bundle breaks is caught).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'tap';
import { REPO_ROOT } from './helpers/shared.js';
import { freePort, modelServerEnv } from './helpers/real-stack.js';

const ENTRIES: Array<{ name: string; argv: string[]; needs?: string }> = [
  { name: 'from the sources', argv: ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'] },
  { name: 'from the bundle (bin/facecompute.js)', argv: [resolve(REPO_ROOT, 'bin/facecompute.js'), 'serve'], needs: resolve(REPO_ROOT, 'dist/bundle/main.js') },
];

for (const entry of ENTRIES) test(`serve ${entry.name} starts every surface, becomes ready, and stops its model server on SIGTERM`, { timeout: 300_000 }, async (t) => {
  if (entry.needs && !existsSync(entry.needs)) {
    t.fail(`${entry.needs} is missing: run \`npm run build:ts\` (scripts/bootstrap.sh does)`);
    return;
  }
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, modelServerEnv(modelServer), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'facecompute-serve-')),
  });
  const logs: string[] = [];
  const proc = spawn(process.execPath, entry.argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });

  const base = `http://127.0.0.1:${gateway}`;
  const deadline = Date.now() + 240_000;
  let ready: Response | null = null;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) t.fail(`serve exited ${proc.exitCode}: ${logs.join('')}`);
    ready = await fetch(`${base}/readiness`).catch(() => null);
    if (ready?.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (ready?.status !== 200) t.comment(logs.join('').slice(-4000));
  t.equal(ready?.status, 200, 'ready before the deadline');

  const health = await fetch(`${base}/health`);
  t.equal(health.status, 200);
  const caps = (await (await fetch(`${base}/capabilities`)).json()) as { models?: unknown };
  t.ok(JSON.stringify(caps).includes('Dlib'), 'capabilities list the warmed model');

  // The MCP endpoint demands its own key; the console serves its pages.
  const mcpRes = await fetch(`http://127.0.0.1:${mcp}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(mcpRes.status, 401, 'MCP without a key is refused');
  const consoleRes = await fetch(`http://127.0.0.1:${consolePort}/`);
  t.equal(consoleRes.status, 200, 'console home page');

  proc.kill('SIGTERM');
  t.equal(await exited, 0, 'serve exits cleanly on SIGTERM');
  // The child's port is free again: it stopped with its parent.
  const child = await fetch(`http://127.0.0.1:${modelServer}/internal/readiness`).catch(() => null);
  t.equal(child, null, 'the model-server child is gone');
  // Node and fastify warnings (deprecated options, say) are for us to fix, not for operators to read.
  t.notMatch(logs.join(''), /Warning|FSTDEP/, 'no warnings on stderr');
});
