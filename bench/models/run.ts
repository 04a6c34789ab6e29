/**
 * Embedding latency and throughput of the converted recognition models with onnxruntime-node (issue 4 §4).
 *
 *   npm run bench:models [-- --models facenet128,openface --batches 1,8,32 --threads 1,2 --seconds 3]
 *
 * Uses the random-weight ONNX models built from the committed layer layouts (real graphs; speed does not
 * depend on weight values). Prints a table with ratios and writes bench/results/models.json.
 *
 * Baseline, in the same run: DeepFace's own Keras models with the same weights on TensorFlow
 * (bench/models/keras_baseline.py) when KERAS_PYTHON (default /work/venvs/keras/bin/python) exists; pass
 * --no-keras to skip it. CI has no TensorFlow, so there it prints a skip line.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import { buildRandomOnnx, type KerasArch } from '../../test/helpers/keras-models.js';
import { REPO_ROOT } from '../../test/helpers/shared.js';
import { simdInfo } from '../lib/machine.js';

const SIZE: Record<string, number> = { facenet128: 160, facenet512: 160, openface: 96 };

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const models = arg('models', 'facenet128,facenet512,openface').split(',') as KerasArch[];
const batches = arg('batches', '1,8,32').split(',').map(Number);
const threads = arg('threads', '1,2').split(',').map(Number);
const seconds = Number(arg('seconds', '3'));
const KERAS_PYTHON = process.env['KERAS_PYTHON'] ?? '/work/venvs/keras/bin/python';
const withKeras = !process.argv.includes('--no-keras') && existsSync(KERAS_PYTHON);

interface KerasRow { model: string; threads: number; batch: number; runs: number; median_ms: number; faces_per_s: number }

async function kerasBaseline(model: KerasArch, h5: string, t: number): Promise<KerasRow[]> {
  const { stdout } = await promisify(execFile)(
    KERAS_PYTHON,
    [resolve(REPO_ROOT, 'bench', 'models', 'keras_baseline.py'), '--arch', model, '--h5', h5, '--threads', String(t),
      '--batches', batches.join(','), '--seconds', String(seconds)],
    { cwd: REPO_ROOT, maxBuffer: 16 << 20 },
  );
  const line = stdout.trim().split('\n').pop()!;
  const r = JSON.parse(line) as { rows: Omit<KerasRow, 'model' | 'threads'>[] };
  return r.rows.map((x) => ({ model, threads: t, ...x }));
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

interface Row {
  model: string;
  threads: number;
  batch: number;
  runs: number;
  median_ms: number;
  p90_ms: number;
  per_face_ms: number;
  faces_per_s: number;
  /** Process CPU time (all threads) per face: less sensitive than wall time to other load on the host. */
  cpu_ms_per_face: number;
}

async function measure(session: ort.InferenceSession, S: number, batch: number): Promise<Omit<Row, 'model' | 'threads'>> {
  const x = new Float32Array(batch * S * S * 3);
  for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761) >>> 24) / 255; // deterministic, face-like range
  const feed = { input: new ort.Tensor('float32', x, [batch, S, S, 3]) };
  for (let i = 0; i < 2; i++) await session.run(feed); // warm-up: allocations and kernel selection
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  while (times.length < 5 || (performance.now() < end && times.length < 500)) {
    const t0 = performance.now();
    await session.run(feed);
    times.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  const cpuMsPerFace = (cpu.user + cpu.system) / 1000 / times.length / batch;
  times.sort((a, b) => a - b);
  const median = quantile(times, 0.5);
  return {
    batch,
    runs: times.length,
    median_ms: +median.toFixed(3),
    p90_ms: +quantile(times, 0.9).toFixed(3),
    per_face_ms: +(median / batch).toFixed(3),
    faces_per_s: +((1000 * batch) / median).toFixed(2),
    cpu_ms_per_face: +cpuMsPerFace.toFixed(3),
  };
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const keras: KerasRow[] = [];
  if (!withKeras) process.stderr.write(`keras baseline skipped (${process.argv.includes('--no-keras') ? '--no-keras' : `no ${KERAS_PYTHON}`})\n`);
  for (const model of models) {
    const { onnx, h5 } = buildRandomOnnx(model);
    for (const t of threads) {
      const session = await ort.InferenceSession.create(onnx, {
        intraOpNumThreads: t,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      });
      for (const b of batches) {
        const r = { model, threads: t, ...(await measure(session, SIZE[model]!, b)) };
        rows.push(r);
        process.stderr.write(`${model} threads=${t} batch=${b}: ${r.median_ms} ms\n`);
      }
      await session.release();
      if (withKeras) {
        const k = await kerasBaseline(model, h5, t);
        keras.push(...k);
        for (const r of k) process.stderr.write(`keras ${model} threads=${t} batch=${r.batch}: ${r.median_ms} ms\n`);
      }
    }
  }

  const base = (r: Row) => rows.find((x) => x.model === r.model && x.threads === r.threads && x.batch === 1)!;
  const oneThread = (r: Row) => rows.find((x) => x.model === r.model && x.threads === 1 && x.batch === r.batch);
  const header = ['model', 'thr', 'batch', 'median ms', 'p90 ms', 'ms/face', 'faces/s', 'x vs batch1', 'x vs 1 thr', 'cpu ms/face', 'keras faces/s', 'x vs keras'];
  const lines = rows.map((r) => {
    const t1 = oneThread(r);
    const k = keras.find((x) => x.model === r.model && x.threads === r.threads && x.batch === r.batch);
    return [
      r.model, String(r.threads), String(r.batch), r.median_ms.toFixed(2), r.p90_ms.toFixed(2), r.per_face_ms.toFixed(2),
      r.faces_per_s.toFixed(1), (r.faces_per_s / base(r).faces_per_s).toFixed(2),
      t1 ? (r.faces_per_s / t1.faces_per_s).toFixed(2) : '-',
      r.cpu_ms_per_face.toFixed(2),
      k ? k.faces_per_s.toFixed(1) : '-',
      k ? (r.faces_per_s / k.faces_per_s).toFixed(2) : '-',
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (l: string[]) => l.map((c, i) => c.padStart(widths[i]!)).join('  ');
  console.log(fmt(header));
  for (const l of lines) console.log(fmt(l));

  const out = {
    bench: 'models',
    command: `npm run bench:models -- --models ${models.join(',')} --batches ${batches.join(',')} --threads ${threads.join(',')} --seconds ${seconds}`,
    date: new Date().toISOString(),
    node: process.version,
    onnxruntime_node: (await import('onnxruntime-node/package.json', { with: { type: 'json' } })).default.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    simd: simdInfo(),
    logical_cpus: cpus().length,
    loadavg_at_end: loadavg(),
    weights: 'random (models/converters/keras_layouts, seeded); speed does not depend on weight values',
    input: 'NHWC float32, BGR [0,1]; preprocessing not included',
    rows,
    keras_baseline: withKeras
      ? { what: "DeepFace's Keras models, same weights: model(x, training=False) at batch 1, predict_on_batch above", python: KERAS_PYTHON, rows: keras }
      : null,
  };
  const dir = resolve(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = resolve(dir, 'models.json');
  writeFileSync(`${file}.tmp`, JSON.stringify(out, null, 2) + '\n');
  renameSync(`${file}.tmp`, file);
  console.log(`wrote ${file}`);
}

await main();
