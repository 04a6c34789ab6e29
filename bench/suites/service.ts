/**
 * Service level: our gateway (facecompute serve) against DeepFace's Flask API under gunicorn with
 * one sync worker, both on loopback, the same /verify JSON body (base64 data URIs of SERVICE_PAIR,
 * Dlib, opencv),
 * closed-loop load (bench/lib/load.ts) at concurrency 1, 4 and 16. Both services stay up for the whole
 * suite and take turns (the one that goes first alternates by level), so a change in machine load
 * hits both. Besides requests/s and latency, each side's CPU time per answered request is read from
 * /proc: it depends much less on what else the machine is doing than wall-clock figures do.
 * Event-loop delay of our Node processes is sampled per level (eld-probe.mjs).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_PAIR, verifyBody } from '../lib/bodies.js';
import { load, postJson, type LoadResult } from '../lib/load.js';
import { processTree, treeCpuSeconds, treeMemory, waitFor } from '../lib/proc.js';
import { createKey, readEventLoop, startDeepFace, startOurs, type DeepFaceService, type OurService } from '../lib/services.js';
import type { SuiteContext } from './context.js';

export const LEVELS = [1, 4, 16];

export async function deepFaceReady(df: DeepFaceService, body: string, timeoutMs: number): Promise<number> {
  // DeepFace has no readiness route; "ready" is its first answered verify.
  return waitFor(async () => (await postJson(`${df.url}/verify`, body)).status === 200, timeoutMs, df.proc, 200);
}

export function resetEventLoop(ours: OurService): void {
  for (const pid of [...processTree(ours.proc.pid), ...(ours.eldBaselinePid ? [ours.eldBaselinePid] : [])]) {
    try {
      process.kill(pid, 'SIGUSR2');
    } catch {
      // gone
    }
  }
}

export function eldLabel(argv: string): string {
  if (argv.includes('model-server')) return 'model server';
  if (argv.includes('serve')) return 'gateway (serve)';
  return argv === '' ? 'idle node (machine baseline)' : argv;
}

export interface Cell extends LoadResult {
  cpu_s: number;
  cpu_ms_per_request: number | null;
}

export async function measured(root: number, run: () => Promise<LoadResult>): Promise<Cell> {
  const c0 = treeCpuSeconds(root);
  const r = await run();
  const cpu = treeCpuSeconds(root) - c0;
  return { ...r, cpu_s: cpu, cpu_ms_per_request: r.ok > 0 ? (cpu * 1000) / r.ok : null };
}

/**
 * Wall-clock budgets per level, sized from the time of one verify measured just before on each side
 * (T). A sync single-worker server at c16 first fills its queue (latencies T, 2T, ... 16T): a run of
 * a few T would only see that ramp, so runs last about (2c + 6)·T, capped so the suite stays
 * bounded. Answers still in flight when a run ends are not counted, on either side.
 */
export function budgets(quick: boolean, dfOneS: number, oursOneS: number): { oursSeconds: (c: number) => number; dfSeconds: (c: number) => number } {
  const size = (t: number, c: number, min: number, max: number) => Math.round(Math.min(max, Math.max(min, Math.max(0.05, t) * (2 * c + 6))));
  return quick
    ? { oursSeconds: (c) => size(oursOneS, c, 5, 15), dfSeconds: (c) => size(dfOneS, c, 10, 40) }
    : { oursSeconds: (c) => size(oursOneS, c, 10, 30), dfSeconds: (c) => size(dfOneS, c, 20, c >= 16 ? 120 : 75) };
}

export async function serviceSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const body = verifyBody('opencv');
  const home = mkdtempSync(join(tmpdir(), 'deepface-home-'));
  ctx.log('service: starting DeepFace (gunicorn, 1 worker) and facecompute serve');
  const [dfStart, oursStart] = await Promise.allSettled([
    (async () => {
      const df = await startDeepFace({ logDir: ctx.logDir, label: 'service-deepface', home });
      await deepFaceReady(df, body, 600_000).catch(async (err: unknown) => {
        await df.stop();
        throw err;
      });
      return df;
    })(),
    startOurs({ logDir: ctx.logDir, label: 'service-ours', eventLoopProbe: true }),
  ]);
  const df = dfStart.status === 'fulfilled' ? dfStart.value : null;
  const ours = oursStart.status === 'fulfilled' ? oursStart.value : null;
  try {
    if (!df || !ours) {
      const why = [dfStart, oursStart].map((s) => (s.status === 'rejected' ? String((s.reason as Error).message ?? s.reason) : '')).filter(Boolean);
      throw new Error(`could not start both services: ${why.join('; ')}`);
    }
    const key = await createKey(ours.consoleUrl);
    const auth = { authorization: `Bearer ${key}` };
    const ourUrl = `${ours.gatewayUrl}/verify`;
    const dfUrl = `${df.url}/verify`;

    // One answer from each, to check the bodies are accepted and the answers agree.
    const ourOne = await postJson(ourUrl, body, auth);
    const dfOne = await postJson(dfUrl, body);
    if (ourOne.status !== 200) throw new Error(`our /verify answered ${ourOne.status}: ${JSON.stringify(ourOne.json).slice(0, 300)}`);
    const pick = (j: unknown) => {
      const o = j as { verified?: boolean; distance?: number; facial_areas?: unknown };
      return { verified: o.verified, distance: o.distance, facial_areas: o.facial_areas };
    };
    const agreement = { ours: pick(ourOne.json), deepface: pick(dfOne.json) };
    if (dfOne.status !== 200) throw new Error(`DeepFace /verify answered ${dfOne.status}: ${JSON.stringify(dfOne.json).slice(0, 300)}`);
    // A second answer from each sizes the runs (the first may still pay lazy initialisation).
    const ourTwo = await postJson(ourUrl, body, auth);
    const dfTwo = await postJson(dfUrl, body);
    const b = budgets(ctx.quick, dfTwo.ms / 1000, ourTwo.ms / 1000);
    ctx.log(`service: one verify each: ours ${JSON.stringify(agreement.ours)} in ${ourOne.ms.toFixed(0)} ms; DeepFace ${JSON.stringify(agreement.deepface)} in ${dfOne.ms.toFixed(0)} ms`);

    const levels: Array<{ connections: number; ours: Cell; deepface: Cell; event_loop: ReturnType<typeof readEventLoop> }> = [];
    for (const [i, c] of LEVELS.entries()) {
      const runOurs = async () => {
        resetEventLoop(ours);
        const cell = await measured(ours.proc.pid, () => load({ url: ourUrl, body, headers: auth, connections: c, seconds: b.oursSeconds(c) }));
        await new Promise((r) => setTimeout(r, 300)); // the probe writes every 200 ms
        return { cell, eld: ours.eldDir ? readEventLoop(ours.eldDir) : [] };
      };
      const runDf = () => measured(df.proc.pid, () => load({ url: dfUrl, body, connections: c, seconds: b.dfSeconds(c), timeoutS: 600 }));
      let o: Awaited<ReturnType<typeof runOurs>>;
      let d: Cell;
      if (i % 2 === 0) {
        o = await runOurs();
        d = await runDf();
      } else {
        d = await runDf();
        o = await runOurs();
      }
      levels.push({ connections: c, ours: o.cell, deepface: d, event_loop: o.eld });
      ctx.log(`service c${c}: ours ${o.cell.rps.toFixed(2)} req/s p50 ${o.cell.p50_ms} ms; DeepFace ${d.rps.toFixed(2)} req/s p50 ${d.p50_ms} ms`);
    }
    // The opencv detector (a Haar cascade, the same algorithm and cost on both sides) dominates a
    // request; one more c16 run with yunet shows the rest of the pipeline with a cheap detector.
    const yBody = verifyBody('yunet');
    const yOurs = await postJson(ourUrl, yBody, auth);
    const yDf = await postJson(dfUrl, yBody);
    let yunet: { connections: number; ours: Cell; deepface: Cell } | null = null;
    if (yOurs.status === 200 && yDf.status === 200) {
      const yb = budgets(ctx.quick, yDf.ms / 1000, yOurs.ms / 1000);
      const o = await measured(ours.proc.pid, () => load({ url: ourUrl, body: yBody, headers: auth, connections: 16, seconds: yb.oursSeconds(16) }));
      const d = await measured(df.proc.pid, () => load({ url: dfUrl, body: yBody, connections: 16, seconds: yb.dfSeconds(16), timeoutS: 600 }));
      yunet = { connections: 16, ours: o, deepface: d };
      ctx.log(`service c16 yunet: ours ${o.rps.toFixed(2)} req/s p50 ${o.p50_ms} ms (${o.cpu_ms_per_request?.toFixed(0)} CPU ms/req); DeepFace ${d.rps.toFixed(2)} req/s p50 ${d.p50_ms} ms (${d.cpu_ms_per_request?.toFixed(0)} CPU ms/req)`);
    } else {
      ctx.log(`service yunet: skipped (ours ${yOurs.status}, DeepFace ${yDf.status})`);
    }
    const memory = { ours: treeMemory(ours.proc.pid), deepface: treeMemory(df.proc.pid) };
    ctx.table(
      ['c', 'ours req/s', 'DF req/s', 'x', 'ours p50/p99 ms', 'DF p50/p99 ms', 'ours CPU ms/req', 'DF CPU ms/req', 'ours non2xx/err', 'DF non2xx/err'],
      levels.map((l) => [
        l.connections,
        l.ours.rps.toFixed(2),
        l.deepface.rps.toFixed(2),
        (l.ours.rps / l.deepface.rps).toFixed(1),
        `${l.ours.p50_ms}/${l.ours.p99_ms}`,
        `${l.deepface.p50_ms}/${l.deepface.p99_ms}`,
        l.ours.cpu_ms_per_request?.toFixed(0) ?? '-',
        l.deepface.cpu_ms_per_request?.toFixed(0) ?? '-',
        `${l.ours.non2xx}/${l.ours.errors + l.ours.timeouts}`,
        `${l.deepface.non2xx}/${l.deepface.errors + l.deepface.timeouts}`,
      ]),
    );
    ctx.table(
      ['c', 'process', 'event-loop p50 ms', 'p99 ms', 'max ms'],
      levels.flatMap((l) => l.event_loop.map((e) => [l.connections, eldLabel(e.argv), e.p50_ms, e.p99_ms, e.max_ms])),
    );
    ctx.log(`service: peak RSS after the load: ours ${memory.ours.peakRssMb.toFixed(0)} MB (${memory.ours.processes.length} processes), DeepFace ${memory.deepface.peakRssMb.toFixed(0)} MB`);
    return {
      request: { route: '/verify', model: 'Dlib', detector: 'opencv', images: [...SERVICE_PAIR], body_bytes: body.length },
      budgets: { seconds: LEVELS.map((c) => ({ connections: c, ours: b.oursSeconds(c), deepface: b.dfSeconds(c) })), one_verify_ms: { ours: ourTwo.ms, deepface: dfTwo.ms } },
      agreement,
      levels,
      yunet_c16: yunet,
      memory_after_load: {
        ours_peak_rss_mb: memory.ours.peakRssMb,
        deepface_peak_rss_mb: memory.deepface.peakRssMb,
        ours_processes: memory.ours.processes,
        deepface_processes: memory.deepface.processes,
      },
    };
  } finally {
    await Promise.all([df?.stop(), ours?.stop()]);
  }
}
