/**
 * Decode, EXIF orientation and letterbox throughput of the native image core against sharp (libvips)
 * and @napi-rs/image, on DeepFace's test images and the EXIF-rotated robustness set.
 *
 *   npm run bench:decode            # prints a table, writes bench/results/decode.json
 *   BENCH_PASSES=5 npm run bench:decode
 *
 * Every library gets the same bytes, the same number of calls in flight (the machine's parallelism)
 * and a warm-up pass; the figure kept is the median of the timed passes. Ratios are ours divided by
 * the fastest other library in the same run (> 1 means faster).
 */
import { readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import os from 'node:os';
import sharp from 'sharp';
import { Transformer, FastResizeFilter, ResizeFit } from '@napi-rs/image';
import { decodeImage, probeImage } from '../../src/native/image.js';
import { benchNative } from '../lib/bench-native.js';
import type { NativeImage } from '../../src/native/types.js';
import { DEEPFACE_DIR, ROBUSTNESS_DIR, REPO_ROOT } from '../../test/helpers/shared.js';
import { simdInfo } from '../lib/machine.js';

const PASSES = Number(process.env['BENCH_PASSES'] ?? 3);
const CONCURRENCY = os.availableParallelism();
const TARGET = 160; // Facenet's input: the letterbox every face goes through
const LIMITS = { maxBytes: 64 << 20, maxPixels: 100_000_000, order: 'bgr' as const };

interface Item {
  name: string;
  bytes: Buffer;
  megapixels: number;
}

function loadSet(dir: string): Item[] {
  const items: Item[] = [];
  for (const name of readdirSync(dir).sort()) {
    const bytes = readFileSync(resolve(dir, name));
    try {
      const p = probeImage(bytes);
      items.push({ name, bytes, megapixels: (p.width * p.height) / 1e6 });
    } catch {
      // not an image (csv, licence, invalid.jpg)
    }
  }
  return items;
}

async function pool<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
}

async function time<T>(items: T[], fn: (item: T) => Promise<unknown>): Promise<number> {
  await pool(items, fn); // warm-up
  const runs: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    const t0 = process.hrtime.bigint();
    await pool(items, fn);
    runs.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)]!;
}

interface Row {
  task: string;
  set: string;
  library: string;
  seconds: number;
  imagesPerSecond: number;
  megapixelsPerSecond: number;
  ratioOursVsFastestOther?: number;
}

const rows: Row[] = [];

async function measure(task: string, set: string, items: Item[], libs: Record<string, (item: Item) => Promise<unknown>>): Promise<void> {
  const mp = items.reduce((s, i) => s + i.megapixels, 0);
  const found: Row[] = [];
  for (const [library, fn] of Object.entries(libs)) {
    const seconds = await time(items, fn);
    found.push({ task, set, library, seconds, imagesPerSecond: items.length / seconds, megapixelsPerSecond: mp / seconds });
  }
  const ours = found.find((r) => r.library === 'facecompute')!;
  const others = found.filter((r) => r !== ours);
  const fastest = Math.max(...others.map((r) => r.imagesPerSecond));
  ours.ratioOursVsFastestOther = ours.imagesPerSecond / fastest;
  for (const r of found) {
    const ratio = r === ours ? `  ratio ${ours.ratioOursVsFastestOther.toFixed(2)}x vs fastest other` : '';
    console.log(`${task.padEnd(18)} ${set.padEnd(13)} ${r.library.padEnd(15)} ${r.imagesPerSecond.toFixed(1).padStart(8)} img/s ${r.megapixelsPerSecond.toFixed(1).padStart(8)} MP/s${ratio}`);
  }
  rows.push(...found);
}

async function main(): Promise<void> {
  const deepface = loadSet(DEEPFACE_DIR);
  const exif = loadSet(resolve(ROBUSTNESS_DIR, 'exif_rotated'));
  console.log(`deepface: ${deepface.length} images, exif_rotated: ${exif.length} images; ${CONCURRENCY} calls in flight, median of ${PASSES} passes`);

  const decoders = {
    facecompute: (i: Item) => decodeImage(i.bytes, LIMITS),
    sharp: (i: Item) => sharp(i.bytes).autoOrient().removeAlpha().raw().toBuffer(),
    // @napi-rs/image refuses an invalid Orientation tag (0); it then decodes without rotating.
    '@napi-rs/image': (i: Item) => new Transformer(i.bytes).rotate().rawPixels().catch(() => new Transformer(i.bytes).rawPixels()),
  };
  await measure('decode+orient', 'deepface', deepface, decoders);
  await measure('decode+orient', 'exif_rotated', exif, decoders);

  // Resize from already-decoded pixels: each library gets its own decoded form.
  const decoded = new Map<string, NativeImage>();
  const rgba = new Map<string, { data: Buffer; width: number; height: number }>();
  for (const i of deepface) {
    const img = await decodeImage(i.bytes, LIMITS);
    decoded.set(i.name, img);
    const px = Buffer.alloc(img.width * img.height * 4, 255);
    for (let p = 0, q = 0; p < img.data.length; p += 3, q += 4) {
      px[q] = img.data[p + 2]!;
      px[q + 1] = img.data[p + 1]!;
      px[q + 2] = img.data[p]!;
    }
    rgba.set(i.name, { data: px, width: img.width, height: img.height });
  }
  await measure('letterbox 160', 'deepface', deepface, {
    facecompute: (i: Item) => benchNative.benchLetterbox(decoded.get(i.name)!, TARGET, TARGET),
    sharp: (i: Item) => {
      const img = decoded.get(i.name)!;
      return sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } })
        .resize(TARGET, TARGET, { fit: 'contain', kernel: 'linear', background: { r: 0, g: 0, b: 0 } })
        .raw()
        .toBuffer();
    },
    '@napi-rs/image': (i: Item) => {
      const img = rgba.get(i.name)!;
      return Transformer.fromRgbaPixels(img.data, img.width, img.height)
        .fastResize({ width: TARGET, height: TARGET, filter: FastResizeFilter.Bilinear, fit: ResizeFit.Inside })
        .rawPixels();
    },
  });
  await measure('decode+letterbox', 'deepface', deepface, {
    facecompute: async (i: Item) => benchNative.benchLetterbox(await decodeImage(i.bytes, LIMITS), TARGET, TARGET),
    sharp: (i: Item) =>
      sharp(i.bytes)
        .autoOrient()
        .removeAlpha()
        .resize(TARGET, TARGET, { fit: 'contain', kernel: 'linear', background: { r: 0, g: 0, b: 0 } })
        .raw()
        .toBuffer(),
    '@napi-rs/image': (i: Item) =>
      new Transformer(i.bytes)
        .fastResize({ width: TARGET, height: TARGET, filter: FastResizeFilter.Bilinear, fit: ResizeFit.Inside })
        .rawPixels(),
  });

  const out = resolve(REPO_ROOT, 'bench/results');
  mkdirSync(out, { recursive: true });
  const report = {
    benchmark: 'decode',
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    simd: simdInfo(),
    concurrency: CONCURRENCY,
    passes: PASSES,
    sets: { deepface: deepface.length, exif_rotated: exif.length },
    results: rows,
  };
  writeFileSync(resolve(out, 'decode.json'), JSON.stringify(report, null, 2) + '\n');
  console.log(`wrote ${resolve(out, 'decode.json')}`);
}

await main();
