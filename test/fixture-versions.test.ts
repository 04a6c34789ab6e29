/**
 * Every reference fixture under test/fixtures records the versions of the libraries that made it
 * (DeepFace, OpenCV, TensorFlow, tf-keras, dlib, numpy, retina-face), and the README names exactly those:
 * - its fixture table is rendered from the fixtures' own records (tools/parity/figures.ts; the block
 *   itself is compared in test/readme-figures.test.ts), and every JSON fixture either records a
 *   version or is listed below as one that depends on none;
 * - the DeepFace outputs the parity figures rest on were made, as the README says, in the bench's
 *   venv: each version they record is the one bench/deepface/requirements.lock pins;
 * - every DeepFace, OpenCV, dlib or TensorFlow version the README or docs/ name in prose is one that a
 *   fixture records or the lock pins, so a stale mention (an older venv's) fails here.
 */
import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO, documents, fixtureRecords, LIBRARIES, type Library } from '../tools/parity/figures.js';
import { isJsonFile } from '../tools/parity/fixture-files.js';

/** JSON fixtures (gzipped or not) that record no library version, and why none applies. */
const VERSIONLESS: Record<string, string> = {
  'test/fixtures/keras-parity/crops/index.json': 'an index of raw pixel crops (the crops are committed bytes; their versions are the Keras fixtures\')',
  'test/fixtures/calibration/lfw-devtrain-distances.json.gz': 'our own pipeline\'s distances (tools/calibration/roc.ts); no reference library took part',
};

/** A lock's pins (the reference venv's by default), under the fixtures' library names. */
function lockPins(lock = 'bench/deepface/requirements.lock'): Partial<Record<Library, string>> {
  const pins = Object.fromEntries(
    readFileSync(join(REPO, lock), 'utf8')
      .split('\n')
      .map((l) => l.trim().match(/^([A-Za-z0-9_.-]+)==(\S+)$/))
      .filter((m): m is RegExpMatchArray => m !== null)
      .map((m) => [m[1]!.toLowerCase().replace(/_/g, '-'), m[2]!]),
  );
  return { DeepFace: pins['deepface'], OpenCV: pins['opencv-python'], TensorFlow: pins['tensorflow-cpu'] ?? pins['tensorflow'], 'tf-keras': pins['tf-keras'], dlib: pins['dlib-bin'], numpy: pins['numpy'] };
}

/** A recorded version and a pin name one release: 4.11.0 and 4.11.0.86 (a wheel's build), 20.0.1 and 20.0.1.post1. */
const sameRelease = (recorded: string, pinned: string) => pinned === recorded || pinned.startsWith(`${recorded}.`);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? walk(join(dir, name)) : [join(dir, name)]));
}

const records = fixtureRecords();
const pins = lockPins();
/** The bench's second baseline (DeepFace on its ONNX engine): docs may name its versions too. */
const baselinePins = lockPins('bench/deepface/requirements-0.0.103.lock');

t.test('every JSON fixture records its versions, or is known to depend on none', async (t) => {
  const all = walk(join(REPO, 'test', 'fixtures')).filter(isJsonFile).map((p) => relative(REPO, p)).sort();
  const recorded = new Set(records.map((r) => r.file));
  for (const file of all) t.ok(recorded.has(file) || file in VERSIONLESS, `${file}: records the versions that made it${file in VERSIONLESS ? ` (none: ${VERSIONLESS[file]})` : ''}`);
  for (const file of Object.keys(VERSIONLESS)) t.ok(all.includes(file) && !recorded.has(file), `${file} is still a fixture without versions`);
  t.ok(records.length >= 15, `${records.length} fixtures with versions`);
  for (const r of records) t.not(r.generator, '?', `${r.file}: its generator is known`);
});

t.test("the DeepFace outputs were made in the bench's venv, as the README says", async (t) => {
  const deepface = records.filter((r) => r.file.startsWith('test/fixtures/deepface/'));
  // distances.json holds DeepFace's distance functions only: its generator stubs the image modules
  // (tools/reference/deepface_distances.py), so no OpenCV took part.
  const withoutOpenCV = new Set(['test/fixtures/deepface/distances.json']);
  t.equal(deepface.length, 8, 'the eight DeepFace output files');
  for (const r of deepface) {
    for (const lib of LIBRARIES) {
      const v = r.versions[lib];
      if (v === undefined) continue;
      const pin = pins[lib];
      t.ok(pin !== undefined && sameRelease(v, pin), `${r.file}: ${lib} ${v} is the lock's ${pin}`);
    }
    if (withoutOpenCV.has(r.file)) t.ok(r.versions.DeepFace && !r.versions.OpenCV, `${r.file}: records DeepFace, and no OpenCV took part`);
    else t.ok(r.versions.DeepFace && r.versions.OpenCV, `${r.file}: records DeepFace and OpenCV`);
  }
});

t.test('every library version the documentation names is one a fixture records or the lock pins', async (t) => {
  const known: Record<string, string[]> = { DeepFace: [], OpenCV: [], dlib: [], TensorFlow: [] };
  for (const r of records) for (const lib of Object.keys(known)) if (r.versions[lib as Library]) known[lib]!.push(r.versions[lib as Library]!);
  for (const lock of [pins, baselinePins]) for (const lib of Object.keys(known)) if (lock[lib as Library]) known[lib]!.push(lock[lib as Library]!);
  // How prose names a version: "DeepFace 0.0.100", "opencv-python 4.11.0.86", "OpenCV 4.11", "dlib 20.0.1",
  // "TensorFlow CPU 2.19.1", "tensorflow-cpu 2.19.1".
  const patterns: Array<[string, RegExp]> = [
    ['DeepFace', /\bDeepFace (\d+\.\d+\.\d+)\b/g],
    ['OpenCV', /\b(?:opencv-python|OpenCV) (\d+\.\d+(?:\.\d+)*)\b/gi],
    ['dlib', /\bdlib(?:-bin)? (\d+\.\d+(?:\.\d+)*)\b/g],
    ['TensorFlow', /\b(?:TensorFlow(?: CPU)?|tensorflow-cpu) (\d+\.\d+(?:\.\d+)*)\b/g],
  ];
  let named = 0;
  for (const doc of documents()) {
    const text = readFileSync(join(REPO, doc), 'utf8');
    for (const [lib, re] of patterns) {
      for (const m of text.matchAll(re)) {
        const v = m[1]!;
        named++;
        const line = text.slice(0, m.index).split('\n').length;
        // "OpenCV 4.11" names a release series (any recorded 4.11.x); "opencv-python 4.9.0.80" a wheel of 4.9.0.
        t.ok(known[lib]!.some((k) => sameRelease(v, k) || sameRelease(k, v) || k.startsWith(`${v}.`)), `${doc}:${line}: ${lib} ${v} is recorded by a fixture or pinned (${[...new Set(known[lib])].join(', ')})`);
      }
    }
  }
  t.ok(named >= 5, `${named} version mentions checked`);
});
