/**
 * Dlib model: our conversion of dlib_face_recognition_resnet_model_v1.dat, run on ONNX Runtime, must
 * give dlib's own descriptors (test/fixtures/dlib-descriptors.json, made by
 * tools/reference/dlib_fixtures.py with dlib's compute_face_descriptor) for the same 150x150 chips.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { CONVERTER_PYTHON, chipsToBatch, dlibEntry, dlibOnnx } from './helpers/dlib.js';
import { OnnxSession } from '../src/model-server/models/onnx-session.js';
import { dlibChipFixture, dlibChipParity, summarize } from '../tools/parity/dlib-chips.js';
import { MARGIN, RESULTS, results } from '../tools/parity/figures.js';

const WEIGHTS_FILE = 'dlib_face_recognition_resnet_model_v1.dat';
const WEIGHTS = join(SHARED_WEIGHTS_DIR, WEIGHTS_FILE);
const PYTHON = CONVERTER_PYTHON;
const CONVERTER = join(REPO_ROOT, 'models', 'converters', 'dlib_to_onnx.py');
const CPU1 = { intraOpThreads: 1, interOpThreads: 1, provider: 'cpu' } as const;

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

function runConverter(input: string, output: string): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    execFile(PYTHON, [CONVERTER, input, output], (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      done({ code, stderr: String(stderr) });
    });
  });
}

// Missing prerequisites are failures, not skips: CI has both, and a silent skip would hide a broken setup.
if (!existsSync(WEIGHTS)) t.fail(`Dlib weights missing at ${WEIGHTS}: CI provides ../shared/weights (or set FACECOMPUTE_WEIGHTS_DIR)`);
// converterPython() falls back to a bare python3 only when neither FACECOMPUTE_PYTHON nor .venv exists.
if (PYTHON === 'python3') t.fail('converter venv missing: run scripts/bootstrap.sh (creates .venv from models/converters/requirements.txt)');

t.test('converted model matches dlib compute_face_descriptor on every fixture chip, as the README states', async (t) => {
  const recorded = results(RESULTS.dlibChips) as { dlib: string; chips: number; faces: number; cosine_min: number; cosine_min_chip: string; norm_ratio_max_deviation: number };
  const fixture = dlibChipFixture();
  const { chips, descriptors, pixels, model } = await dlibChipParity();
  t.teardown(() => model.close());
  t.equal(fixture.dlib_version, recorded.dlib, `the fixture's dlib (${fixture.dlib_version}) is the one the figures name`);
  t.equal(chips.length, recorded.chips, `every chip compared: ${chips.length} (recorded ${recorded.chips})`);
  t.equal(chips.filter((c) => c.kind === 'face').length, recorded.faces, `${recorded.faces} of them real faces`);
  for (const c of chips) {
    t.equal(c.size, '150x150', `${c.id} is 150x150`);
    t.ok(c.pixels_match, `${c.id}: decoded pixels are the ones dlib saw`);
    // Cosine ignores scale; DeepFace's Euclidean thresholds do not.
    t.ok(Math.abs(c.norm_ratio - 1) < 1e-4, `${c.id}: norm ratio ${c.norm_ratio.toFixed(7)}`);
  }
  const s = summarize(chips);
  t.comment(`dlib parity over ${s.chips} chips: min cosine 1 - ${(1 - s.cosine_min).toExponential(2)} (${s.cosine_min_chip}); recorded 1 - ${(1 - recorded.cosine_min).toExponential(2)}`);
  t.ok(Math.abs(s.cosine_min - recorded.cosine_min) <= MARGIN.cosine, `worst cosine ${s.cosine_min} within ${MARGIN.cosine} of the recorded ${recorded.cosine_min}`);
  for (const c of chips) t.ok(c.cosine >= recorded.cosine_min - MARGIN.cosine, `${c.id}: cosine 1 - ${(1 - c.cosine).toExponential(2)} no worse than the README's worst`);

  // A batch must give what each chip gives alone (no cross-sample leakage through padding or pooling).
  for (const i of [0, pixels.length - 1]) {
    const [alone] = await model.embed(chipsToBatch([pixels[i] as Uint8Array]), 1);
    t.ok(cosine(alone as Float32Array, descriptors[i] as Float32Array) > 0.999999, `chip ${i} alone equals its batched result`);
  }

  // Distinct faces must stay distinct: guards against a graph that ignores its input.
  t.ok(cosine(descriptors[0] as Float32Array, descriptors[1] as Float32Array) < 0.99, 'different chips give different descriptors');
});

t.test('converter rejects malformed .dat files with a clear message and writes nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dlib-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const full = readFileSync(WEIGHTS);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['truncated', full.subarray(0, 100_000), /truncated file/],
    ['cut inside the last layer', full.subarray(0, full.length - 7), /truncated file/],
    ['trailing bytes', Buffer.concat([full, Buffer.from([1, 2, 3])]), /trailing byte/],
    ['garbage', Buffer.from('this is not a dlib network, just some text\n'.repeat(20)), /malformed dlib model file/],
    ['empty', Buffer.alloc(0), /truncated file/],
  ];
  for (const [name, bytes, pattern] of cases) {
    const input = join(dir, `${name.replace(/\W+/g, '_')}.dat`);
    const output = join(dir, `${name.replace(/\W+/g, '_')}.onnx`);
    writeFileSync(input, bytes);
    const { code, stderr } = await runConverter(input, output);
    t.equal(code, 2, `${name}: exit status 2`);
    t.match(stderr, /^dlib_to_onnx: malformed dlib model file /, `${name}: says the file is malformed`);
    t.match(stderr, pattern, `${name}: says why (${stderr.trim()})`);
    t.notOk(stderr.includes('Traceback'), `${name}: no Python traceback`);
    t.notOk(existsSync(output), `${name}: no output written`);
  }
  const { code, stderr } = await runConverter(join(dir, 'does-not-exist.dat'), join(dir, 'x.onnx'));
  t.equal(code, 2, 'missing input: exit status 2');
  t.match(stderr, /cannot read/);
  const blocked = join(dir, 'a-file');
  writeFileSync(blocked, '');
  const unwritable = await runConverter(WEIGHTS, join(blocked, 'out.onnx'));
  t.equal(unwritable.code, 1, 'unwritable output: exit status 1');
  t.match(unwritable.stderr, /^dlib_to_onnx: cannot write /);
  t.notOk(unwritable.stderr.includes('Traceback'), 'unwritable output: no traceback');
});

t.test('weights of the wrong size or hash are never converted', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'dlib-sha-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, WEIGHTS_FILE), Buffer.from('not the weights'));
  await t.rejects(dlibOnnx(dir, join(dir, 'cache')), /Dlib weights unusable in .*size mismatch/);
  t.notOk(existsSync(join(dir, 'cache', 'onnx')), 'nothing converted');
});

t.test('converted graph: opset, I/O as the manifest says, dynamic batch, every affine folded', async (t) => {
  const modelPath = await dlibOnnx();
  const entry = dlibEntry();
  t.same(entry.input, { width: 150, height: 150, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' }, 'manifest input contract');
  const script = [
    'import json, sys, collections, onnx',
    'm = onnx.load(sys.argv[1])',
    'dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]',
    'print(json.dumps({"opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),',
    '  "inputs": {i.name: dims(i) for i in m.graph.input}, "outputs": {o.name: dims(o) for o in m.graph.output},',
    '  "ops": collections.Counter(n.op_type for n in m.graph.node)}))',
  ].join('\n');
  const info = await new Promise<{ opset: number; inputs: Record<string, unknown[]>; outputs: Record<string, unknown[]>; ops: Record<string, number> }>(
    (done, fail) => execFile(PYTHON, ['-c', script, modelPath], (err, stdout, stderr) => (err ? fail(new Error(String(stderr))) : done(JSON.parse(String(stdout))))),
  );
  t.ok(info.opset >= 13, `opset ${info.opset}`);
  t.same(info.inputs, { [entry.onnx.input]: ['N', 3, entry.input.height, entry.input.width] });
  t.same(info.outputs, { [entry.onnx.output]: ['N', entry.dims] });
  t.equal(info.ops['Conv'], 29, '29 convolutions');
  // Affine layers would show up as per-channel Mul/Add pairs; only the input scaling Mul and the
  // 14 residual Adds may remain.
  t.equal(info.ops['Mul'], 1, 'one Mul: the input scaling');
  t.equal(info.ops['Add'], 14, 'fourteen Adds: the residual connections');
  t.equal(info.ops['Sub'], 1, 'one Sub: the mean');
});

t.test('OnnxSession validates its arguments and row layout', async (t) => {
  const modelPath = await dlibOnnx();
  const base = { modelPath, inputName: 'input', outputName: 'embedding', sampleShape: [3, 150, 150], settings: CPU1 };
  await t.rejects(OnnxSession.create({ ...base, settings: { ...CPU1, interOpThreads: 0 } }), RangeError);
  await t.rejects(OnnxSession.create({ ...base, settings: { ...CPU1, intraOpThreads: -1 } }), RangeError);
  await t.rejects(OnnxSession.create({ ...base, sampleShape: [3, 0, 150] }), RangeError);
  await t.rejects(OnnxSession.create({ ...base, outputName: 'nope' }), /expected input -> nope/);
  const lenient = await OnnxSession.create({ ...base, inputName: 'data', outputName: 'fc1', lenientNames: true });
  t.same([lenient.inputName, lenient.outputName], ['input', 'embedding'], 'unverified names fall back to the single input and output');
  await lenient.close();
  const s = await OnnxSession.create(base);
  t.equal(s.sampleSize, 3 * 150 * 150);
  await t.rejects(s.run(new Float32Array(10), 1), RangeError, 'wrong batch length');
  await t.rejects(s.run(new Float32Array(0), 0), RangeError, 'empty batch');
  // Rows come back in sample order: a batch of (black, white) equals the two run alone.
  const black = new Float32Array(s.sampleSize);
  const white = new Float32Array(s.sampleSize).fill(255);
  const both = new Float32Array(2 * s.sampleSize);
  both.set(black, 0);
  both.set(white, s.sampleSize);
  const [rb, rw] = await s.run(both, 2);
  const [ab] = await s.run(black, 1);
  const [aw] = await s.run(white, 1);
  t.ok(cosine(rb as Float32Array, ab as Float32Array) > 0.999999 && cosine(rw as Float32Array, aw as Float32Array) > 0.999999, 'row order kept');
  t.ok(cosine(ab as Float32Array, aw as Float32Array) < 0.999, 'black and white differ');
  await s.close();
  await t.rejects(s.run(black, 1), /after close/);
});

t.test('chipsToBatch lays chips out as NCHW RGB planes', async (t) => {
  const chip = new Uint8Array(150 * 150 * 3);
  chip[0] = 1; // R of pixel 0
  chip[4] = 2; // G of pixel 1
  chip[3 * 151 + 2] = 3; // B of pixel (1,1)
  const b = chipsToBatch([new Uint8Array(chip.length), chip]);
  const plane = 150 * 150;
  const base = 3 * plane;
  t.equal(b[base], 1);
  t.equal(b[base + plane + 1], 2);
  t.equal(b[base + 2 * plane + 151], 3);
  t.throws(() => chipsToBatch([new Uint8Array(5)]), RangeError);
});
