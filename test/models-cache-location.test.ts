/**
 * One models cache for every command: `bash scripts/bootstrap.sh serve` fetches into the location
 * `facecompute models where` gives (FACECOMPUTE_MODELS_CACHE, else $XDG_CACHE_HOME/facecompute, else
 * ~/.cache/facecompute) and sets nothing of its own, so that stopping it and running `npm start` (or
 * `facecompute serve`) serves what it fetched: Facenet as the default. The full bootstrap is not run
 * here (it installs packages and needs the registries): the resolution, the script's serve path and
 * the start path are tested.
 */
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { startServe, userEnv } from './helpers/serve-proc.js';

const BIN = resolve(REPO_ROOT, 'bin/facecompute.js');
const where = (env: Record<string, string>) => spawnSync(process.execPath, [BIN, 'models', 'where'], { env: userEnv(env), encoding: 'utf8' });

t.test('`facecompute models where`: the one location, resolved once (src/config)', async (t) => {
  const home = mkdtempSync(join(tmpdir(), 'fc-home-'));
  const plain = userEnv({ HOME: home });
  delete plain['XDG_CACHE_HOME'];
  t.equal(spawnSync(process.execPath, [BIN, 'models', 'where'], { env: plain, encoding: 'utf8' }).stdout.trim(), join(home, '.cache', 'facecompute'), '~/.cache/facecompute');
  t.equal(where({ HOME: home, XDG_CACHE_HOME: join(home, 'xdg') }).stdout.trim(), join(home, 'xdg', 'facecompute'), '$XDG_CACHE_HOME/facecompute');
  t.equal(where({ HOME: home, FACECOMPUTE_MODELS_CACHE: join(home, 'mine') }).stdout.trim(), join(home, 'mine'), 'FACECOMPUTE_MODELS_CACHE first');
});

t.test('bootstrap.sh serve fetches into that location and starts with nothing of its own; npm start is the same command', async (t) => {
  const script = readFileSync(resolve(REPO_ROOT, 'scripts/bootstrap.sh'), 'utf8');
  const models = script.indexOf('# ---- models ');
  const branches = /if \[ "\$MODE" = serve \]; then\n([\s\S]*?)\nelse\n[\s\S]*?\nfi\n/.exec(script.slice(models));
  const serveCase = /\n {2}serve\)\n([\s\S]*?);;/.exec(script);
  if (!t.ok(models > 0 && branches && serveCase, 'the script has a models step with a serve branch, and a serve case') || !branches || !serveCase) return;
  const serveBranch = branches[1] ?? '';
  t.match(serveBranch, /node bin\/facecompute\.js models where/, 'it reports the cache `models where` resolves');
  t.match(serveBranch, /node bin\/facecompute\.js models fetch "\$\{DEFAULT_MODELS\[@\]\}"/, 'it fetches every default into it');
  // Everything the serve mode runs: the install steps, its models branch, its start.
  const servePath = [script.slice(0, models), serveBranch, serveCase[1] ?? ''].join('\n').replace(/^\s*#.*$/gm, '');
  t.notMatch(servePath, /FACECOMPUTE_(MODELS_CACHE|WEIGHTS_DIR)=/, 'the serve path sets neither FACECOMPUTE_MODELS_CACHE nor FACECOMPUTE_WEIGHTS_DIR');
  t.match(serveCase[1], /^\s*log "facecompute serve"\n\s*exec node bin\/facecompute\.js serve\n\s*$/, 'and starts `node bin/facecompute.js serve` as it is');
  const pkg = JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts['start'], 'node bin/facecompute.js serve', 'npm start runs the same command, with no variable of its own');
});

t.test('after a fetch into the default location, `npm start` serves Facenet as the default', { timeout: 300_000 }, async (t) => {
  // What bootstrap.sh serve leaves in ~/.cache/facecompute: the weights and the converted ONNX files
  // (linked here from the tests' caches instead of fetched).
  const home = mkdtempSync(join(tmpdir(), 'fc-home-'));
  const cache = join(home, '.cache', 'facecompute');
  mkdirSync(join(cache, 'weights'), { recursive: true });
  mkdirSync(join(cache, 'onnx'));
  const facenet = join(MODELS_CACHE, 'weights', 'facenet_keras.h5');
  if (!t.ok(existsSync(facenet), `${facenet}: bootstrap fetched Facenet into the tests' cache`)) return;
  symlinkSync(facenet, join(cache, 'weights', 'facenet_keras.h5'));
  for (const f of readdirSync(join(MODELS_CACHE, 'onnx')).filter((f) => f.startsWith('Facenet-'))) symlinkSync(join(MODELS_CACHE, 'onnx', f), join(cache, 'onnx', f));
  for (const f of ['haarcascade_frontalface_default.xml', 'haarcascade_eye.xml']) symlinkSync(join(SHARED_WEIGHTS_DIR, f), join(cache, 'weights', f));
  const env = userEnv({ HOME: home, FACECOMPUTE_ALLOWED_MODELS: 'Facenet' });
  delete env['XDG_CACHE_HOME'];
  t.equal(spawnSync(process.execPath, [BIN, 'models', 'where'], { env, encoding: 'utf8' }).stdout.trim(), cache);

  const s = await startServe('npm', ['start', '--silent'], env, { cwd: REPO_ROOT, spawner: (c, a, o) => spawn(c, a, { ...o, detached: true }) });
  t.teardown(async () => {
    try {
      process.kill(-(s.proc.pid as number), 'SIGTERM');
    } catch {
      // already gone
    }
    await s.exited;
  });
  if (!t.equal(await s.ready(), 200, `npm start became ready: ${s.logs.join('').slice(-2000)}`)) return;
  const caps = (await (await fetch(`${s.gw}/capabilities`)).json()) as { default_model: string; default_detector: string; default_model_reason?: string };
  t.match(caps, { default_model: 'Facenet', default_detector: 'opencv' });
  t.notOk(caps.default_model_reason, 'the configured default itself, not a replacement');
  const readiness = (await (await fetch(`${s.gw}/readiness`)).json()) as { warmed_models: string[]; degraded?: boolean };
  t.ok(readiness.warmed_models.includes('Facenet'), 'Facenet is warm');
  t.notOk(readiness.degraded);

  // The same command with another home has no models there, and says so instead of serving less.
  const other = mkdtempSync(join(tmpdir(), 'fc-home-'));
  const r = spawnSync(process.execPath, [BIN, 'serve'], { env: { ...env, HOME: other }, encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 4, 'refused (exit 4)');
  t.ok(r.stderr.includes(join(other, '.cache', 'facecompute')), 'naming the cache it looked in');
});
