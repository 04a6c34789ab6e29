/**
 * One process's memory and time for MTCNN detection of one large image: the bench's `detectors`
 * suite runs it once with the served run limits (PNet in bands, RNet and ONet in batches) and once
 * with them lifted (every level and every crop in one run, as before the limits), each in a fresh
 * process, so that the peak resident memory (VmHWM) is that detection's alone.
 *
 *   node --import tsx bench/detectors/mtcnn-memory.ts --detector mtcnn|fastmtcnn --limits served|whole [--pixels N] [--runs N]
 *
 * The image is DeepFace's img40.jpg (14 MP) scaled by nearest neighbour to about N pixels (default
 * 20,000,000; half of FACECOMPUTE_MAX_IMAGE_PIXELS, so that the lifted baseline fits a 24 GiB machine),
 * on DeepFace's align border as the pipeline detects it (twice the width and height: 80 MP at the
 * default). Prints one JSON line: seconds per run, peak and final RSS in MiB, faces.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config/index.js';
import { imageOps } from '../../src/model-server/adapters.js';
import { MTCNN_RUN_LIMITS, MtcnnDetector } from '../../src/model-server/detectors/mtcnn.js';
import type { NativeImage } from '../../src/native/types.js';
import { mtcnnGraphs } from '../../test/helpers/mtcnn-graphs.js';
import { DEEPFACE_DATA } from '../lib/paths.js';

/** Nearest-neighbour scale of an RGB image to about `pixels` pixels. */
function scaleTo(img: NativeImage, pixels: number): NativeImage {
  const f = Math.sqrt(pixels / (img.width * img.height));
  const width = Math.round(img.width * f);
  const height = Math.round(img.height * f);
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(img.height - 1, Math.floor(y / f));
    for (let x = 0; x < width; x++) {
      const s = (sy * img.width + Math.min(img.width - 1, Math.floor(x / f))) * 3;
      const d = (y * width + x) * 3;
      data[d] = img.data[s]!;
      data[d + 1] = img.data[s + 1]!;
      data[d + 2] = img.data[s + 2]!;
    }
  }
  return { width, height, channels: 3, data };
}

function statusMib(field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const { values } = parseArgs({ options: { detector: { type: 'string', default: 'mtcnn' }, limits: { type: 'string', default: 'served' }, pixels: { type: 'string', default: '20000000' }, runs: { type: 'string', default: '1' } } });
const flavor = values.detector as 'mtcnn' | 'fastmtcnn';
const dir = mtcnnGraphs(flavor);
if (!dir) throw new Error(`${flavor}'s graphs are not installed (facecompute models fetch ${flavor})`);
const limits = values.limits === 'whole' ? { bandPixels: Infinity, cropBatch: Infinity } : MTCNN_RUN_LIMITS;
const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
// On DeepFace's align border, as the pipeline detects: half the width and height on each side.
const { image: img } = await ops.border(scaleTo(await ops.decode(readFileSync(join(DEEPFACE_DATA, 'img40.jpg'))), Number(values.pixels)));
const det = await MtcnnDetector.create(flavor, dir, { intraOpThreads: 0, interOpThreads: 1, provider: 'cpu' }, limits);
const before = statusMib('VmRSS');
const seconds: number[] = [];
let faces = 0;
for (let r = 0; r < Number(values.runs); r++) {
  const t0 = performance.now();
  faces = (await det.detect(img)).length;
  seconds.push((performance.now() - t0) / 1000);
}
await det.release();
process.stdout.write(`${JSON.stringify({ detector: flavor, limits: values.limits, width: img.width, height: img.height, seconds, rss_before_mib: before, peak_rss_mib: statusMib('VmHWM'), rss_after_mib: statusMib('VmRSS'), faces })}\n`);
