/**
 * One model server's peak memory for one `/verify` of two flat PNGs, in a fresh process: the model
 * server's app with its real engines, the frame sent in-process. Prints one JSON line: the answer's
 * status and code, seconds, the process's resident memory once warmed and its peak (VmHWM), and the
 * request's estimated peak (src/model-client/job-cost.ts).
 *
 *   node --import tsx bench/detectors/verify-memory.ts [--side 6324] [--detector mtcnn] [--root .]
 *
 * `--root` runs another checkout's model server (a before/after comparison on the same machine).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { makeUniformPng } from '../../test/helpers/images.js';

const { values } = parseArgs({ options: { side: { type: 'string', default: '6324' }, detector: { type: 'string', default: 'mtcnn' }, root: { type: 'string', default: '.' } } });
const root = resolve(values.root);
const load = (path: string) => import(pathToFileURL(join(root, path)).href);
const { loadConfig } = await load('src/config/index.ts');
const { createLogger } = await load('src/logging/logger.ts');
const { engines, imageOps } = await load('src/model-server/adapters.ts');
const { startRegistry } = await load('src/model-server/registry.ts');
const { planServing } = await load('src/model-server/serving-plan.ts');
const { buildModelServer } = await load('src/model-server/app.ts');
const { encodeFrame } = await load('src/model-client/protocol.ts');

function statusMib(field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const detector = values.detector;
const side = Number(values.side);
const config = loadConfig({
  ...process.env,
  FACECOMPUTE_LOG_LEVEL: 'silent',
  FACECOMPUTE_ALLOWED_MODELS: 'Facenet',
  FACECOMPUTE_DEFAULT_MODEL: 'Facenet',
  FACECOMPUTE_ALLOWED_DETECTORS: detector,
  FACECOMPUTE_DEFAULT_DETECTOR: detector,
  FACECOMPUTE_PREWARM: `Facenet,${detector}`,
});
const logger = createLogger('bench', 'silent');
const state = await startRegistry(config, logger, engines(config), await planServing(config));
while (state.warmup.snapshot().status === 'warming') await new Promise((r) => setTimeout(r, 100));
if (state.warmup.snapshot().status !== 'ready') throw new Error(`warmup: ${state.warmup.snapshot().error}`);
const app = await buildModelServer({ config, logger, state, image: imageOps(config) });
const a = makeUniformPng(side, side, 120);
const b = makeUniformPng(side, side, 121);
const header = {
  op: 'verify', img1: { image: 0 }, img2: { image: 1 }, distance_metric: 'cosine', threshold: null,
  model_name: 'Facenet', detector_backend: detector, align: true, enforce_detection: false, expand_percentage: 0, normalization: 'base',
};
const frame = encodeFrame(header, [a, b]);
let estimate: unknown = null;
try {
  const { jobCost } = await load('src/model-client/job-cost.ts');
  estimate = jobCost(header, [{ width: side, height: side }, { width: side, height: side }], { detectorMaxSide: config.limits.detectorMaxSide });
} catch {
  // a checkout without the estimate (before admission by memory)
}
const warmed = statusMib('VmRSS');
const t0 = performance.now();
const res = await app.inject({ method: 'POST', url: '/internal/verify', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: frame });
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ side, detector, status: res.statusCode, error: res.statusCode === 200 ? null : res.json().error, seconds, frame_bytes: frame.length, warmed_rss_mib: warmed, peak_rss_mib: statusMib('VmHWM'), estimate_mib: estimate && Object.fromEntries(Object.entries(estimate).map(([k, v]) => [k, Math.round((v as number) / 2 ** 20)])) })}\n`);
await app.close();
process.exit(0);
