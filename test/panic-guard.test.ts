/**
 * README (Architecture): "no Rust panic crosses into Node (crates/facecompute-node/src/guard.rs)".
 *
 * The binding has no export that panics, so the boundary's panic arm cannot be reached through it.
 * crates/panic-probe is a test-only N-API module compiled from the binding's own guard.rs and
 * task.rs, with the workspace's release profile, around closures that panic on purpose; it is never
 * shipped or loaded by the service. Building it reuses what `npm run build:native` compiled
 * (the binding's napi and core versions and features), so it costs this test about 10 s once.
 *
 * Checked: a panic on the JS thread and on the libuv pool (where every heavy export runs) comes back
 * as a rejected call whose error maps to `500 internal_error` (src/errors/native-error.ts), and the
 * process goes on: the pool still runs tasks, and the real addon still decodes an image. Also, every
 * `Task::compute` of the binding runs its work under `guard::catch_core` (the only way work reaches the pool):
 * there is one, task.rs's generic `Job`.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fromNative } from '../src/errors/index.js';
import { decodeImage } from '../src/native/image.js';
import { REPO_ROOT, TEST_OUTPUT_DIR } from './helpers/shared.js';
import { makePng } from './helpers/images.js';

interface Probe {
  panicSync(message: string): number;
  panicAsync(message: string): Promise<number>;
  answerAsync(value: number): Promise<number>;
}

function buildProbe(): Probe {
  // --offline --locked: everything it needs is in Cargo.lock and already fetched by the binding's build.
  execFileSync('cargo', ['build', '--release', '--offline', '--locked', '-p', 'facecompute-panic-probe'], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  const dir = join(TEST_OUTPUT_DIR, `panic-probe-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'panic-probe.node');
  copyFileSync(join(REPO_ROOT, 'target', 'release', 'libfacecompute_panic_probe.so'), file);
  return createRequire(import.meta.url)(file) as Probe;
}

const probe = buildProbe();

t.test('a panic on the JS thread is an internal_error, not an abort', async (t) => {
  let caught: unknown = null;
  try {
    probe.panicSync('sync probe');
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof Error, 'the call throws an Error');
  t.equal((caught as Error & { code?: unknown }).code, 'internal_error', 'the stable code is the error\'s code');
  t.equal((caught as Error).message, 'native core panicked', "the guard's message, not the panic's");
  const e = fromNative(caught);
  t.equal(e.code, 'internal_error');
  t.equal(e.status, 500);
  t.notMatch(e.detail, /sync probe/, "the panic's own text never reaches the caller");
});

t.test('panics on the libuv pool are rejected promises, and the pool and the addon go on', async (t) => {
  const n = 64;
  const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => (i % 2 ? probe.panicAsync(`async probe ${i}`) : probe.answerAsync(i))));
  const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
  t.equal(rejected.length, n / 2, 'every panicking task rejects');
  t.ok(rejected.every((r) => fromNative(r.reason).code === 'internal_error' && (r.reason as Error & { code?: unknown }).code === 'internal_error' && (r.reason as Error).message === 'native core panicked'), 'each as internal_error');
  t.same(
    settled.filter((s): s is PromiseFulfilledResult<number> => s.status === 'fulfilled').map((s) => s.value),
    Array.from({ length: n / 2 }, (_, i) => 2 * i),
    'the tasks beside them answer',
  );
  t.equal(await probe.answerAsync(7), 7, 'the pool runs tasks after the panics');
  const img = await decodeImage(makePng(8, 6, 3), { maxBytes: 1 << 20, maxPixels: 1 << 20, order: 'bgr' });
  t.same([img.width, img.height], [8, 6], 'the real addon still decodes in this process');
});

t.test("every Task::compute of the binding runs its work under guard::catch_core", async (t) => {
  const dir = join(REPO_ROOT, 'crates', 'facecompute-node', 'src');
  let computes = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.rs'))) {
    const src = readFileSync(join(dir, file), 'utf8');
    for (const m of src.matchAll(/fn compute\(&mut self\)[^{]*\{/g)) {
      // The body, by brace depth (the binding's sources have no braces inside strings here).
      let depth = 1;
      let i = (m.index ?? 0) + m[0].length;
      const start = i;
      for (; i < src.length && depth > 0; i++) depth += src[i] === '{' ? 1 : src[i] === '}' ? -1 : 0;
      computes++;
      t.match(src.slice(start, i), /guard::catch_core\(/, `${file}: compute() at offset ${m.index} runs under guard::catch_core`);
    }
  }
  t.equal(computes, 1, "the binding's one compute() body (task.rs's Job: the one task idiom)");
});
