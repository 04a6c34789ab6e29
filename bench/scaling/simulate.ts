/**
 * A discrete-event simulation of facecompute's tiers in series, for the capacity model of
 * docs/scaling.md: Poisson arrivals; each tier is a set of replicas, each replica `cores` servers with
 * its own FCFS queue; a request joins the replica with the fewest outstanding requests (the gateway's
 * least-outstanding balancing) and its service time is drawn from that tier's measured samples. A
 * request visits every tier once, in order. What it leaves out is said in docs/scaling.md.
 * test/scaling-sim.test.ts checks it against Erlang C.
 */

export interface TierSpec {
  name: string;
  replicas: number;
  /** Requests one replica serves at once (its cores, or 1 for single-threaded Redis). */
  cores: number;
  /** Service times in ms, drawn uniformly at random (measured per-request CPU times). */
  samples: number[];
}

export interface SimResult {
  offered_rps: number;
  completed: number;
  throughput_rps: number;
  latency_ms: { mean: number; p50: number; p99: number };
  tiers: Array<{ name: string; utilization: number; mean_wait_ms: number }>;
  /** True when a queue was still growing at the end: the offered load is past capacity. */
  saturated: boolean;
}

/** Deterministic PRNG (mulberry32), so that a simulated curve is reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Ev { t: number; seq: number; kind: 0 | 1; req: number; tier: number; replica: number }

/** A binary min-heap of events by time, then insertion order. */
class Heap {
  private a: Ev[] = [];
  get size(): number {
    return this.a.length;
  }
  push(e: Ev): void {
    const a = this.a;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(a[p]!, a[i]!)) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): Ev {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l]!, a[m]!)) m = l;
        if (r < a.length && less(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}
const less = (x: Ev, y: Ev) => x.t < y.t || (x.t === y.t && x.seq < y.seq);

export function simulate(tiers: TierSpec[], offeredRps: number, requests: number, seed = 1): SimResult {
  const rand = rng(seed);
  const exp = (rate: number) => -Math.log(1 - rand()) / rate;
  const draw = (s: number[]) => s[Math.floor(rand() * s.length)]!;
  const warmup = Math.floor(requests / 10);
  const heap = new Heap();
  let seq = 0;
  // Per tier, per replica: busy servers, FCFS queue, outstanding count.
  const busy = tiers.map((t) => new Array<number>(t.replicas).fill(0));
  const queues = tiers.map((t) => Array.from({ length: t.replicas }, () => [] as number[]));
  const outstanding = tiers.map((t) => new Array<number>(t.replicas).fill(0));
  const busyTime = tiers.map(() => 0);
  const waitSum = tiers.map(() => 0);
  const arrivedAt = new Float64Array(requests);
  const enqueuedAt = new Float64Array(requests);
  const latencies: number[] = [];
  let firstMeasuredArrival = Infinity;
  let lastDeparture = 0;

  const start = (tier: number, replica: number, req: number, now: number) => {
    busy[tier]![replica]!++;
    if (req >= warmup) waitSum[tier]! += now - enqueuedAt[req]!;
    const s = draw(tiers[tier]!.samples);
    if (req >= warmup) busyTime[tier]! += s;
    heap.push({ t: now + s, seq: seq++, kind: 1, req, tier, replica });
  };
  const enter = (tier: number, req: number, now: number) => {
    // Least outstanding requests; ties to the lowest index.
    const out = outstanding[tier]!;
    let best = 0;
    for (let r = 1; r < out.length; r++) if (out[r]! < out[best]!) best = r;
    out[best]!++;
    enqueuedAt[req] = now;
    if (busy[tier]![best]! < tiers[tier]!.cores) start(tier, best, req, now);
    else queues[tier]![best]!.push(req);
  };

  let t = 0;
  for (let i = 0; i < requests; i++) {
    t += exp(offeredRps / 1000);
    arrivedAt[i] = t;
    heap.push({ t, seq: seq++, kind: 0, req: i, tier: 0, replica: 0 });
  }
  while (heap.size > 0) {
    const e = heap.pop();
    if (e.kind === 0) {
      if (e.req >= warmup) firstMeasuredArrival = Math.min(firstMeasuredArrival, e.t);
      enter(0, e.req, e.t);
      continue;
    }
    busy[e.tier]![e.replica]!--;
    outstanding[e.tier]![e.replica]!--;
    const q = queues[e.tier]![e.replica]!;
    if (q.length > 0) start(e.tier, e.replica, q.shift()!, e.t);
    if (e.tier + 1 < tiers.length) enter(e.tier + 1, e.req, e.t);
    else if (e.req >= warmup) {
      latencies.push(e.t - arrivedAt[e.req]!);
      lastDeparture = Math.max(lastDeparture, e.t);
    }
  }
  latencies.sort((a, b) => a - b);
  const span = lastDeparture - firstMeasuredArrival;
  const arrivalSpan = arrivedAt[requests - 1]! - arrivedAt[warmup]!;
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
  const n = latencies.length;
  return {
    offered_rps: offeredRps,
    completed: n,
    throughput_rps: (n / span) * 1000,
    latency_ms: { mean: latencies.reduce((s, x) => s + x, 0) / n, p50: q(0.5), p99: q(0.99) },
    tiers: tiers.map((tier, i) => ({ name: tier.name, utilization: busyTime[i]! / (span * tier.replicas * tier.cores), mean_wait_ms: waitSum[i]! / n })),
    // Draining the backlog took much longer than the arrivals did: the queues grew without bound.
    saturated: span > arrivalSpan * 1.1,
  };
}

/**
 * The highest offered load (requests/s) whose simulated p99 stays under `sloMs`, by bisection over
 * [0, ceiling]; `ceiling` is a load known to be past capacity.
 */
export function maxLoadWithin(tiers: TierSpec[], sloMs: number, ceiling: number, requests = 20_000): { rps: number; at: SimResult } {
  let lo = 0;
  let hi = ceiling;
  let best: SimResult | null = null;
  for (let i = 0; i < 14; i++) {
    const mid = (lo + hi) / 2;
    const r = simulate(tiers, mid, requests, 7 + i);
    if (!r.saturated && r.latency_ms.p99 <= sloMs) {
      lo = mid;
      best = r;
    } else hi = mid;
  }
  return { rps: lo, at: best ?? simulate(tiers, lo || 1e-3, requests, 7) };
}
