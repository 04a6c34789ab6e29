/**
 * Closed-loop HTTP load with autocannon (programmatic), bounded in time, against loopback only.
 * Throughput counts only 2xx answers: a fast error is not a served request.
 */
// autocannon ships no typings; this is the part of its API used here.
interface AutocannonResult {
  duration: number;
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latency: { p50: number; p90: number; p99: number; average: number; max: number };
}
type Instance = Promise<AutocannonResult> & { on(event: 'response', fn: (client: unknown, statusCode: number) => void): void; stop(): void };
type Autocannon = (opts: Record<string, unknown>) => Instance;

let cached: Autocannon | null = null;
async function autocannonFn(): Promise<Autocannon> {
  // A variable specifier keeps the untyped package out of the type checker.
  const name = 'autocannon';
  cached ??= ((await import(name)) as { default: Autocannon }).default;
  return cached;
}

export interface LoadResult {
  connections: number;
  seconds: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
  /** Per-status counts other than 2xx, to say what failed. */
  statuses: Record<string, number>;
}

export interface LoadSpec {
  url: string;
  body: string;
  headers?: Record<string, string>;
  connections: number;
  /** Closed loop for this long; or, with `amount`, until that many answers or `seconds` pass. */
  seconds: number;
  amount?: number;
  /** Per-request timeout; generous because DeepFace queues c16 on one sync worker. */
  timeoutS?: number;
}

export async function load(spec: LoadSpec): Promise<LoadResult> {
  const statuses: Record<string, number> = {};
  const autocannon = await autocannonFn();
  const instance = autocannon({
    url: spec.url,
    method: 'POST',
    body: spec.body,
    headers: { 'content-type': 'application/json', ...spec.headers },
    connections: spec.connections,
    ...(spec.amount ? { amount: spec.amount } : { duration: spec.seconds }),
    timeout: spec.timeoutS ?? 120,
  });
  // A slow server (DeepFace at c16) gets a count of requests, capped in time so the run is bounded.
  const cap = spec.amount ? setTimeout(() => instance.stop(), spec.seconds * 1000) : null;
  instance.on('response', (_client: unknown, statusCode: number) => {
    if (statusCode < 200 || statusCode >= 300) statuses[String(statusCode)] = (statuses[String(statusCode)] ?? 0) + 1;
  });
  const r = await instance;
  if (cap) clearTimeout(cap);
  const ok = r['2xx'];
  const seconds = r.duration;
  return {
    connections: spec.connections,
    seconds,
    ok,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    rps: ok / seconds,
    p50_ms: r.latency.p50,
    p90_ms: r.latency.p90,
    p99_ms: r.latency.p99,
    mean_ms: r.latency.average,
    max_ms: r.latency.max,
    statuses,
  };
}

/** One request, for checking a body is accepted before timing it. */
export async function postJson(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.text();
  const ms = performance.now() - t0;
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON (DeepFace's HTML error pages)
  }
  return { status: res.status, json, ms };
}
