/**
 * `facecompute serve` end to end: one command brings up the gateway, the MCP endpoint, the console
 * and a model-server child; /readiness turns 200 once the child has warmed its models; SIGTERM
 * stops the child too. Run twice: from the sources (so that a stale build cannot hide a regression)
 * and through bin/facecompute.js, which runs the esbuild bundle that `npm run build:ts` writes and
 * the README's commands start (so that a module the bundle breaks is caught).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'tap';
import { REPO_ROOT, deepfaceImage } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';

// The bundle runs as `bash scripts/bootstrap.sh serve` runs it: every model the embedded defaults allow,
// so Facenet (fetched by bootstrap) is the default. The sources run keeps the Dlib-only configuration.
const ENTRIES: Array<{ name: string; argv: string[]; needs?: string; defaults?: boolean }> = [
  { name: 'from the sources', argv: ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'] },
  { name: 'from the bundle (bin/facecompute.js)', argv: [resolve(REPO_ROOT, 'bin/facecompute.js'), 'serve'], needs: resolve(REPO_ROOT, 'dist/bundle/main.js'), defaults: true },
];

for (const entry of ENTRIES) test(`serve ${entry.name} starts every surface, becomes ready, and stops its model server on SIGTERM`, { timeout: 300_000 }, async (t) => {
  if (entry.needs && !existsSync(entry.needs)) {
    t.fail(`${entry.needs} is missing: run \`npm run build:ts\` (scripts/bootstrap.sh does)`);
    return;
  }
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  const ms = modelServerEnv(modelServer);
  if (entry.defaults) {
    delete ms['FACECOMPUTE_ALLOWED_MODELS'];
    delete ms['FACECOMPUTE_DEFAULT_MODEL'];
  }
  Object.assign(env, ms, {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'facecompute-serve-')),
    // The sources run with the internal token set: the child then refuses /internal/ requests
    // without it, so this run is ready and computes only if serve's gateway, MCP endpoint and
    // console all work with a token-protected child.
    ...(entry.defaults ? {} : { FACECOMPUTE_INTERNAL_TOKEN: 'serve-test-internal-token-0123456789abcdef' }),
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
    // One failure, not one per poll: serve that exited will not become ready (a child that could not
    // listen once made this loop fail 4,442 times over its whole deadline).
    if (proc.exitCode !== null) {
      t.fail(`serve exited ${proc.exitCode}: ${logs.join('').slice(-4000)}`);
      break;
    }
    ready = await fetch(`${base}/readiness`).catch(() => null);
    if (ready?.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (ready?.status !== 200) t.comment(logs.join('').slice(-4000));
  t.equal(ready?.status, 200, 'ready before the deadline');

  const health = await fetch(`${base}/health`);
  t.equal(health.status, 200);
  const caps = (await (await fetch(`${base}/capabilities`)).json()) as Record<string, unknown>;
  t.ok(JSON.stringify(caps).includes('Dlib'), 'capabilities list the warmed model');
  if (entry.defaults) {
    // Issue 14: a fresh machine serves the contract's default model.
    t.equal(caps['default_model'], 'Facenet', `Facenet is the default (${String(caps['default_model_reason'] ?? '')}; scripts/bootstrap.sh fetches it)`);
    t.notOk('default_model_reason' in caps, 'no default_model_reason');
    const readiness = (await (await fetch(`${base}/readiness`)).json()) as { warmed_models: string[] };
    t.ok(readiness.warmed_models.includes('Facenet'), `warmed: ${readiness.warmed_models.join(', ')}`);
    // /verify with no model_name answers with Facenet, through an agent's anonymous key.
    const session = (await (await fetch(`http://127.0.0.1:${consolePort}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
    const keyRes = await fetch(`http://127.0.0.1:${consolePort}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'serve-test' }) });
    const { key } = (await keyRes.json()) as { key: string };
    const img = (n: string) => `data:image/jpeg;base64,${readFileSync(deepfaceImage(n)).toString('base64')}`;
    const verify = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: img('img1.jpg'), img2: img('img2.jpg') }) });
    const v = (await verify.json()) as Record<string, unknown>;
    t.equal(verify.status, 200, JSON.stringify(v).slice(0, 300));
    t.match(v, { model: 'Facenet', detector_backend: 'opencv', similarity_metric: 'cosine', threshold: 0.4, verified: true }, 'the same person, decided by Facenet');
  }

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
