/**
 * The converted Dlib network against dlib's own `compute_face_descriptor` on the same 150x150 chips
 * (test/fixtures/dlib-descriptors.json and dlib-chips/*.png, made by tools/reference/dlib_fixtures.py):
 * the production recognizer (manifest entry, ONNX conversion, OrtRecognizer, batching off) on every
 * chip, each descriptor's cosine and norm ratio to dlib's.
 *
 *   node --import tsx tools/parity/dlib-chips.ts   →  bench/results/parity-dlib-chips.json
 *
 * test/dlib-parity.test.ts runs the same function in CI and holds it to that file (and the README's
 * sentence, generated from it, to both).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { OrtRecognizer } from '../../src/model-server/models/ort-recognizer.js';
import { decodePng } from '../../test/helpers/png.js';
import { chipsToBatch, dlibEntry, dlibOnnx, DLIB } from '../../test/helpers/dlib.js';
import { REPO } from './deepface-parity.js';

const FIXTURES = join(REPO, 'test', 'fixtures');

export interface DlibChipFixture {
  generator: string;
  dlib_version: string;
  chips: Array<{ id: string; kind: string; png: string; sha256: string; descriptor: number[] }>;
}

export interface ChipResult {
  id: string;
  kind: string;
  /** sha256 of the decoded RGB bytes equals the fixture's: the pixels dlib saw. */
  pixels_match: boolean;
  size: string;
  cosine: number;
  norm_ratio: number;
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number, y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

export function dlibChipFixture(): DlibChipFixture {
  return JSON.parse(readFileSync(join(FIXTURES, 'dlib-descriptors.json'), 'utf8')) as DlibChipFixture;
}

/** Every chip through the production recognizer; `model` is left open for the caller's further checks. */
export async function dlibChipParity(): Promise<{ chips: ChipResult[]; descriptors: Float32Array[]; pixels: Uint8Array[]; model: OrtRecognizer }> {
  const fixture = dlibChipFixture();
  const pixels: Uint8Array[] = [];
  const meta = fixture.chips.map((c) => {
    const png = decodePng(readFileSync(resolve(FIXTURES, c.png)));
    pixels.push(png.rgb);
    return { size: `${png.width}x${png.height}`, pixels_match: createHash('sha256').update(png.rgb).digest('hex') === c.sha256 };
  });
  const entry = dlibEntry();
  const model = await OrtRecognizer.load(await dlibOnnx(), { name: DLIB, dims: entry.dims, input: entry.input, onnx: entry.onnx }, { intraOpThreads: 2, interOpThreads: 1, provider: 'cpu' }, { windowMs: 0, maxBatch: 1 });
  const descriptors = await model.embed(chipsToBatch(pixels), pixels.length);
  const chips = fixture.chips.map((c, i) => {
    const e = descriptors[i] as Float32Array;
    return { id: c.id, kind: c.kind, ...(meta[i] as { size: string; pixels_match: boolean }), cosine: cosine(e, c.descriptor), norm_ratio: norm(e) / norm(c.descriptor) };
  });
  return { chips, descriptors, pixels, model };
}

/** The figures the README states: how many chips, the lowest cosine, the largest norm deviation. */
export function summarize(chips: ChipResult[]) {
  const worst = [...chips].sort((a, b) => a.cosine - b.cosine)[0];
  return {
    chips: chips.length,
    faces: chips.filter((c) => c.kind === 'face').length,
    cosine_min: worst?.cosine ?? NaN,
    cosine_min_chip: worst?.id ?? null,
    norm_ratio_max_deviation: Math.max(...chips.map((c) => Math.abs(c.norm_ratio - 1))),
  };
}

async function main() {
  const fixture = dlibChipFixture();
  const { chips, model } = await dlibChipParity();
  await model.close();
  const report = { what: "the converted Dlib network against dlib's compute_face_descriptor on the same 150x150 chips", dlib: fixture.dlib_version, ...summarize(chips), per_chip: chips };
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/parity-dlib-chips.json'), `${JSON.stringify(report, null, 1)}\n`);
  console.log(`${report.chips} chips (${report.faces} faces): min cosine 1 - ${(1 - report.cosine_min).toExponential(2)} (${report.cosine_min_chip}); norm ratio within ${report.norm_ratio_max_deviation.toExponential(2)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
