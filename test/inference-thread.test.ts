/**
 * The inference thread (src/model-server/inference/): ONNX Runtime sessions live on a worker thread so
 * that a run never blocks the model server's JS thread. Checks that it gives ONNX Runtime's own
 * answers bit for bit, that the JS thread keeps running during a run, that errors come back as
 * errors and leave the thread serving, that a stopped thread fails calls instead of hanging them,
 * and that an idle thread does not keep a process alive.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-node';
import { InferenceThread, InferenceThreadError, inferenceThread, type Feeds } from '../src/model-server/inference/inference-thread.js';
import { convertYunet } from './helpers/detector-fixtures.js';
import { REPO_ROOT } from './helpers/shared.js';

const OPTIONS = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' as const, executionMode: 'sequential' as const };

// YuNet's strides need sides that are multiples of 32.
function image(width: number, height: number, seed: number): Feeds {
  const data = new Float32Array(3 * width * height);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    data[i] = (s >>> 16) % 256;
  }
  return { input: { type: 'float32', data, dims: [1, 3, height, width] } };
}

t.test('a session on the inference thread gives ONNX Runtime’s outputs bit for bit', async (t) => {
  const model = convertYunet();
  const local = await ort.InferenceSession.create(model, OPTIONS);
  const remote = await inferenceThread().load(model, OPTIONS);
  t.same(remote.inputNames, local.inputNames);
  t.same(remote.outputNames, local.outputNames);
  for (const [w, h, seed] of [[320, 256, 1], [160, 96, 2]] as const) {
    const feeds = image(w, h, seed);
    const before = Float32Array.from(feeds['input']!.data);
    const got = await remote.run(feeds);
    const want = await local.run({ input: new ort.Tensor('float32', feeds['input']!.data, [1, 3, h, w]) });
    t.same(feeds['input']!.data, before, 'the caller keeps its input');
    t.same(Object.keys(got).sort(), Object.keys(want).sort(), `${w}x${h}: the same outputs`);
    for (const name of Object.keys(want)) {
      t.same(got[name]!.dims, want[name]!.dims.map(Number), `${w}x${h} ${name}: dims`);
      t.ok(Buffer.from(got[name]!.data.buffer, got[name]!.data.byteOffset, got[name]!.data.byteLength).equals(Buffer.from((want[name]!.data as Float32Array).buffer, (want[name]!.data as Float32Array).byteOffset, (want[name]!.data as Float32Array).byteLength)), `${w}x${h} ${name}: the same bits`);
    }
  }
  await remote.release();
  await local.release();
});

t.test('the JS thread keeps running while a run is in flight', async (t) => {
  const remote = await inferenceThread().load(convertYunet(), OPTIONS);
  // A large input: the run takes tens of milliseconds or more. On the JS thread, onnxruntime-node's
  // run blocks from its setImmediate to its return, so no 1 ms interval could fire in between
  // more than once.
  const feeds = image(1280, 960, 3);
  let ticks = 0;
  const iv = setInterval(() => ticks++, 1);
  const t0 = performance.now();
  await remote.run(feeds);
  const ms = performance.now() - t0;
  clearInterval(iv);
  t.ok(ticks >= 3, `${ticks} timer ticks during a ${ms.toFixed(0)} ms run`);
  await remote.release();
});

t.test('a failing run is answered with ONNX Runtime’s error and the thread keeps serving', async (t) => {
  const remote = await inferenceThread().load(convertYunet(), OPTIONS);
  const good = image(64, 64, 4);
  await t.rejects(remote.run({ nope: good['input']! }), /input|nope/i, 'an unknown input name');
  await t.rejects(remote.run({ input: { type: 'float32', data: new Float32Array(10), dims: [1, 3, 64, 64] } }), 'a tensor whose data does not fill its dims');
  const out = await remote.run(good);
  t.ok(Object.keys(out).length > 0, 'the next run succeeds');
  await remote.release();
  await t.rejects(remote.run(good), /after release/, 'a released session refuses runs');
  await t.rejects(inferenceThread().load(resolve(REPO_ROOT, 'test-output', 'does-not-exist.onnx'), OPTIONS), 'a missing model file');
  t.equal(inferenceThread().failure, null, 'none of this stopped the thread');
});

t.test('a thread that dies fails pending and later calls with InferenceThreadError', async (t) => {
  // A worker that answers one load, then exits on the next request, as a crashed one would.
  const dying = () =>
    new Worker(
      `const { parentPort } = require('node:worker_threads');
       parentPort.once('message', (m) => {
         parentPort.postMessage({ id: m.id, ok: true, value: { session: 1, inputNames: ['input'], outputNames: ['out'] } });
         parentPort.once('message', () => process.exit(3));
       });`,
      { eval: true },
    );
  const heard: Error[] = [];
  const thread = new InferenceThread(dying, (err) => heard.push(err));
  const remote = await thread.load('unused.onnx', OPTIONS);
  t.equal(thread.failure, null);
  await t.rejects(remote.run(image(64, 64, 5)), { name: 'InferenceThreadError', message: /exited \(code 3\)/ }, 'the pending run fails');
  t.type(thread.failure, InferenceThreadError);
  t.equal(heard.length, 1, 'the failure listener hears of it once');
  await t.rejects(remote.run(image(64, 64, 6)), InferenceThreadError, 'a later run fails at once');
  await t.rejects(thread.load('unused.onnx', OPTIONS), InferenceThreadError, 'so does a later load');
  await remote.release(); // resolves: nothing is left to release
});

t.test('an idle inference thread does not keep a process alive', async (t) => {
  const model = convertYunet();
  const script = `
    import { inferenceThread } from ${JSON.stringify(pathToFileURL(resolve(REPO_ROOT, 'src/model-server/inference/inference-thread.ts')).href)};
    const s = await inferenceThread().load(${JSON.stringify(model)}, { intraOpNumThreads: 1 });
    const data = new Float32Array(3 * 64 * 64);
    const out = await s.run({ input: { type: 'float32', data, dims: [1, 3, 64, 64] } });
    console.log('ran', Object.keys(out).length);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  clearTimeout(timer);
  t.equal(code, 0, `the process exited by itself: ${out.slice(-500)}`);
  t.match(out, /ran 12/, 'after its run');
});
