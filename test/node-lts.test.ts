/**
 * The image's Node, here: `facecompute serve` from the runtime tree (build-app.sh assemble, as the image
 * copies it) under the Node.js LTS the Dockerfile's node image carries, with a real verify of a pair.
 * The rest of the suite runs on this machine's Node 20, so both majors are exercised on every run.
 *
 * The LTS binary comes from the npm registry (tools/node-lts, lock-pinned) and better-sqlite3 is built
 * for its ABI in a copy (scripts/node-lts.sh install, run by bootstrap.sh test, never by this test);
 * without them this test fails, naming the step.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, deepfaceImage } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';

const pinned = JSON.parse(readFileSync(join(REPO_ROOT, 'tools/node-lts/package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
const VERSION = pinned.optionalDependencies[`node-linux-${process.arch}`];
const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');

function sh(args: string[]): { status: number; out: string } {
  const r = spawnSync('bash', args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 16 << 20 });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}`.trim() };
}

t.test('the image and this test run the same Node, an LTS line, and every base image is pinned by digest', async (t) => {
  t.ok(VERSION, `tools/node-lts pins node-linux-${process.arch}`);
  const froms = dockerfile.split('\n').filter((l) => l.startsWith('FROM '));
  const external = froms.filter((l) => !/^FROM (node|build|models|build-cuda) AS /.test(l));
  t.ok(external.length >= 3, `${external.length} external base images`);
  for (const l of external) t.match(l, /^FROM [a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64} AS [\w-]+$/, `pinned by digest: ${l.split(' ')[1]!.split('@')[0]}`);
  const node = froms.find((l) => / AS node$/.test(l));
  t.match(node, new RegExp(`^FROM node:${VERSION!.replace(/\./g, '\\.')}-bookworm-slim@sha256:`), `the image's Node is ${VERSION}, the version this test runs`);
  t.match(froms.at(-1), /^FROM node AS runtime$/, 'the runtime image is that node image');
  // Even majors become LTS; Node 20 reached its end of life on 2026-04-30.
  const major = Number(VERSION!.split('.')[0]);
  t.ok(major % 2 === 0 && major > 20, `Node ${major}: an LTS line newer than 20`);
});

t.test('serve from the runtime tree under the Node LTS verifies a pair', { timeout: 300_000 }, async (t) => {
  const which = sh(['scripts/node-lts.sh', 'node']);
  if (which.status !== 0) {
    t.fail(which.out);
    return;
  }
  const lts = which.out;
  const version = spawnSync(lts, ['-p', 'process.version + " " + process.versions.modules'], { encoding: 'utf8' }).stdout.trim();
  t.equal(version.split(' ')[0], `v${VERSION}`, `the LTS binary is Node ${VERSION}`);
  t.not(version.split(' ')[1], process.versions.modules, `a different ABI from this Node (${process.version}, ABI ${process.versions.modules}): ${version}`);

  const work = mkdtempSync(join(tmpdir(), 'fc-node-lts-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const app = join(work, 'app');
  const started = Date.now();
  const asm = sh(['scripts/node-lts.sh', 'assemble', app]);
  t.equal(asm.status, 0, `assembled for the LTS: ${asm.out.slice(-2000)}`);
  t.comment(`runtime tree assembled in ${Date.now() - started} ms`);

  // The copy's better-sqlite3 is the LTS build: it loads there, and Node 20 refuses it; the checkout's
  // own build is untouched (the rest of the suite loads it under Node 20).
  const sqlite = join(app, 'node_modules', 'better-sqlite3');
  const probe = `const D = require(${JSON.stringify(sqlite)}); process.stdout.write(new D(':memory:').prepare('select sqlite_version() v').get().v)`;
  const underLts = spawnSync(lts, ['-e', probe], { encoding: 'utf8' });
  t.equal(underLts.status, 0, `better-sqlite3 loads under the LTS: ${underLts.stderr.slice(0, 500)}`);
  const under20 = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8' });
  t.match(under20.stderr, /NODE_MODULE_VERSION/, 'and Node 20 refuses that build: the copy holds the rebuilt module');
  const checkout = spawnSync(process.execPath, ['-e', probe.replace(JSON.stringify(sqlite), JSON.stringify(join(REPO_ROOT, 'node_modules', 'better-sqlite3')))], { encoding: 'utf8' });
  t.equal(checkout.status, 0, 'the checkout\'s own better-sqlite3 still loads under Node 20');

  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, modelServerEnv(modelServer, { FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib', FACECOMPUTE_PREWARM: 'Dlib,opencv' }), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: join(work, 'data'),
  });
  const logs: string[] = [];
  const proc = spawn(lts, [join(app, 'bin', 'facecompute.js'), 'serve'], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });

  const base = `http://127.0.0.1:${gateway}`;
  const deadline = Date.now() + 240_000;
  let ready: Response | null = null;
  while (Date.now() < deadline && proc.exitCode === null) {
    ready = await fetch(`${base}/readiness`).catch(() => null);
    if (ready?.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(ready?.status, 200, `ready under Node ${VERSION}`, { logs: logs.join('').slice(-3000) });
  if (ready?.status !== 200) return;

  const session = (await (await fetch(`http://127.0.0.1:${consolePort}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const created = await fetch(`http://127.0.0.1:${consolePort}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'node-lts' }) });
  t.equal(created.status, 201, 'a key from the console (SQLite through the LTS build of better-sqlite3)');
  const { key } = (await created.json()) as { key: string };
  const img = (n: string) => `data:image/jpeg;base64,${readFileSync(deepfaceImage(n)).toString('base64')}`;
  const verify = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: img('img1.jpg'), img2: img('img2.jpg') }) });
  const v = (await verify.json()) as Record<string, unknown>;
  t.equal(verify.status, 200, JSON.stringify(v).slice(0, 300));
  t.match(v, { model: 'Dlib', detector_backend: 'opencv', verified: true }, 'the same person, verified under the LTS');
  const other = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: img('img1.jpg'), img2: img('img3.jpg') }) });
  t.match(await other.json(), { verified: false }, 'and two people are not');

  proc.kill('SIGTERM');
  t.equal(await exited, 0, 'serve exits cleanly on SIGTERM');
  t.notMatch(logs.join(''), /Warning|FSTDEP|DeprecationWarning/, `no warnings under Node ${VERSION}`);
});
