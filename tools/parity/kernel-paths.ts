/**
 * The parity figures on another kernel path, cheaply: embeds a few of DeepFace's test images (Dlib,
 * `opencv` and `yunet`) and detects them with `mtcnn` and `fastmtcnn`, and prints, as JSON, the SIMD
 * kernel our addon dispatched to, each face's box, its cosine to DeepFace's committed embedding and, for
 * the MTCNN detectors, how far its confidence is from DeepFace's. Run it natively and under user-mode emulation of an
 * older CPU (docs/development.md, "Other CPUs"), then compare the two outputs:
 *
 *   node --import tsx tools/parity/kernel-paths.ts > native.json
 *   qemu-x86_64 -cpu Haswell "$(command -v node)" --import tsx tools/parity/kernel-paths.ts > haswell.json
 *   node --import tsx tools/parity/kernel-paths.ts --compare native.json haswell.json
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cosineDistance, createPipeline, ourFaces, REPO, SHARED } from './deepface-parity.js';
import { MARGIN } from './figures.js';
import { createMtcnnPipeline, ourRegions, type RefImage } from './mtcnn-parity.js';
import { mtcnnFixture, readJsonFile } from './fixture-files.js';
import { loadConfig } from '../../src/config/index.js';
import { imageOps } from '../../src/model-server/adapters.js';

const IMAGES = ['img1.jpg', 'img2.jpg', 'img5.jpg', 'img11.jpg', 'img40.jpg', 'couple.jpg'];
const DETECTORS = ['opencv', 'yunet'] as const;

type Row = { image: string; detector: string; face: number; box: number[]; cosine?: number; confidence?: number };
type Run = { kernel: string; rows: Row[] };

async function measure(): Promise<Run> {
  const bench = (await import(join(REPO, 'bench', 'native', 'index.js'))) as { benchCompareEngine?: (r: number, d: number) => { kernel: string } };
  const kernel = bench.benchCompareEngine?.(1000, 128).kernel ?? 'unknown (npm run build:native:bench)';
  const ref = JSON.parse(readFileSync(join(REPO, 'test/fixtures/deepface/represent-dlib.json'), 'utf8')) as { images: Record<string, Record<string, { faces?: Array<{ embedding: number[] }> }>> };
  const { pipeline, close } = await createPipeline('Dlib', 0);
  const rows: Row[] = [];
  try {
    for (const image of IMAGES) {
      for (const detector of DETECTORS) {
        const faces = (await ourFaces(pipeline, readFileSync(join(SHARED, 'deepface', image)), detector)) ?? [];
        const theirs = ref.images[image]?.[detector]?.faces ?? [];
        faces.forEach((f, i) => {
          const a = f.facial_area as unknown as { x: number; y: number; w: number; h: number };
          const best = Math.max(...theirs.map((g) => 1 - cosineDistance(f.embedding, g.embedding)));
          rows.push({ image, detector, face: i, box: [a.x, a.y, a.w, a.h], cosine: best });
        });
      }
    }
  } finally {
    await close();
  }
  // DeepFace's MTCNN detectors: boxes and ONet's confidence, on the same images.
  const mt = await createMtcnnPipeline();
  const ops = imageOps(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent' }));
  try {
    for (const detector of ['mtcnn', 'fastmtcnn']) {
      const ref = readJsonFile<{ images: Record<string, RefImage> }>(mtcnnFixture(detector, 'deepface')).images;
      for (const image of IMAGES) {
        const regions = await ourRegions(mt.detectors.get(detector)!, await ops.decode(readFileSync(join(SHARED, 'deepface', image))));
        regions.forEach((r, i) => rows.push({ image, detector, face: i, box: [r.x, r.y, r.w, r.h], confidence: Math.abs(r.confidence - (ref[image]?.regions?.[i]?.confidence ?? NaN)) }));
      }
    }
  } finally {
    await mt.close();
  }
  return { kernel, rows };
}

function compare(a: Run, b: Run): void {
  const key = (r: Row) => `${r.image} ${r.detector} #${r.face}`;
  const other = new Map(b.rows.map((r) => [key(r), r]));
  let worst = 0;
  let confidence = 0;
  const boxes: string[] = [];
  for (const r of a.rows) {
    const s = other.get(key(r));
    if (!s) { boxes.push(`${key(r)}: missing in the second run`); continue; }
    if (r.box.join() !== s.box.join()) boxes.push(`${key(r)}: box ${r.box} vs ${s.box}`);
    if (r.cosine !== undefined && s.cosine !== undefined) worst = Math.max(worst, Math.abs(r.cosine - s.cosine));
    if (r.confidence !== undefined && s.confidence !== undefined) confidence = Math.max(confidence, Math.abs(r.confidence - s.confidence));
  }
  if (a.rows.length !== b.rows.length) boxes.push(`${a.rows.length} faces vs ${b.rows.length}`);
  console.log(JSON.stringify({ kernels: [a.kernel, b.kernel], faces: a.rows.length, boxes_differing: boxes, largest_cosine_move: worst, margin: MARGIN.cosine, largest_mtcnn_confidence_move: confidence, within: worst <= MARGIN.cosine && boxes.length === 0 }, null, 2));
}

const { values, positionals } = parseArgs({ options: { compare: { type: 'boolean' } }, allowPositionals: true });
if (values.compare) compare(JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Run, JSON.parse(readFileSync(positionals[1]!, 'utf8')) as Run);
else console.log(JSON.stringify(await measure()));
