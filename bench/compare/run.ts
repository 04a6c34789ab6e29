/**
 * bench/compare: one query against N targets, for every metric, comparing the addon with a plain
 * TypeScript loop, numpy (when present) and this machine's measured read bandwidth over the same
 * bytes, all in the same run. Then the base64 path (decode + compare) against the Float32Array path.
 * Times are the best of several runs (see timing.ts); numpy's are the best of its own runs.
 *
 *   npm run bench:compare [-- --n 1000,10000,100000 --dims 128,512] [--only many] [--quick]
 *
 * Writes bench/results/compare.json ({n, dims, metric, impl, vectors_per_s, gb_per_s}[]),
 * bench/results/compare-b64.json and bench/results/compare-many.json (many.ts: the GEMM kernel
 * against this core's measured FMA peak, one call against K one-to-many calls, and the JSON of
 * 100,000 results).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpus } from 'node:os';
import { compareOneToMany, decodeVectorsB64, decodeVectorsB64Bytes, METRICS, type Metric } from '../../src/native/compare.js';
import { benchNative } from '../lib/bench-native.js';
import { compareJs } from './js-baseline.js';
import { runNumpy } from './numpy.js';
import { bestSeconds, bestSecondsInterleaved } from './timing.js';
import { benchMany } from './many.js';
import { seededMatrix } from '../../test/helpers/vectors.js';

type Impl = 'addon' | 'js' | 'numpy' | 'read_bandwidth';

interface Row {
  n: number;
  dims: number;
  metric: Metric;
  impl: Impl;
  vectors_per_s: number;
  gb_per_s: number;
}

const RESULTS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'results');

function listArg(name: string, fallback: number[]): number[] {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || !process.argv[i + 1]) return fallback;
  return process.argv[i + 1]!.split(',').map(Number).filter((x) => Number.isInteger(x) && x > 0);
}

function row(n: number, dims: number, metric: Metric, impl: Impl, seconds: number): Row {
  return { n, dims, metric, impl, vectors_per_s: n / seconds, gb_per_s: (n * dims * 4) / seconds / 1e9 };
}

const fmt = (x: number, digits = 2): string => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  if (only !== 'many') await kernels();
  process.stdout.write('\nmany-to-many and large answers:\n');
  const many = await benchMany((line) => process.stdout.write(`  ${line}\n`), process.argv.includes('--quick'));
  // A --quick smoke run never overwrites the committed figures (as bench/run.ts does).
  const dir = process.argv.includes('--quick') ? resolve(RESULTS_DIR, 'quick') : RESULTS_DIR;
  mkdirSync(dir, { recursive: true });
  writeFileSync(resolve(dir, 'compare-many.json'), JSON.stringify(many, null, 2) + '\n');
}

async function kernels(): Promise<void> {
  const sizes = listArg('n', [1_000, 10_000, 100_000]);
  const dimsList = listArg('dims', [128, 512]);
  const configs = dimsList.flatMap((dims) => sizes.map((n) => ({ n, dims })));
  const engine = benchNative.benchCompareEngine(Math.max(...sizes), Math.max(...dimsList));
  process.stdout.write(`bench/compare on ${cpus()[0]?.model ?? 'unknown CPU'} (${cpus().length} cores), node ${process.version}; kernel ${engine.kernel}\n`);

  const rows: Row[] = [];
  const numpy = runNumpy(configs);
  if ('skipped' in numpy) process.stdout.write(`numpy: skipped (${numpy.skipped})\n`);
  else for (const r of numpy) rows.push(row(r.n, r.dims, r.metric as Metric, 'numpy', r.seconds));

  process.stdout.write(
    `\n${'n'.padStart(7)} ${'dims'.padStart(4)} ${'metric'.padEnd(12)} ${'impl'.padEnd(14)} ${'vectors/s'.padStart(14)} ${'GB/s'.padStart(7)} ${'vs js'.padStart(7)} ${'of bw'.padStart(6)} threads\n`,
  );
  const b64Rows: Array<Record<string, number | string>> = [];
  for (const { n, dims } of configs) {
    const targets = seededMatrix(n, dims, n + dims);
    const query = seededMatrix(1, dims, 7);
    const threads = benchNative.benchCompareEngine(n, dims).threads;
    for (const metric of METRICS) {
      // Bandwidth is measured interleaved with the addon so both see the same machine load.
      const [readSeconds, addonSeconds] = await bestSecondsInterleaved([
        () => benchNative.benchReadSum(targets, dims),
        () => compareOneToMany(query, targets, dims, metric),
      ]);
      const bw = row(n, dims, metric, 'read_bandwidth', readSeconds!);
      const addon = row(n, dims, metric, 'addon', addonSeconds!);
      const js = row(n, dims, metric, 'js', await bestSeconds(() => compareJs(query, targets, dims, metric), { minRuns: 3, minSeconds: 0.2 }));
      rows.push(bw, addon, js);
      const np = rows.find((r) => r.impl === 'numpy' && r.n === n && r.dims === dims && r.metric === metric);
      for (const r of [addon, js, np, bw]) {
        if (!r) continue;
        process.stdout.write(
          `${String(n).padStart(7)} ${String(dims).padStart(4)} ${metric.padEnd(12)} ${r.impl.padEnd(14)} ${fmt(r.vectors_per_s, 0).padStart(14)} ${fmt(r.gb_per_s).padStart(7)} ${(fmt(r.vectors_per_s / js.vectors_per_s, 1) + 'x').padStart(7)} ${(fmt((100 * r.gb_per_s) / bw.gb_per_s, 0) + '%').padStart(6)} ${r.impl === 'addon' || r.impl === 'read_bandwidth' ? threads : ''}\n`,
        );
      }
    }
    // The targets_b64 path: decoding is part of the price of sending base64.
    const b64 = Buffer.from(targets.buffer, targets.byteOffset, targets.byteLength).toString('base64');
    // As /compare takes it: the body's bytes decoded off the thread, then compared.
    const b64Bytes = Buffer.from(b64);
    const [floatPath, b64Path, decodeOnly] = (await bestSecondsInterleaved([
      () => compareOneToMany(query, targets, dims, 'cosine'),
      async () => compareOneToMany(query, await decodeVectorsB64Bytes(b64Bytes, dims), dims, 'cosine'),
      () => decodeVectorsB64(b64, dims),
    ])) as [number, number, number];
    b64Rows.push({
      n,
      dims,
      metric: 'cosine',
      float32_seconds: floatPath,
      b64_seconds: b64Path,
      decode_seconds: decodeOnly,
      b64_vectors_per_s: n / b64Path,
      b64_input_gb_per_s: b64.length / b64Path / 1e9,
      b64_over_float32: b64Path / floatPath,
    });
    process.stdout.write(
      `${String(n).padStart(7)} ${String(dims).padStart(4)} cosine       base64 path: ${fmt(n / b64Path, 0)} vectors/s (${fmt(b64.length / b64Path / 1e9)} GB/s of base64), ${fmt(b64Path / floatPath, 1)}x the Float32Array path; decode alone ${fmt(decodeOnly * 1e3, 3)} ms\n`,
    );
  }

  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(resolve(RESULTS_DIR, 'compare.json'), JSON.stringify(rows, null, 2) + '\n');
  writeFileSync(resolve(RESULTS_DIR, 'compare-b64.json'), JSON.stringify(b64Rows, null, 2) + '\n');

  const goal = rows.filter((r) => r.n === 100_000 && r.dims === 512);
  if (goal.length > 0) {
    process.stdout.write('\ngoals at N=100k dims=512 (>= 80% of read bandwidth, >= 5x the JS loop):\n');
    for (const metric of METRICS) {
      const get = (impl: Impl) => goal.find((r) => r.metric === metric && r.impl === impl)!;
      const bwFraction = get('addon').gb_per_s / get('read_bandwidth').gb_per_s;
      const jsRatio = get('addon').vectors_per_s / get('js').vectors_per_s;
      process.stdout.write(`  ${metric.padEnd(12)} ${fmt(100 * bwFraction, 0)}% of bandwidth, ${fmt(jsRatio, 1)}x js\n`);
    }
  }
  process.stdout.write(`\nwrote ${resolve(RESULTS_DIR, 'compare.json')}\n`);
}

await main();
