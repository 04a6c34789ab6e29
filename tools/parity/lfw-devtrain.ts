/**
 * LFW View 1 DevTrain (../shared/data/lfw-devtrain: 2,200 pairs, 3,443 images), shared by the offline
 * tools that measure on it: the fallback rule (fallback-rule.ts), the parity of the live service
 * (service-parity.ts) and the ROC calibration (tools/calibration/roc.ts). DevTrain only, never a test
 * split: these figures choose thresholds and rules.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { startRegistry } from '../../src/model-server/registry.js';
import { engines, imageOps } from '../../src/model-server/adapters.js';
import { Pipeline } from '../../src/model-server/pipeline.js';
import { distance } from '../../src/deepface/distance.js';
import { roundDistance } from '../../src/deepface/decision.js';
import type { DistanceMetric } from '../../src/model-client/protocol.js';

export const REPO = resolve(import.meta.dirname, '..', '..');
export const SHARED_DATA = resolve(process.env['SHARED_DATA_DIR'] ?? join(REPO, '..', 'shared', 'data'));
export const WEIGHTS = resolve(process.env['FACECOMPUTE_WEIGHTS_DIR'] ?? join(REPO, '..', 'shared', 'weights'));
export const LFW = join(SHARED_DATA, 'lfw-devtrain');

/** [image a, image b, 1 same person | 0 different], paths relative to LFW, in the file's order. */
export type Pair = [string, string, 0 | 1];

const file = (person: string, n: string) => `${person}/${person}_${String(Number(n)).padStart(4, '0')}.jpg`;

/** pairsDevTrain.txt: the first line is the count of each kind, then same-person, then different. */
export function devTrainPairs(): Pair[] {
  const lines = readFileSync(join(LFW, 'pairsDevTrain.txt'), 'utf8').trim().split('\n').slice(1);
  const pairs = lines.map((l): Pair => {
    const f = l.trim().split('\t');
    if (f.length === 3) return [file(f[0]!, f[1]!), file(f[0]!, f[2]!), 1];
    if (f.length === 4) return [file(f[0]!, f[1]!), file(f[2]!, f[3]!), 0];
    throw new Error(`pairsDevTrain.txt: unexpected line ${JSON.stringify(l)}`);
  });
  if (pairs.length !== 2200) throw new Error(`expected 2200 DevTrain pairs, read ${pairs.length}`);
  return pairs;
}

/** Every image, sorted: "<person>/<person>_NNNN.jpg". */
export function devTrainImages(): string[] {
  const out: string[] = [];
  for (const person of readdirSync(LFW, { withFileTypes: true })) {
    if (!person.isDirectory()) continue;
    for (const f of readdirSync(join(LFW, person.name))) if (f.endsWith('.jpg')) out.push(`${person.name}/${f}`);
  }
  return out.sort();
}

/**
 * verify's distance for one pair (the minimum over face pairs, rounded to 6 decimals as the service
 * reports it); null when a side has no face.
 */
export function pairDistance(a: ArrayLike<number>[] | undefined, b: ArrayLike<number>[] | undefined, metric: DistanceMetric): number | null {
  if (!a?.length || !b?.length) return null;
  let best = Infinity;
  for (const x of a) for (const y of b) best = Math.min(best, roundDistance(distance(x, y, metric)));
  return best;
}

/** An in-process pipeline with the real engines: the model server's, minus HTTP. */
export async function startPipeline(o: { models: string[]; detectors: string[]; fallback: string | null }): Promise<{ pipeline: Pipeline; decode: (b: Buffer) => ReturnType<ReturnType<typeof imageOps>['decode']>; close: () => Promise<void> }> {
  const config = loadConfig({
    FACECOMPUTE_WEIGHTS_DIR: WEIGHTS,
    FACECOMPUTE_MODELS_CACHE: process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO, '.models-cache'),
    FACECOMPUTE_ALLOWED_MODELS: o.models.join(','),
    FACECOMPUTE_DEFAULT_MODEL: o.models[0]!,
    FACECOMPUTE_ALLOWED_DETECTORS: o.detectors.join(','),
    FACECOMPUTE_LOG_LEVEL: 'silent',
  });
  const state = await startRegistry(config, createLogger('lfw', 'silent'), engines(config));
  while (state.warmup.snapshot().status === 'warming') await new Promise((r) => setTimeout(r, 100));
  if (!state.warmup.ready) throw new Error(`warmup failed: ${state.warmup.snapshot().error}`);
  for (const m of o.models) if (!state.recognizers.has(m)) throw new Error(`${m} is not installed (${state.unavailable[m] ?? 'unknown'})`);
  for (const d of o.detectors) if (!state.detectors.has(d)) throw new Error(`detector ${d} is not installed (${state.unavailable[d] ?? 'unknown'})`);
  const ops = imageOps(config);
  const pipeline = new Pipeline({ image: ops, detectors: state.detectors, recognizers: state.recognizers, fallbackDetector: o.fallback, detectorMaxSide: 0 });
  return {
    pipeline,
    decode: (b) => ops.decode(b),
    close: async () => {
      for (const r of state.recognizers.values()) await r.close?.();
      for (const d of state.detectors.values()) await d.close?.();
    },
  };
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.floor((s.length - 1) / 2)] as number) : NaN;
};

/** The q-quantile (0..1) by the nearest rank. */
export const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number) : NaN;
};
