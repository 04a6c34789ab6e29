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

export async function batchingSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const body = verifyBody('opencv');
  const connections = 16;
  const seconds = ctx.quick ? 8 : 20;
  const turns = ctx.quick ? 1 : 2;
  const settings = { on: { batchWindowMs: 1, batchMax: 32 }, off: { batchWindowMs: 0, batchMax: 1 } };
  const started = await Promise.allSettled([
    startOurs({ logDir: ctx.logDir, label: 'batching-on', eventLoopProbe: true, ...settings.on }),
    startOurs({ logDir: ctx.logDir, label: 'batching-off', eventLoopProbe: true, ...settings.off }),
  ]);
  const services = started.map((s) => (s.status === 'fulfilled' ? s.value : null));
  try {
    const [on, off] = services as [OurService | null, OurService | null];
    if (!on || !off) throw new Error(`could not start both: ${started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok')).join('; ')}`);
    const keys = { on: await createKey(on.consoleUrl), off: await createKey(off.consoleUrl) };
    const cells: Record<'on' | 'off', Array<Cell & { event_loop: ReturnType<typeof readEventLoop> }>> = { on: [], off: [] };
    for (let t = 0; t < turns; t++) {
      for (const mode of ['on', 'off'] as const) {
        const svc = mode === 'on' ? on : off;
        resetEventLoop(svc);
        const cell = await measured(svc.proc.pid, () =>
          load({ url: `${svc.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${keys[mode]}` }, connections, seconds }),
        );
        await new Promise((r) => setTimeout(r, 300));
        cells[mode].push({ ...cell, event_loop: svc.eldDir ? readEventLoop(svc.eldDir) : [] });
        ctx.log(`batching ${mode} turn ${t + 1}: ${cell.rps.toFixed(2)} req/s, p50 ${cell.p50_ms} ms, ${cell.cpu_ms_per_request?.toFixed(0)} CPU ms/req`);
      }
    }
    // With opencv the Haar scan is almost all of a request and batching can only touch the rest; the
    // skip detector leaves decode, tensor and Dlib, which is where batching acts.
    const skipBody = verifyBody('skip');
    const skip: Record<'on' | 'off', Cell[]> = { on: [], off: [] };
    for (let t = 0; t < turns; t++) {
      for (const mode of ['on', 'off'] as const) {
        const svc = mode === 'on' ? on : off;
        skip[mode].push(await measured(svc.proc.pid, () => load({ url: `${svc.gatewayUrl}/verify`, body: skipBody, headers: { authorization: `Bearer ${keys[mode]}` }, connections, seconds: ctx.quick ? 5 : 10 })));
      }
    }
    const skipRps = { on: median(skip.on.map((c) => c.rps)), off: median(skip.off.map((c) => c.rps)) };
    ctx.log(`batching with detector skip at c${connections}: on ${skipRps.on.toFixed(2)} req/s, off ${skipRps.off.toFixed(2)} req/s: ${(skipRps.on / skipRps.off).toFixed(2)}x`);
    const rps = { on: median(cells.on.map((c) => c.rps)), off: median(cells.off.map((c) => c.rps)) };
    const cpu = { on: median(cells.on.map((c) => c.cpu_ms_per_request ?? NaN)), off: median(cells.off.map((c) => c.cpu_ms_per_request ?? NaN)) };
    const gain = rps.on / rps.off;
    ctx.table(
      ['batching', 'req/s (median)', 'p50 ms', 'p99 ms', 'CPU ms/req', 'turns req/s'],
      (['on', 'off'] as const).map((m) => [
        `${m} (window ${settings[m].batchWindowMs} ms, max ${settings[m].batchMax})`,
        rps[m].toFixed(2),
        median(cells[m].map((c) => c.p50_ms)),
        median(cells[m].map((c) => c.p99_ms)),
        cpu[m].toFixed(0),
        cells[m].map((c) => c.rps.toFixed(2)).join(', '),
      ]),
    );
    ctx.log(`batching gain at c${connections}: ${gain.toFixed(2)}x (CPU per request on/off ${(cpu.on / cpu.off).toFixed(2)})`);
    const inferenceBound = await facenetSkipGain(ctx, connections, ctx.quick ? 5 : 10, turns);
    return {
      connections,
      seconds_per_turn: seconds,
      turns,
      settings,
      cells,
      rps,
      cpu_ms_per_request: cpu,
      gain,
      skip_detector: { rps: skipRps, gain: skipRps.on / skipRps.off, p50_ms: { on: median(skip.on.map((c) => c.p50_ms)), off: median(skip.off.map((c) => c.p50_ms)) }, cpu_ms_per_request: { on: median(skip.on.map((c) => c.cpu_ms_per_request ?? NaN)), off: median(skip.off.map((c) => c.cpu_ms_per_request ?? NaN)) } },
      inference_bound: inferenceBound,
    };
  } finally {
    await Promise.all(services.map((s) => s?.stop()));
  }
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
  const settings = { on: { batchWindowMs: 1, batchMax: 32 }, off: { batchWindowMs: 0, batchMax: 1 } };
  const started = await Promise.allSettled([
    startOurs({ logDir: ctx.logDir, label: 'batching-facenet-on', env, ...settings.on }),
    startOurs({ logDir: ctx.logDir, label: 'batching-facenet-off', env, ...settings.off }),
  ]);
  const services = started.map((s) => (s.status === 'fulfilled' ? s.value : null));
  try {
    const [on, off] = services as [OurService | null, OurService | null];
    if (!on || !off) throw new Error(`could not start both: ${started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'ok')).join('; ')}`);
    const keys = { on: await createKey(on.consoleUrl), off: await createKey(off.consoleUrl) };
    const cells: Record<'on' | 'off', Cell[]> = { on: [], off: [] };
    for (let t = 0; t < turns; t++) {
      for (const mode of ['on', 'off'] as const) {
        const svc = mode === 'on' ? on : off;
        cells[mode].push(await measured(svc.proc.pid, () => load({ url: `${svc.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${keys[mode]}` }, connections, seconds })));
      }
    }
    const rps = { on: median(cells.on.map((c) => c.rps)), off: median(cells.off.map((c) => c.rps)) };
    const cpu = { on: median(cells.on.map((c) => c.cpu_ms_per_request ?? NaN)), off: median(cells.off.map((c) => c.cpu_ms_per_request ?? NaN)) };
    const errors = [...cells.on, ...cells.off].reduce((a, c) => a + c.non2xx + c.errors, 0);
    if (errors > 0) throw new Error(`${errors} failed /verify requests with Facenet test weights`);
    ctx.log(`batching with Facenet (random test weights) and detector skip at c${connections}: on ${rps.on.toFixed(2)} req/s, off ${rps.off.toFixed(2)} req/s: ${(rps.on / rps.off).toFixed(2)}x (CPU ms/req ${cpu.on.toFixed(0)} vs ${cpu.off.toFixed(0)})`);
    return { model: 'Facenet (random test weights)', detector: 'skip', rps, cpu_ms_per_request: cpu, gain: rps.on / rps.off, turns: cells };
  } finally {
    await Promise.all(services.map((s) => s?.stop()));
    rmSync(cache, { recursive: true, force: true });
  }
}
