/**
 * Dlib model throughput: embeddings per second at batch 1, 8 and 32 for our ONNX conversion on ONNX
 * Runtime (1 and 2 intra-op threads) against dlib's own compute_face_descriptor on the same chips, in
 * the same run (so the ratio survives a busy machine better than absolute numbers do).
 *
 *   npm run bench:dlib                  # or: node --import tsx bench/dlib/run.ts [--seconds 3]
 *
 * The dlib baseline needs a Python with dlib (DLIB_PYTHON, default /work/venvs/dlib/bin/python; see
 * tools/reference/dlib_fixtures.py); without it a skip line is printed and only our figures are kept.
 * Writes bench/results/dlib.json.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from '../../test/helpers/shared.js';
import { decodePng } from '../../test/helpers/png.js';
import { DLIB, chipsToBatch, dlibEntry, dlibOnnx } from '../../test/helpers/dlib.js';
import { OrtRecognizer } from '../../src/model-server/models/ort-recognizer.js';
import { simdInfo } from '../lib/machine.js';

const BATCHES = [1, 8, 32];
const THREADS = [1, 2];

interface Row {
  batch: number;
  calls: number;
  seconds: number;
  per_second: number;
}

function argValue(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

async function benchOurs(model: OrtRecognizer, chips: Uint8Array[], batch: number, seconds: number): Promise<Row> {
  // Packing is timed too: it is part of what a request pays (the native pipeline does it in Rust).
  const items = Array.from({ length: batch }, (_, i) => chips[i % chips.length] as Uint8Array);
  await model.embed(chipsToBatch(items), batch); // warm-up: arena allocation and kernel selection happen on the first run
  let calls = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    await model.embed(chipsToBatch(items), batch);
    calls++;
    elapsed = (performance.now() - start) / 1000;
  } while (elapsed < seconds || calls < 3);
  return { batch, calls, seconds: elapsed, per_second: (calls * batch) / elapsed };
}

function benchDlib(python: string, weights: string, pngs: string[], seconds: number): Promise<{ dlib_version: string; results: Row[] }> {
  const script = join(REPO_ROOT, 'bench', 'dlib', 'dlib_reference.py');
  return new Promise((done, fail) => {
    execFile(python, [script, weights, String(seconds), BATCHES.join(','), ...pngs], { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) fail(new Error(`dlib baseline failed: ${String(stderr).trim() || err.message}`));
      else done(JSON.parse(String(stdout)));
    });
  });
}

async function main(): Promise<void> {
  const seconds = Number(argValue('--seconds', '3'));
  const weights = join(SHARED_WEIGHTS_DIR, 'dlib_face_recognition_resnet_model_v1.dat');
  const modelPath = await dlibOnnx();
  const entry = dlibEntry();
  const fixtures = join(REPO_ROOT, 'test', 'fixtures');
  const fixture = JSON.parse(readFileSync(join(fixtures, 'dlib-descriptors.json'), 'utf8')) as { chips: Array<{ png: string }> };
  const pngs = fixture.chips.map((c) => resolve(fixtures, c.png));
  const chips = pngs.map((p) => decodePng(readFileSync(p)).rgb);
  const loadBefore = loadavg();

  const dlibPython = process.env['DLIB_PYTHON'] ?? '/work/venvs/dlib/bin/python';
  let baseline: { dlib_version: string; results: Row[] } | null = null;
  if (existsSync(dlibPython)) {
    baseline = await benchDlib(dlibPython, weights, pngs, seconds);
  } else {
    console.log(`SKIP dlib baseline: no Python with dlib at ${dlibPython} (set DLIB_PYTHON)`);
  }

  const ours: Array<Row & { intra_op_threads: number; ratio_vs_dlib: number | null }> = [];
  for (const threads of THREADS) {
    // Batching off (window 0, max 1): every embed() is exactly one session run of `batch` rows.
    const model = await OrtRecognizer.load(
      modelPath,
      { name: DLIB, dims: entry.dims, input: entry.input, onnx: entry.onnx },
      { intraOpThreads: threads, interOpThreads: 1, provider: 'cpu' },
      { windowMs: 0, maxBatch: 1 },
    );
    for (const batch of BATCHES) {
      const row = await benchOurs(model, chips, batch, seconds);
      const base = baseline?.results.find((r) => r.batch === batch);
      ours.push({ ...row, intra_op_threads: threads, ratio_vs_dlib: base ? row.per_second / base.per_second : null });
    }
    await model.close();
  }

  console.log(`Dlib embeddings/s (${chips.length} distinct 150x150 chips cycled, >= ${seconds}s per cell)`);
  console.log('batch | dlib compute_face_descriptor | ORT 1 thread (x dlib) | ORT 2 threads (x dlib)');
  for (const batch of BATCHES) {
    const base = baseline?.results.find((r) => r.batch === batch);
    const cells = THREADS.map((th) => {
      const r = ours.find((o) => o.batch === batch && o.intra_op_threads === th) as (typeof ours)[number];
      return `${r.per_second.toFixed(1)} (${r.ratio_vs_dlib === null ? 'n/a' : `${r.ratio_vs_dlib.toFixed(2)}x`})`;
    });
    console.log(`${String(batch).padStart(5)} | ${(base ? base.per_second.toFixed(1) : 'skipped').padStart(28)} | ${cells[0]?.padStart(21)} | ${cells[1]?.padStart(22)}`);
  }

  const result = {
    bench: 'dlib',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', simd: simdInfo(), loadavg_before: loadBefore, loadavg_after: loadavg() },
    node: process.version,
    onnxruntime_node: (JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', 'onnxruntime-node', 'package.json'), 'utf8')) as { version: string }).version,
    seconds_per_cell: seconds,
    chips: chips.length,
    baseline: baseline ? { name: 'dlib compute_face_descriptor', python: dlibPython, ...baseline } : { skipped: `no Python with dlib at ${dlibPython}` },
    ours: ours.map((r) => ({ name: 'OrtRecognizer (onnxruntime-node)', ...r })),
  };
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const out = join(dir, 'dlib.json');
  writeFileSync(`${out}.tmp`, `${JSON.stringify(result, null, 2)}\n`);
  renameSync(`${out}.tmp`, out);
  console.log(`wrote ${out}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
