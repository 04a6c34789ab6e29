/**
 * Cross-request micro-batching: our /verify throughput at concurrency 16 with batching on (the
 * shipped window of 1 ms, at most 32 rows per ONNX Runtime run) against off (window 0, max 1: every
 * request is its own run). Two services run side by side and take turns, on, off, on, off, so that
 * machine load drifts over both; each side is the median of its turns.
 *
 * With Dlib, inference is a few percent of a request's CPU here, so batching has little to act on.
 * A third measurement makes inference most of the request: Facenet (the default model, 160×160
 * Inception-ResNet) with the skip detector. There are no real Facenet weights on this machine, so it
 * serves random test weights (FACECOMPUTE_TEST_WEIGHTS, marked as test everywhere): the cost of a
 * run does not depend on the weights' values.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_PAIR, dataUri, verifyBody } from '../lib/bodies.js';
import { load } from '../lib/load.js';
import { createKey, readEventLoop, startOurs, type OurService } from '../lib/services.js';
import { measured, resetEventLoop, type Cell } from './service.js';
import type { SuiteContext } from './context.js';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

type Mode = 'on' | 'off';
type Measured = Cell & { event_loop?: ReturnType<typeof readEventLoop> };
const MODES = ['on', 'off'] as const;
const SETTINGS = { on: { batchWindowMs: 1, batchMax: 32 }, off: { batchWindowMs: 0, batchMax: 1 } };

interface Pair {
  on: OurService;
  off: OurService;
  keys: Record<Mode, string>;
}

/** Two services side by side, batching on and off, with a key each, for the length of `run`. */
async function withPair<T>(ctx: SuiteContext, label: string, opts: { eventLoopProbe?: boolean; env?: Record<string, string> }, run: (p: Pair) => Promise<T>): Promise<T> {
  const started = await Promise.allSettled(MODES.map((m) => startOurs({ logDir: ctx.logDir, label: `${label}-${m}`, ...opts, ...SETTINGS[m] })));
  const services = started.map((s) => (s.status === 'fulfilled' ? s.value : null));
  try {
    const [on, off] = services;
    if (!on || !off) throw new Error(`could not start both: ${started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok')).join('; ')}`);
    return await run({ on, off, keys: { on: await createKey(on.consoleUrl), off: await createKey(off.consoleUrl) } });
  } finally {
    await Promise.all(services.map((s) => s?.stop()));
  }
}

/** The same /verify load on each side in turn (on, off, on, off, ...), so that machine load drifts over both. */
async function alternate(ctx: SuiteContext, p: Pair, o: { label: string; body: string; connections: number; seconds: number; turns: number; eventLoop?: boolean }): Promise<Record<Mode, Measured[]>> {
  const cells: Record<Mode, Measured[]> = { on: [], off: [] };
  for (let t = 0; t < o.turns; t++) {
    for (const mode of MODES) {
      const svc = p[mode];
      if (o.eventLoop) resetEventLoop(svc);
      const cell: Measured = await measured(svc.proc.pid, () =>
        load({ url: `${svc.gatewayUrl}/verify`, body: o.body, headers: { authorization: `Bearer ${p.keys[mode]}` }, connections: o.connections, seconds: o.seconds }),
      );
      if (o.eventLoop) {
        await new Promise((r) => setTimeout(r, 300));
        cell.event_loop = svc.eldDir ? readEventLoop(svc.eldDir) : [];
      }
      cells[mode].push(cell);
      ctx.log(`${o.label} ${mode} turn ${t + 1}: ${cell.rps.toFixed(2)} req/s, p50 ${cell.p50_ms} ms, ${cell.cpu_ms_per_request?.toFixed(0)} CPU ms/req`);
    }
  }
  return cells;
}

/** The median of `f` over each side's turns. */
const perMode = (cells: Record<Mode, Cell[]>, f: (c: Cell) => number): Record<Mode, number> => ({ on: median(cells.on.map(f)), off: median(cells.off.map(f)) });
const rpsOf = (c: Cell) => c.rps;
const cpuOf = (c: Cell) => c.cpu_ms_per_request ?? NaN;

export async function batchingSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const connections = 16;
  const seconds = ctx.quick ? 8 : 20;
  const turns = ctx.quick ? 1 : 2;
  const result = await withPair(ctx, 'batching', { eventLoopProbe: true }, async (p) => {
    const cells = await alternate(ctx, p, { label: 'batching', body: verifyBody('opencv'), connections, seconds, turns, eventLoop: true });
    // With opencv the Haar scan is almost all of a request and batching can only touch the rest; the
    // skip detector leaves decode, tensor and Dlib, which is where batching acts.
    const skip = await alternate(ctx, p, { label: 'batching skip', body: verifyBody('skip'), connections, seconds: ctx.quick ? 5 : 10, turns });
    const skipRps = perMode(skip, rpsOf);
    ctx.log(`batching with detector skip at c${connections}: on ${skipRps.on.toFixed(2)} req/s, off ${skipRps.off.toFixed(2)} req/s: ${(skipRps.on / skipRps.off).toFixed(2)}x`);
    const rps = perMode(cells, rpsOf);
    const cpu = perMode(cells, cpuOf);
    const gain = rps.on / rps.off;
    ctx.table(
      ['batching', 'req/s (median)', 'p50 ms', 'p99 ms', 'CPU ms/req', 'turns req/s'],
      MODES.map((m) => [
        `${m} (window ${SETTINGS[m].batchWindowMs} ms, max ${SETTINGS[m].batchMax})`,
        rps[m].toFixed(2),
        median(cells[m].map((c) => c.p50_ms)),
        median(cells[m].map((c) => c.p99_ms)),
        cpu[m].toFixed(0),
        cells[m].map((c) => c.rps.toFixed(2)).join(', '),
      ]),
    );
    ctx.log(`batching gain at c${connections}: ${gain.toFixed(2)}x (CPU per request on/off ${(cpu.on / cpu.off).toFixed(2)})`);
    return {
      connections,
      seconds_per_turn: seconds,
      turns,
      settings: SETTINGS,
      cells,
      rps,
      cpu_ms_per_request: cpu,
      gain,
      skip_detector: { rps: skipRps, gain: skipRps.on / skipRps.off, p50_ms: perMode(skip, (c) => c.p50_ms), cpu_ms_per_request: perMode(skip, cpuOf) },
    };
  });
  return { ...result, inference_bound: await facenetSkipGain(ctx, connections, ctx.quick ? 5 : 10, turns) };
}

/** Facenet (random test weights) with detector skip at c16, batching on against off. */
async function facenetSkipGain(ctx: SuiteContext, connections: number, seconds: number, turns: number): Promise<Record<string, unknown>> {
  // The converter venv and random weights are test tooling (test/helpers/keras-models.ts); loaded
  // only here so the rest of the bench does not need them.
  const { buildRandomOnnx } = await import('../../test/helpers/keras-models.js');
  const cache = mkdtempSync(join(tmpdir(), 'facecompute-bench-cache-'));
  mkdirSync(join(cache, 'test-onnx'));
  copyFileSync(buildRandomOnnx('facenet128').onnx, join(cache, 'test-onnx', 'Facenet.onnx'));
  const env = {
    FACECOMPUTE_MODELS_CACHE: cache,
    FACECOMPUTE_TEST_WEIGHTS: 'true',
    FACECOMPUTE_ALLOWED_MODELS: 'Facenet',
    FACECOMPUTE_DEFAULT_MODEL: 'Facenet',
    FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,skip',
  };
  const body = JSON.stringify({ img1: dataUri(SERVICE_PAIR[0]), img2: dataUri(SERVICE_PAIR[1]), model_name: 'Facenet', detector_backend: 'skip' });
  try {
    return await withPair(ctx, 'batching-facenet', { env }, async (p) => {
      const cells = await alternate(ctx, p, { label: 'batching Facenet skip', body, connections, seconds, turns });
      const errors = [...cells.on, ...cells.off].reduce((a, c) => a + c.non2xx + c.errors, 0);
      if (errors > 0) throw new Error(`${errors} failed /verify requests with Facenet test weights`);
      const rps = perMode(cells, rpsOf);
      const cpu = perMode(cells, cpuOf);
      ctx.log(`batching with Facenet (random test weights) and detector skip at c${connections}: on ${rps.on.toFixed(2)} req/s, off ${rps.off.toFixed(2)} req/s: ${(rps.on / rps.off).toFixed(2)}x (CPU ms/req ${cpu.on.toFixed(0)} vs ${cpu.off.toFixed(0)})`);
      return { model: 'Facenet (random test weights)', detector: 'skip', rps, cpu_ms_per_request: cpu, gain: rps.on / rps.off, turns: cells };
    });
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}
