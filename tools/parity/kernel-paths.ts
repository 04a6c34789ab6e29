/**
 * The parity figures on another kernel path, cheaply: embeds a few of DeepFace's test images (Dlib,
 * `opencv` and `yunet`) and prints, as JSON, the SIMD kernel our addon dispatched to, each face's box and
 * its cosine to DeepFace's committed embedding. Run it natively and under user-mode emulation of an
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

const IMAGES = ['img1.jpg', 'img2.jpg', 'img5.jpg', 'img11.jpg', 'img40.jpg', 'couple.jpg'];
const DETECTORS = ['opencv', 'yunet'] as const;

type Row = { image: string; detector: string; face: number; box: number[]; cosine: number };
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
  return { kernel, rows };
}

function compare(a: Run, b: Run): void {
  const key = (r: Row) => `${r.image} ${r.detector} #${r.face}`;
  const other = new Map(b.rows.map((r) => [key(r), r]));
  let worst = 0;
  const boxes: string[] = [];
  for (const r of a.rows) {
    const s = other.get(key(r));
    if (!s) { boxes.push(`${key(r)}: missing in the second run`); continue; }
    if (r.box.join() !== s.box.join()) boxes.push(`${key(r)}: box ${r.box} vs ${s.box}`);
    worst = Math.max(worst, Math.abs(r.cosine - s.cosine));
  }
  if (a.rows.length !== b.rows.length) boxes.push(`${a.rows.length} faces vs ${b.rows.length}`);
  console.log(JSON.stringify({ kernels: [a.kernel, b.kernel], faces: a.rows.length, boxes_differing: boxes, largest_cosine_move: worst, margin: MARGIN.cosine, within: worst <= MARGIN.cosine && boxes.length === 0 }, null, 2));
}

const { values, positionals } = parseArgs({ options: { compare: { type: 'boolean' } }, allowPositionals: true });
if (values.compare) compare(JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Run, JSON.parse(readFileSync(positionals[1]!, 'utf8')) as Run);
else console.log(JSON.stringify(await measure()));
