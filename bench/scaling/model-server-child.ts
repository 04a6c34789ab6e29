/**
 * Runs in its own process (bench/scaling/run.ts starts it with UV_THREADPOOL_SIZE=1 and one ONNX
 * Runtime thread): the model server's registry and pipeline, in-process, one request at a time, so
 * that the process's CPU time per request is the demand one image puts on one core. Prints JSON.
 */
import { readdirSync, mkdtempSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import { DEEPFACE_DATA } from '../lib/paths.js';

const images = Number(process.env['SCALING_IMAGES'] ?? '20');
const combos = JSON.parse(process.env['SCALING_COMBOS'] ?? '[]') as Array<{ model: string; detector: string }>;

const cfg = loadConfig({ ...process.env, FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-scaling-')) });
const state = await startRegistry(cfg, createLogger('scaling', 'warn'), engines(cfg));
const t0 = performance.now();
while (!state.warmup.ready) {
  const w = state.warmup.snapshot();
  if (w.status === 'error') throw new Error(`warmup failed: ${w.error}`);
  if (performance.now() - t0 > 300_000) throw new Error('no warmup in 300 s');
  await new Promise((r) => setTimeout(r, 100));
}
const ops = imageOps(cfg);
const pipeline = new Pipeline({ image: ops, detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: 'retinaface' });
const files = readdirSync(DEEPFACE_DATA).filter((n) => n.endsWith('.jpg') && n !== 'invalid.jpg').sort().slice(0, images);
const bytes = await Promise.all(files.map((f) => readFile(join(DEEPFACE_DATA, f))));

const out: Array<Record<string, unknown>> = [];
for (const { model, detector } of combos) {
  if (!state.recognizers.has(model)) {
    out.push({ model, detector, skipped: `${model} is not installed here` });
    continue;
  }
  const one = async (b: Buffer) => {
    const img = await ops.decode(b);
    // enforce_detection false: every image costs a full request, with or without a face found.
    return pipeline.represent([img], { model_name: model, detector_backend: detector, align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base', max_faces: null, l2_normalize: false, detector_fallback: false } as never);
  };
  await one(bytes[0]!); // first-call costs belong to warmup
  const cpu: number[] = [];
  const wall: number[] = [];
  for (const b of bytes) {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await one(b);
    const c = process.cpuUsage(c0);
    wall.push(performance.now() - w0);
    cpu.push((c.user + c.system) / 1000);
  }
  out.push({ model, detector, images: bytes.length, cpu_ms: cpu, wall_ms: wall });
}
for (const r of state.recognizers.values()) await r.close?.();
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
