/**
 * PNet in bands of rows (src/model-server/detectors/pnet-bands.ts) gives the whole level's outputs,
 * bit for bit, with both libraries' graphs: on real pyramid levels of a DeepFace image (even and odd
 * heights) and on random levels of odd sizes, with bands as small as one output row. And the band
 * geometry on its own: every output row once, in order, from even input rows within the budget.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { imageOps } from '../src/model-server/adapters.js';
import { MTCNN_RUN_LIMITS, MtcnnDetector, type MtcnnFlavor } from '../src/model-server/detectors/mtcnn.js';
import { BAND_INPUT_PIXELS, pnetBands, pnetOutputRows } from '../src/model-server/detectors/pnet-bands.js';
import { mtcnnAfterPnet } from '../src/native/faces.js';
import { mtcnnPyramid } from './helpers/mtcnn-pyramid.js';
import { SHARED } from '../tools/parity/deepface-parity.js';
import { mtcnnGraphs } from './helpers/mtcnn-graphs.js';

t.test('PNet output rows: conv 3x3, pool 2/2 with ceil, conv 3x3, conv 3x3', async (t) => {
  // Counted layer by layer: 11 -> 9 -> 5 -> 3 -> 1 (the pool pads); 12 -> 10 -> 5 -> 3 -> 1; 13 -> 11 -> 6 -> 4 -> 2.
  const layers = (h: number) => Math.max(0, Math.ceil((h - 2) / 2) - 2 - 2);
  for (const [h, rows] of [[10, 0], [11, 1], [12, 1], [13, 2], [14, 2], [15, 3], [300, 145]] as const) t.equal(pnetOutputRows(h), rows, `${h} rows -> ${rows}`);
  for (let h = 1; h < 400; h++) t.equal(pnetOutputRows(h), layers(h));
});

t.test('bands cover every output row once, in order, from even input rows within the budget', async (t) => {
  t.same(pnetBands(300, 300), [{ inRow: 0, inRows: 300, outRow: 0 }], 'a level within the budget is one band');
  for (const [h, w, budget] of [[4650, 3096, BAND_INPUT_PIXELS], [1001, 999, 40_000], [37, 5000, 1], [2000, 13, 200], [13, 100_000, 50_000]] as const) {
    const bands = pnetBands(h, w, budget);
    let next = 0;
    for (const [i, b] of bands.entries()) {
      const last = i === bands.length - 1;
      t.equal(b.outRow, next, `${h}x${w}: band ${i} starts where the last ended`);
      t.equal(b.inRow, 2 * b.outRow, 'its input starts on the even row its first output row reads');
      const rows = pnetOutputRows(b.inRows);
      if (last) t.equal(b.inRow + b.inRows, h, 'the last band runs to the bottom');
      else t.equal(b.inRows % 2, 0, 'a middle band has an even number of input rows (the pool pads nothing)');
      if (!last && bands.length > 1) t.ok(b.inRows * w <= Math.max(budget, 12 * w), `band ${i}: ${b.inRows} rows within the budget (or the 12 one output row needs)`);
      next += rows;
    }
    t.equal(next, pnetOutputRows(h), `${h}x${w} at ${budget}: ${bands.length} bands, every output row`);
  }
});

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** DeepFace's img1, a seeded generator of values in [-1, 1), and each installed flavour's detector. */
async function setup(t: Tap.Test, seed: number) {
  const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
  const img = await ops.decode(readFileSync(join(SHARED, 'deepface', 'img1.jpg')));
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  const detectors: Array<[MtcnnFlavor, MtcnnDetector]> = [];
  for (const flavor of ['mtcnn', 'fastmtcnn'] as const) {
    const dir = mtcnnGraphs(flavor);
    if (!t.ok(dir, `${flavor}'s graphs are installed (bootstrap converts them)`) || !dir) continue;
    const det = await MtcnnDetector.create(flavor, dir, { intraOpThreads: 0, interOpThreads: 1, provider: 'cpu' });
    t.teardown(() => det.release());
    detectors.push([flavor, det]);
  }
  return { img, random, detectors };
}

t.test('banded PNet equals whole-level PNet, bit for bit', async (t) => {
  const { img, random, detectors } = await setup(t, 7);
  for (const [flavor, det] of detectors) {
    const levels = (await mtcnnPyramid(img, flavor)).slice(0, 4).map((l) => ({ ...l, what: `level ${l.width}x${l.height}` }));
    for (const [h, w] of [[61, 47], [96, 33]] as const) {
      levels.push({ scale: 1, width: w, height: h, tensor: Float32Array.from({ length: 3 * h * w }, random), what: `random ${w}x${h}` });
    }
    t.ok(levels.some((l) => l.height % 2 === 1) && levels.some((l) => l.height % 2 === 0), 'odd and even heights');
    for (const l of levels) {
      const whole = await det.pnetLevel(l.tensor.slice(), l.height, l.width, Infinity);
      for (const rowsPerBand of [1, 7]) {
        const budget = (2 * rowsPerBand + 10) * l.width;
        t.ok(pnetBands(l.height, l.width, budget).length > 1, `${flavor} ${l.what}: banded at ${rowsPerBand} output rows`);
        const banded = await det.pnetLevel(l.tensor.slice(), l.height, l.width, budget);
        for (const out of ['reg', 'prob'] as const) {
          t.same(banded[out].dims, whole[out].dims, `${flavor} ${l.what} ${out}: dims`);
          t.ok(bytes(banded[out].data).equals(bytes(whole[out].data)), `${flavor} ${l.what} ${out}, ${rowsPerBand} rows a band: identical bytes`);
        }
      }
    }
  }
});

t.test('RNet and ONet in batches equal one run on every crop, bit for bit', async (t) => {
  const { img, random, detectors } = await setup(t, 11);
  for (const [flavor, det] of detectors) {
    // RNet on the image's own candidates; ONet on random crops.
    const levels = await mtcnnPyramid(img, flavor);
    const pnet = [];
    for (const l of levels) pnet.push({ scale: l.scale, ...(await det.pnetLevel(l.tensor, l.height, l.width)) });
    const r = await mtcnnAfterPnet(img, flavor, pnet);
    const cases = [
      { net: 'rnet' as const, crops: r.crops, n: r.boxes.length / 5, side: 24 },
      { net: 'onet' as const, crops: Float32Array.from({ length: 45 * 3 * 48 * 48 }, random), n: 45, side: 48 },
    ];
    for (const c of cases) {
      t.ok(c.n > 20, `${flavor} ${c.net}: ${c.n} crops`);
      const whole = await det.cropNet(c.net, c.crops.slice(), c.n, c.side, Infinity);
      for (const batch of [1, 7, 16]) {
        const parts = await det.cropNet(c.net, c.crops.slice(), c.n, c.side, batch);
        for (const [name, w] of Object.entries(whole)) {
          t.equal(parts[name]?.data.length, w.data.length, `${flavor} ${c.net} ${name}: length`);
          t.ok(bytes(parts[name]!.data).equals(bytes(w.data)), `${flavor} ${c.net} ${name}, ${batch} a run: identical bytes`);
        }
      }
    }
  }
});

t.test('docs/security.md and docs/architecture.md state the served run limits', async (t) => {
  t.equal(MTCNN_RUN_LIMITS.bandPixels, BAND_INPUT_PIXELS);
  for (const page of ['security.md', 'architecture.md']) {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', page), 'utf8').replace(/\s+/g, ' ');
    t.match(doc, `PNet in bands of rows of at most ${BAND_INPUT_PIXELS.toLocaleString('en-US')} input pixels`, page);
    t.match(doc, `RNet and ONet on at most ${MTCNN_RUN_LIMITS.cropBatch} crops at a time`, page);
  }
});
