/**
 * Overload of `facecompute serve` on /verify, loopback only, bounded in time:
 *   node --import tsx bench/resilience/overload.ts [--seconds 20] [--out bench/results/overload.json]
 *
 * Two `serve`s run side by side, loaded one at a time: `deadline` admission (the default, under
 * test) and `capacity` (FACECOMPUTE_QUEUE_ADMISSION=capacity, the behaviour before it: the baseline).
 * For each load level (3× and 10×): the capacity X (req/s) is measured just before, closed loop at
 * the upstream concurrency (8) for `--capacity-seconds`; then each service gets open-loop arrivals
 * (Poisson, seeded, the same pattern for both) at k×X for `--seconds`.
 * Reported per phase: status and error-code counts (goal: only 200, 429 and 503), latency of
 * rejections (goal: p99 ≤ 50 ms) and of successes (goal: none waits past the queue timeout; the
 * server-side queue wait comes from the gateway's own histogram on the metrics listener), RSS of the
 * service's processes before, during and after (goal: flat), and the time from the end of the load to
 * /readiness 200 (goal: within 1 s). Readiness is also polled during the load.
 *
 * Settings that differ from the defaults are the bench's (bench/lib/services.ts: allowance and rate
 * limits raised, they are policy, not capacity) plus FACECOMPUTE_METRICS_PORT for the histogram.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { dirname, join, resolve } from 'node:path';
import { tmpdir, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { freePort, processTree, procMemory } from '../lib/proc.js';
import { createKey, startOurs, type OurService } from '../lib/services.js';
import { machineInfo } from '../lib/machine.js';
import { REPO_ROOT } from '../lib/paths.js';
import { verifyBody } from '../lib/bodies.js';
import { round, summarize } from '../lib/stats.js';
import { load } from '../lib/load.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const SECONDS = Number(arg('seconds', '20'));
const CAPACITY_SECONDS = Number(arg('capacity-seconds', '12'));
const MULTIPLES = arg('multiples', '3,10').split(',').map(Number);
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/overload.json'));
/** The default queue timeout (FACECOMPUTE_QUEUE_TIMEOUT_MS) unless --queue-timeout-ms says otherwise. */
const QUEUE_TIMEOUT_MS = Number(arg('queue-timeout-ms', '0')) || null;
const CONCURRENCY = 8;
/** The detector of the /verify requests (opencv, the default, unless --detector says otherwise). */
const DETECTOR = arg('detector', 'opencv');

interface Outcome {
  at: number;
  status: number;
  error: string | null;
  ms: number;
  retryAfter: number | null;
  id: string;
  /** Epoch ms (performance.timeOrigin + now) when the request was sent and its answer read. */
  sentAt: number;
  doneAt: number;
}

/** The gateway's own record of a request: its log line (`request`, at info, the default level). */
interface ServerSide {
  /** onRequest to onResponse, ms (the log's `ms`). */
  ms: number;
  /** Epoch ms of the log line (onResponse), whole milliseconds. */
  time: number;
}

/** The `request` lines of a gateway log, by request id. */
function serverSide(logPath: string): Map<string, ServerSide> {
  const out = new Map<string, ServerSide>();
  for (const line of readFileSync(logPath, 'utf8').split('\n')) {
    if (!line.includes('"msg":"request"')) continue;
    try {
      const j = JSON.parse(line) as { request_id?: string; ms?: number; time?: number };
      if (j.request_id && typeof j.ms === 'number' && typeof j.time === 'number') out.set(j.request_id, { ms: j.ms, time: j.time });
    } catch {
      // a line cut at the end of the file
    }
  }
  return out;
}

/** Seeded PRNG (mulberry32): the same arrival pattern for both policies. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function rssMb(root: number): number {
  return processTree(root)
    .map((p) => procMemory(p))
    .filter((m) => m !== null && m.name !== 'esbuild')
    .reduce((a, m) => a + m!.vmRssMb, 0);
}

/** The gateway's queue-wait histogram: cumulative counts per upper bound, in seconds. */
async function queueWaits(metricsUrl: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^facecompute_gateway_queue_wait_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

async function readinessStatus(url: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${url}/readiness`, { signal: AbortSignal.timeout(30_000) });
    await r.arrayBuffer();
    return { status: r.status, ms: performance.now() - t0 };
  } catch {
    return { status: 0, ms: performance.now() - t0 };
  }
}

/** The gateway's queue gauges now: jobs running against the model server and jobs waiting. */
async function queueNow(metricsUrl: string): Promise<{ running: number; waiting: number } | null> {
  try {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    const g = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
    return { running: g('facecompute_gateway_upstream_in_flight'), waiting: g('facecompute_gateway_queue_depth') };
  } catch {
    return null;
  }
}

async function openLoop(svc: OurService, key: string, body: string, rate: number, seconds: number, seed: number, pid: number, metricsUrl: string) {
  const agent = new Agent({ connections: 4096, pipelining: 1, headersTimeout: 300_000, bodyTimeout: 300_000, keepAliveTimeout: 10_000 });
  const outcomes: Outcome[] = [];
  const pending: Array<Promise<void>> = [];
  const rand = rng(seed);
  const rss: number[] = [];
  const ready: Array<{ status: number; ms: number }> = [];
  const sampler = setInterval(() => rss.push(rssMb(pid)), 250);
  // Whether the slots stay busy: a policy that refuses too much idles them and loses goodput. Once
  // a second: each scrape runs in the gateway's event loop, whose delays are being measured.
  const depth: Array<{ running: number; waiting: number }> = [];
  const depthSampler = setInterval(() => void queueNow(metricsUrl).then((d) => d && depth.push(d)), 1000);
  // This process's own event-loop delay: an answer read late here inflates the client's times.
  const clientLoop = monitorEventLoopDelay({ resolution: 5 });
  clientLoop.enable();
  // The gateway's (eld-probe.mjs): SIGUSR2 restarts its histogram for this phase; so does that of
  // an idle Node process with the same probe, whose delays are the machine's scheduling alone.
  process.kill(pid, 'SIGUSR2');
  if (svc.eldBaselinePid) process.kill(svc.eldBaselinePid, 'SIGUSR2');
  let polling = true;
  const poller = (async () => {
    while (polling) {
      ready.push(await readinessStatus(svc.gatewayUrl));
      await sleep(500);
    }
  })();
  const t0 = performance.now();
  let next = t0;
  const end = t0 + seconds * 1000;
  while (next < end) {
    const wait = next - performance.now();
    if (wait > 1) await sleep(wait);
    const start = performance.now();
    const id = randomUUID();
    const epoch = (t: number) => performance.timeOrigin + t;
    pending.push(
      (async () => {
        try {
          const res = await request(`${svc.gatewayUrl}/verify`, {
            method: 'POST',
            body,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': id },
            dispatcher: agent,
          });
          const text = await res.body.text();
          let error: string | null = null;
          if (res.statusCode !== 200) {
            try {
              error = (JSON.parse(text) as { error?: string }).error ?? null;
            } catch {
              error = 'unparsable';
            }
          }
          const ra = res.headers['retry-after'];
          const end = performance.now();
          outcomes.push({ at: start - t0, status: res.statusCode, error, ms: end - start, retryAfter: ra === undefined ? null : Number(ra), id, sentAt: epoch(start), doneAt: epoch(end) });
        } catch (err) {
          const end = performance.now();
          outcomes.push({ at: start - t0, status: 0, error: (err as { code?: string }).code ?? 'client_error', ms: end - start, retryAfter: null, id, sentAt: epoch(start), doneAt: epoch(end) });
        }
      })(),
    );
    next += (-Math.log(1 - rand()) / rate) * 1000;
  }
  const loadEnd = performance.now();
  clientLoop.disable();
  clearInterval(depthSampler);
  // The probes write every 200 ms: the last moments of the phase may be missing, not later ones.
  const gatewayLoop = svc.eldDir ? readEld(svc.eldDir, pid) : null;
  const idleLoop = svc.eldDir && svc.eldBaselinePid ? readEld(svc.eldDir, svc.eldBaselinePid) : null;
  // The end of the load: no new arrivals. Readiness must be 200 within 1 s from here.
  let readyAfterMs: number | null = null;
  for (;;) {
    const r = await readinessStatus(svc.gatewayUrl);
    if (r.status === 200) {
      readyAfterMs = performance.now() - loadEnd;
      break;
    }
    if (performance.now() - loadEnd > 60_000) break;
    await sleep(20);
  }
  await Promise.all(pending);
  polling = false;
  await poller;
  const drainedMs = performance.now() - loadEnd;
  await sleep(1000);
  rss.push(rssMb(pid));
  clearInterval(sampler);
  await agent.close();
  const ms = (ns: number) => round(Math.max(0, ns / 1e6 - 5), 1);
  const loops = {
    client: { p50_ms: ms(clientLoop.percentile(50)), p99_ms: ms(clientLoop.percentile(99)), max_ms: ms(clientLoop.max) },
    gateway: gatewayLoop,
    idle_process: idleLoop,
  };
  const mean = (xs: number[]) => round(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length), 2);
  const queue = { samples: depth.length, running_mean: mean(depth.map((d) => d.running)), waiting_mean: mean(depth.map((d) => d.waiting)), idle_slot_samples: depth.filter((d) => d.running < CONCURRENCY).length };
  return { outcomes, rss, ready, readyAfterMs, drainedMs, offered: pending.length, loops, queue, server: serverSide(svc.proc.logPath) };
}

/** The gateway process's event-loop delay over the phase, from bench/lib/eld-probe.mjs. */
function readEld(dir: string, pid: number): { p50_ms: number; p99_ms: number; max_ms: number } | null {
  try {
    const j = JSON.parse(readFileSync(join(dir, `${pid}.json`), 'utf8')) as { p50_ms: number; p99_ms: number; max_ms: number };
    return { p50_ms: j.p50_ms, p99_ms: j.p99_ms, max_ms: j.max_ms };
  } catch {
    return null;
  }
}

/**
 * Where a refusal's time goes, per request, from the client's clock and the gateway's log line
 * (both epoch ms on one machine; the log's time has whole-millisecond resolution):
 * - to_gateway: sent here → the gateway's onRequest (the client's write, the kernel, the gateway's
 *   event loop reaching the request and parsing its headers);
 * - in_gateway: onRequest → onResponse (auth, limits, admission, the answer written);
 * - back: onResponse → the answer read here (the client's event loop).
 */
function decompose(rows: Outcome[], server: Map<string, ServerSide>) {
  const parts = { to_gateway: [] as number[], in_gateway: [] as number[], back: [] as number[] };
  for (const o of rows) {
    const s = server.get(o.id);
    if (!s) continue;
    parts.to_gateway.push(s.time - s.ms - o.sentAt);
    parts.in_gateway.push(s.ms);
    parts.back.push(o.doneAt - s.time);
  }
  const sum = (xs: number[]) => {
    const q = summarize(xs);
    return { p50_ms: round(q.p50, 1), p99_ms: round(q.p99, 1), max_ms: round(q.max, 1) };
  };
  return { matched: parts.in_gateway.length, to_gateway: sum(parts.to_gateway), in_gateway: sum(parts.in_gateway), back: sum(parts.back) };
}

function phaseReport(name: string, rate: number, r: Awaited<ReturnType<typeof openLoop>>, rssBefore: number, queueTimeoutMs: number, waits: { over: number; total: number }) {
  const byCode: Record<string, number> = {};
  for (const o of r.outcomes) {
    const k = o.status === 200 ? '200' : `${o.status} ${o.error ?? ''}`.trim();
    byCode[k] = (byCode[k] ?? 0) + 1;
  }
  const ok = r.outcomes.filter((o) => o.status === 200);
  const rejected = r.outcomes.filter((o) => o.status === 503 || o.status === 429);
  const unexpected = r.outcomes.filter((o) => o.status !== 200 && o.status !== 503 && o.status !== 429);
  const rej = summarize(rejected.map((o) => o.ms));
  const suc = summarize(ok.map((o) => o.ms));
  const retryAfters = rejected.map((o) => o.retryAfter).filter((x): x is number => x !== null);
  const rssPeak = Math.max(...r.rss);
  const rssEnd = r.rss.at(-1)!;
  const readyDuring = r.ready.filter((x) => x.status === 200).length;
  return {
    name,
    offered_rps: round(rate, 1),
    requests: r.outcomes.length,
    // Answers completed during the load only: work left queued at its end is not throughput under load.
    goodput_rps: round(ok.filter((o) => o.at + o.ms <= SECONDS * 1000).length / SECONDS, 2),
    statuses: byCode,
    only_200_429_503: unexpected.length === 0,
    rejections: { n: rejected.length, p50_ms: round(rej.p50, 1), p99_ms: round(rej.p99, 1), max_ms: round(rej.max, 1) },
    rejections_p99_within_50ms: rejected.length === 0 || rej.p99 <= 50,
    rejections_decomposed: decompose(rejected, r.server),
    // Refusals that came after a wait (shed or timed out), not at once.
    rejections_after_1s: rejected.filter((o) => o.ms > 1000).length,
    queue_during_load: r.queue,
    event_loop_delay: r.loops,
    retry_after_s: retryAfters.length > 0 ? { min: Math.min(...retryAfters), max: Math.max(...retryAfters), missing: rejected.length - retryAfters.length } : null,
    successes: { n: ok.length, p50_ms: round(suc.p50, 1), p99_ms: round(suc.p99, 1), max_ms: round(suc.max, 1) },
    queue_timeout_ms: queueTimeoutMs,
    queue_waits_over_timeout: waits.over,
    queue_waits_total: waits.total,
    no_success_waited_past_timeout: waits.over === 0,
    rss_mb: { before: round(rssBefore, 0), peak: round(rssPeak, 0), after: round(rssEnd, 0), growth: round(rssEnd / rssBefore, 2) },
    readiness_during_load: { polls: r.ready.length, ok: readyDuring, p99_ms: round(summarize(r.ready.map((x) => x.ms)).p99, 1) },
    readiness_200_after_load_ms: r.readyAfterMs === null ? null : round(r.readyAfterMs, 1),
    readiness_within_1s: r.readyAfterMs !== null && r.readyAfterMs <= 1000,
    drained_after_load_ms: round(r.drainedMs, 0),
  };
}

/** Waits counted past the timeout: the bucket at or above it, from the cumulative histogram. */
function overTimeout(before: Map<string, number>, after: Map<string, number>, timeoutMs: number): { over: number; total: number } {
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  const bounds = [...after.keys()].filter((k) => k !== '+Inf').map(Number).sort((a, b) => a - b);
  const atOrAbove = bounds.find((b) => b * 1000 >= timeoutMs);
  if (atOrAbove === undefined) return { over: 0, total };
  const within = (after.get(String(atOrAbove)) ?? 0) - (before.get(String(atOrAbove)) ?? 0);
  return { over: total - within, total };
}

async function main(): Promise<void> {
  const logDir = join(tmpdir(), 'facecompute-bench-overload');
  const body = verifyBody(DETECTOR);
  const machine = { ...machineInfo(), loadavg_start: loadavg().map((x) => round(x, 2)) };
  const phases: ReturnType<typeof phaseReport>[] = [];
  const capacities: Record<string, number> = {};
  // Both services run from the start; one is loaded at a time. Each load level is measured on
  // both back to back, at the same offered rate, from a capacity measured just before: the machine
  // is shared, and what it can serve drifts between minutes.
  const services: Array<{ admission: 'deadline' | 'capacity'; svc: OurService; key: string; metricsUrl: string; queueTimeoutMs: number }> = [];
  try {
    for (const admission of ['deadline', 'capacity'] as const) {
      const metricsPort = await freePort();
      const env: Record<string, string> = {
        FACECOMPUTE_QUEUE_ADMISSION: admission,
        FACECOMPUTE_METRICS_PORT: String(metricsPort),
        // The default level: one line per request, whose time the report sets beside the client's.
        FACECOMPUTE_LOG_LEVEL: 'info',
        ...(QUEUE_TIMEOUT_MS ? { FACECOMPUTE_QUEUE_TIMEOUT_MS: String(QUEUE_TIMEOUT_MS) } : {}),
      };
      const svc = await startOurs({ logDir, label: `overload-${admission}`, env, eventLoopProbe: true });
      const key = await createKey(svc.consoleUrl);
      const queueTimeoutMs = QUEUE_TIMEOUT_MS ?? ((await (await fetch(`${svc.gatewayUrl}/capabilities`)).json()) as { limits: { queue_timeout_ms: number } }).limits.queue_timeout_ms;
      services.push({ admission, svc, key, metricsUrl: `http://127.0.0.1:${metricsPort}`, queueTimeoutMs });
      // Warm-up: the first requests of a process are slower.
      await load({ url: `${svc.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${key}` }, connections: CONCURRENCY, seconds: 3 });
    }
    for (const [j, k] of MULTIPLES.entries()) {
      const first = services[0]!;
      const c = await load({ url: `${first.svc.gatewayUrl}/verify`, body, headers: { authorization: `Bearer ${first.key}` }, connections: CONCURRENCY, seconds: CAPACITY_SECONDS });
      if (!(c.rps > 0)) throw new Error('no capacity measured');
      capacities[`${k}x`] = c.rps;
      process.stderr.write(`capacity before ${k}x: ${c.rps} req/s at c${CONCURRENCY} (p50 ${c.p50_ms} ms)\n`);
      // The order alternates between load levels: the machine's load drifts within minutes, and the
      // service loaded second would otherwise always meet the later, usually busier, machine.
      for (const s of j % 2 === 0 ? services : [...services].reverse()) {
        await sleep(2000);
        const rssBefore = rssMb(s.svc.proc.pid);
        const w0 = await queueWaits(s.metricsUrl);
        const rate = c.rps * k;
        const r = await openLoop(s.svc, s.key, body, rate, SECONDS, 1000 + j, s.svc.proc.pid, s.metricsUrl);
        const w1 = await queueWaits(s.metricsUrl);
        const p = phaseReport(`${s.admission} ${k}x`, rate, r, rssBefore, s.queueTimeoutMs, overTimeout(w0, w1, s.queueTimeoutMs));
        phases.push(p);
        process.stderr.write(`${p.name}: ${JSON.stringify({ statuses: p.statuses, rejections: p.rejections, successes: p.successes, late: p.rejections_after_1s, queue: p.queue_during_load, decomposed: p.rejections_decomposed, loops: p.event_loop_delay, waits_over: p.queue_waits_over_timeout, rss: p.rss_mb, ready_after_ms: p.readiness_200_after_load_ms })}\n`);
      }
    }
  } finally {
    for (const s of services) await s.svc.stop();
  }
  const get = (n: string) => phases.find((p) => p.name === n)!;
  const comparison = MULTIPLES.map((k) => {
    const a = get(`deadline ${k}x`);
    const b = get(`capacity ${k}x`);
    return {
      load: `${k}x`,
      rejection_p99_ratio: round(a.rejections.p99_ms / b.rejections.p99_ms, 3),
      success_p99_ratio: round(a.successes.p99_ms / b.successes.p99_ms, 3),
      goodput_ratio: round(a.goodput_rps / b.goodput_rps, 2),
    };
  });
  const result = { machine: { ...machine, loadavg_end: loadavg().map((x) => round(x, 2)) }, detector: DETECTOR, seconds_per_phase: SECONDS, capacity_rps: capacities, phases, deadline_vs_capacity: comparison };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  const lines = [`/verify (Dlib, ${DETECTOR}); capacity ${Object.entries(capacities).map(([k, v]) => `before ${k}: ${round(v, 2)} req/s`).join(', ')} (closed loop, c${CONCURRENCY}); ${SECONDS} s per phase; queue timeout ${phases[0]?.queue_timeout_ms} ms; load average ${machine.loadavg_start.join(' ')} → ${result.machine.loadavg_end.join(' ')}`];
  lines.push('phase | offered req/s | statuses | rejections p50/p99/max ms | successes p50/p99/max ms | waits > timeout | RSS before/peak/after MB | readiness 200 after load');
  for (const p of phases) {
    lines.push(
      `${p.name} | ${p.offered_rps} | ${Object.entries(p.statuses).map(([k, v]) => `${k}: ${v}`).join(', ')} | ${p.rejections.p50_ms}/${p.rejections.p99_ms}/${p.rejections.max_ms} | ${p.successes.p50_ms}/${p.successes.p99_ms}/${p.successes.max_ms} | ${p.queue_waits_over_timeout}/${p.queue_waits_total} | ${p.rss_mb.before}/${p.rss_mb.peak}/${p.rss_mb.after} | ${p.readiness_200_after_load_ms} ms`,
    );
  }
  for (const c of comparison) lines.push(`deadline vs capacity at ${c.load}: rejection p99 ×${c.rejection_p99_ratio}, success p99 ×${c.success_p99_ratio}, goodput ×${c.goodput_ratio}`);
  lines.push(`written ${OUT}`);
  process.stdout.write(lines.join('\n') + '\n');
}

await main();
