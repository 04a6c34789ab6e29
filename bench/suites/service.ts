/**
 * Service level: our gateway (facecompute serve) against DeepFace's Flask API under gunicorn, twice:
 * with one sync worker (its Dockerfile) and with two (one per core, what a user on this machine would
 * run). All on loopback, the same /verify JSON body (base64 data URIs of SERVICE_PAIR, opencv), for
 * Dlib and, when its weights are installed, Facenet (the contract's default), closed-loop load
 * (bench/lib/load.ts) at concurrency 1, 4 and 16. The three services stay up for the whole suite and
 * take turns (which goes first rotates by level), so a change in machine load hits all of them.
 * Besides requests/s and latency, each side's CPU time per answered request is read from /proc (the
 * server's whole process tree: gateway + model server, gunicorn master + workers): it depends much
 * less on what else the machine is doing than wall-clock figures do. Event-loop delay of our Node
 * processes is sampled per level (eld-probe.mjs).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_PAIR, verifyBody } from '../lib/bodies.js';
import { load, postJson, type LoadResult } from '../lib/load.js';
import { processTree, settle, treeCpuSeconds, treeMemory, waitFor } from '../lib/proc.js';
import { existsSync } from 'node:fs';
import { BENCH_MODELS, createKey, deepFacePython, facenetWeightsFile, readEventLoop, startDeepFace, startOurs, type DeepFaceService, type DeepFaceVersion, type OurService } from '../lib/services.js';
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

/**
 * Stops (`on` false) or starts the event-loop probe's sampling in our processes (eld-probe.mjs): its
 * /proc read every 2 ms costs CPU that a cell measuring CPU per request must not count. Takes
 * effect within the probe's 200 ms poll.
 */
export async function armEventLoop(ours: OurService, on: boolean): Promise<void> {
  if (!ours.eldDir) return;
  const flag = join(ours.eldDir, 'disarmed');
  if (on) rmSync(flag, { force: true });
  else writeFileSync(flag, '');
  await new Promise((r) => setTimeout(r, 300));
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

/** The DeepFace API's gunicorn worker counts: its Dockerfile's one, and one per core on this machine. */
export const DEEPFACE_WORKERS = [1, 2] as const;

/** Which side goes first rotates by level, so that none always runs on a freshly idle (or busy) machine. */
export function rotation<T>(sides: readonly T[], level: number): T[] {
  const k = level % sides.length;
  return [...sides.slice(k), ...sides.slice(0, k)];
}

type Side = 'ours' | 'deepface' | 'deepface_2w' | 'deepface103' | 'deepface103_2w';

const SIDE_LABEL: Record<Side, string> = { ours: 'ours', deepface: 'DeepFace 0.0.100 1w', deepface_2w: '0.0.100 2w', deepface103: '0.0.103 1w', deepface103_2w: '0.0.103 2w' };

/** The DeepFace sides: version and gunicorn workers. 0.0.103 runs when its venv exists. */
const DEEPFACE_SIDES: ReadonlyArray<{ side: Exclude<Side, 'ours'>; version: DeepFaceVersion; workers: number }> = [
  { side: 'deepface', version: '0.0.100', workers: 1 },
  { side: 'deepface_2w', version: '0.0.100', workers: 2 },
  { side: 'deepface103', version: '0.0.103', workers: 1 },
  { side: 'deepface103_2w', version: '0.0.103', workers: 2 },
];

export async function serviceSuite(ctx: SuiteContext): Promise<Record<string, unknown>> {
  const dfModels = BENCH_MODELS.filter((m) => m !== 'Facenet' || facenetWeightsFile() !== null);
  const with103 = existsSync(deepFacePython('0.0.103'));
  if (!with103) ctx.log(`service: no DeepFace 0.0.103 venv (${deepFacePython('0.0.103')}): only the 0.0.100 baseline runs; \`npm run bench:setup\` makes it`);
  const dfSides = DEEPFACE_SIDES.filter((d) => d.version === '0.0.100' || with103);
  ctx.log(`service: starting DeepFace ${dfSides.map((d) => `${d.version} ${d.workers}w`).join(', ')} (gunicorn, ${dfModels.join(', ')} preloaded) and facecompute serve`);
  const startDf = async (d: (typeof DEEPFACE_SIDES)[number]) => {
    const df = await startDeepFace({ logDir: ctx.logDir, label: `service-deepface-${d.version}-${d.workers}w`, home: mkdtempSync(join(tmpdir(), 'deepface-home-')), workers: d.workers, models: dfModels, version: d.version });
    // Every worker loads the models on its own; a few answers make it likely both have.
    await deepFaceReady(df, verifyBody('opencv'), 600_000).catch(async (err: unknown) => {
      await df.stop();
      throw err;
    });
    return df;
  };
  // 0.0.103's Facenet stand-in is our converted graph, which exists once our service has loaded
  // Facenet: its APIs start after ours is up.
  const first = dfSides.filter((d) => d.version === '0.0.100');
  const started = await Promise.allSettled([startOurs({ logDir: ctx.logDir, label: 'service-ours', eventLoopProbe: true, models: BENCH_MODELS }), ...first.map(startDf)]);
  const later = started[0]?.status === 'fulfilled' ? await Promise.allSettled(dfSides.filter((d) => d.version !== '0.0.100').map(startDf)) : [];
  const ours = started[0]?.status === 'fulfilled' ? (started[0].value as OurService) : null;
  const dfStarted = [...started.slice(1), ...later];
  const dfs = new Map<Side, DeepFaceService>();
  dfStarted.forEach((r, i) => {
    if (r.status === 'fulfilled') dfs.set(dfSides[i]!.side, r.value as DeepFaceService);
  });
  try {
    if (!ours || dfs.size !== dfSides.length) {
      const why = [...started, ...later].map((s) => (s.status === 'rejected' ? String((s.reason as Error).message ?? s.reason) : '')).filter(Boolean);
      throw new Error(`could not start the services: ${why.join('; ')}`);
    }
    const df1 = dfs.get('deepface')!;
    const df2 = dfs.get('deepface_2w')!;
    // Every counted cell runs with the probe off; the event loop is sampled in cells of its own.
    await armEventLoop(ours, false);
    const key = await createKey(ours.consoleUrl);
    const auth = { authorization: `Bearer ${key}` };
    const models = BENCH_MODELS.filter((m) => ours.models.includes(m) && dfModels.includes(m));
    const notServed = BENCH_MODELS.filter((m) => !models.includes(m));
    if (notServed.length) ctx.log(`service: not compared (weights not installed): ${notServed.join(', ')}`);
    const urls = { ours: `${ours.gatewayUrl}/verify` } as Record<Side, string>;
    const roots = { ours: ours.proc.pid } as Record<Side, number>;
    for (const [side, df] of dfs) {
      urls[side] = `${df.url}/verify`;
      roots[side] = df.proc.pid;
    }
    const headers = (side: Side) => (side === 'ours' ? auth : {});
    const sides: Side[] = ['ours', ...dfSides.map((d) => d.side)];

    const perModel: Array<Record<string, unknown>> = [];
    for (const model of models) {
      const body = verifyBody('opencv', model);
      // One answer from each, to check the bodies are accepted and the answers agree.
      const first = {} as Record<Side, Awaited<ReturnType<typeof postJson>>>;
      for (const side of sides) {
        first[side] = await postJson(urls[side], body, headers(side));
        if (first[side].status !== 200) throw new Error(`${side} /verify (${model}) answered ${first[side].status}: ${JSON.stringify(first[side].json).slice(0, 300)}`);
      }
      const pick = (j: unknown) => {
        const o = j as { verified?: boolean; distance?: number; facial_areas?: unknown };
        return { verified: o.verified, distance: o.distance, facial_areas: o.facial_areas };
      };
      const agreement = { ours: pick(first.ours.json), deepface: pick(first.deepface.json), ...(first.deepface103 ? { deepface103: pick(first.deepface103.json) } : {}) };
      // Each gunicorn worker initialises on its own: concurrent answers warm every worker of the 2w APIs.
      for (const side of sides.filter((x) => x.endsWith('_2w'))) await Promise.all(Array.from({ length: 4 }, () => postJson(urls[side], body)));
      // A second answer from each sizes the runs (the first may still pay lazy initialisation).
      const oneMs = {} as Record<Side, number>;
      for (const side of sides) oneMs[side] = (await postJson(urls[side], body, headers(side))).ms;
      const seconds = (side: Side, c: number) => {
        const b = budgets(ctx.quick, oneMs[side] / 1000, oneMs.ours / 1000);
        return side === 'ours' ? b.oursSeconds(c) : b.dfSeconds(c);
      };
      ctx.log(`service ${model}: one verify each: ours ${JSON.stringify(agreement.ours)} in ${first.ours.ms.toFixed(0)} ms; DeepFace ${JSON.stringify(agreement.deepface)} in ${first.deepface.ms.toFixed(0)} ms`);

      const runSide = async (side: Side, c: number, b: string, eventLoop: boolean): Promise<{ cell: Cell; eld: ReturnType<typeof readEventLoop> }> => {
        const run = () => load({ url: urls[side], body: b, headers: headers(side), connections: c, seconds: seconds(side, c), ...(side === 'ours' ? {} : { timeoutS: 600 }) });
        // The next side must not start while this one still works off the requests the run abandoned
        // (DeepFace's sync workers finish every queued request: up to ~10 s of both cores after c16).
        const quietAfter = async () => {
          const quiet = await settle(roots[side]);
          if (quiet.waitedMs > 1500 || !quiet.quiet) ctx.log(`service: ${side} c${c} went on for ${(quiet.waitedMs / 1000).toFixed(1)} s after its run (${quiet.cpuS.toFixed(1)} CPU s, not counted)${quiet.quiet ? '' : ', still busy at the timeout'}`);
        };
        const cell = await measured(roots[side], run);
        await quietAfter();
        if (side !== 'ours' || !eventLoop) return { cell, eld: [] };
        // The same load again with the probe on: its delays, not its requests, are kept.
        await armEventLoop(ours, true);
        resetEventLoop(ours);
        await run();
        await new Promise((r) => setTimeout(r, 300)); // the probe writes every 200 ms
        const eld = ours.eldDir ? readEventLoop(ours.eldDir) : [];
        await armEventLoop(ours, false);
        await quietAfter();
        return { cell, eld };
      };
      const levels: Array<{ connections: number; ours: Cell; deepface: Cell; deepface_2w: Cell; deepface103?: Cell; deepface103_2w?: Cell; event_loop: ReturnType<typeof readEventLoop> }> = [];
      for (const [i, c] of LEVELS.entries()) {
        const got = {} as Record<Side, { cell: Cell; eld: ReturnType<typeof readEventLoop> }>;
        for (const side of rotation(sides, i)) got[side] = await runSide(side, c, body, true);
        const more = got.deepface103 && got.deepface103_2w ? { deepface103: got.deepface103.cell, deepface103_2w: got.deepface103_2w.cell } : {};
        levels.push({ connections: c, ours: got.ours.cell, deepface: got.deepface.cell, deepface_2w: got.deepface_2w.cell, ...more, event_loop: got.ours.eld });
        const say = (name: string, x: Cell) => `${name} ${x.rps.toFixed(2)} req/s p50 ${x.p50_ms} ms ${x.cpu_ms_per_request?.toFixed(0)} CPU ms/req`;
        ctx.log(`service ${model} c${c}: ${sides.map((side) => say(SIDE_LABEL[side], got[side].cell)).join('; ')}`);
      }
      // The opencv detector (a Haar cascade, the same algorithm on both sides) dominates a request;
      // one more c16 run with yunet shows the rest of the pipeline with a cheap detector (against the
      // two-worker API only: the suite must stay bounded on a busy machine).
      const ySides: Side[] = ['ours', 'deepface_2w', ...(with103 ? (['deepface103_2w'] as const) : [])];
      const yBody = verifyBody('yunet', model);
      const yOne = await Promise.all(ySides.map((side) => postJson(urls[side], yBody, headers(side))));
      let yunet: { connections: number; ours: Cell; deepface_2w: Cell; deepface103_2w?: Cell } | null = null;
      if (yOne.every((r) => r.status === 200)) {
        const got = {} as Record<Side, Cell>;
        for (const side of ySides) got[side] = (await runSide(side, 16, yBody, false)).cell;
        yunet = { connections: 16, ours: got.ours, deepface_2w: got.deepface_2w, ...(got.deepface103_2w ? { deepface103_2w: got.deepface103_2w } : {}) };
        ctx.log(`service ${model} c16 yunet: ours ${got.ours.rps.toFixed(2)} req/s (${got.ours.cpu_ms_per_request?.toFixed(0)} CPU ms/req); DeepFace 2w ${got.deepface_2w.rps.toFixed(2)} req/s (${got.deepface_2w.cpu_ms_per_request?.toFixed(0)})${got.deepface103_2w ? `; 0.0.103 2w ${got.deepface103_2w.rps.toFixed(2)} req/s (${got.deepface103_2w.cpu_ms_per_request?.toFixed(0)})` : ''}`);
      } else {
        ctx.log(`service ${model} yunet: skipped (${ySides.map((s, k) => `${s} ${yOne[k]?.status}`).join(', ')})`);
      }
      ctx.table(
        ['model', 'c', 'ours req/s', 'DF 1w req/s', 'DF 2w req/s', '× 1w', '× 2w', 'ours p50/p99 ms', 'DF 1w p50/p99', 'DF 2w p50/p99', 'CPU ms/req ours', 'DF 1w', 'DF 2w', 'non2xx/err ours', 'DF 1w', 'DF 2w'],
        levels.map((l) => [
          model,
          l.connections,
          l.ours.rps.toFixed(2),
          l.deepface.rps.toFixed(2),
          l.deepface_2w.rps.toFixed(2),
          (l.ours.rps / l.deepface.rps).toFixed(1),
          (l.ours.rps / l.deepface_2w.rps).toFixed(1),
          `${l.ours.p50_ms}/${l.ours.p99_ms}`,
          `${l.deepface.p50_ms}/${l.deepface.p99_ms}`,
          `${l.deepface_2w.p50_ms}/${l.deepface_2w.p99_ms}`,
          l.ours.cpu_ms_per_request?.toFixed(0) ?? '-',
          l.deepface.cpu_ms_per_request?.toFixed(0) ?? '-',
          l.deepface_2w.cpu_ms_per_request?.toFixed(0) ?? '-',
          `${l.ours.non2xx}/${l.ours.errors + l.ours.timeouts}`,
          `${l.deepface.non2xx}/${l.deepface.errors + l.deepface.timeouts}`,
          `${l.deepface_2w.non2xx}/${l.deepface_2w.errors + l.deepface_2w.timeouts}`,
        ]),
      );
      ctx.table(
        ['model', 'c', 'process', 'event-loop p50 ms', 'p99 ms', 'max ms'],
        levels.flatMap((l) => l.event_loop.map((e) => [model, l.connections, eldLabel(e.argv), e.p50_ms, e.p99_ms, e.max_ms])),
      );
      perModel.push({
        model,
        request: { route: '/verify', model, detector: 'opencv', images: [...SERVICE_PAIR], body_bytes: body.length },
        budgets: { seconds: LEVELS.map((c) => ({ connections: c, ...Object.fromEntries(sides.map((s) => [s, seconds(s, c)])) })), one_verify_ms: oneMs },
        agreement,
        levels,
        yunet_c16: yunet,
      });
    }
    const memory = { ours: treeMemory(ours.proc.pid), deepface: treeMemory(df1.proc.pid), deepface_2w: treeMemory(df2.proc.pid) };
    const df103 = dfs.get('deepface103_2w');
    ctx.log(`service: peak RSS after the load: ours ${memory.ours.peakRssMb.toFixed(0)} MB (${memory.ours.processes.length} processes), DeepFace 1w ${memory.deepface.peakRssMb.toFixed(0)} MB, 2w ${memory.deepface_2w.peakRssMb.toFixed(0)} MB`);
    return {
      deepface_workers: [...DEEPFACE_WORKERS],
      deepface_versions: dfSides.map((d) => ({ side: d.side, version: d.version, workers: d.workers })),
      deepface103_note: with103
        ? 'DeepFace 0.0.103 on its ONNX Runtime engine (bench/deepface/requirements-0.0.103.lock); for Facenet it runs our converted Facenet ONNX as its facenet_weights.onnx (the same Keras weights; its own file is on GitHub and Hugging Face only)'
        : 'not run: no DeepFace 0.0.103 venv',
      deepface103_2w_peak_rss_mb: df103 ? treeMemory(df103.proc.pid).peakRssMb : null,
      models: perModel,
      models_not_served: notServed,
      memory_after_load: {
        models: models,
        ours_peak_rss_mb: memory.ours.peakRssMb,
        deepface_peak_rss_mb: memory.deepface.peakRssMb,
        deepface_2w_peak_rss_mb: memory.deepface_2w.peakRssMb,
        ours_processes: memory.ours.processes,
        deepface_processes: memory.deepface.processes,
        deepface_2w_processes: memory.deepface_2w.processes,
      },
    };
  } finally {
    await Promise.all([...[...dfs.values()].map((d) => d.stop()), ours?.stop()]);
  }
}
