/**
 * Closed-loop HTTP load (undici), bounded in time, against loopback only.
 * Throughput counts only 2xx answers: a fast error is not a served request.
 */
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
  /** Closed loop for this long. */
  seconds: number;
  /** Per-request timeout; generous because DeepFace queues c16 on one sync worker. */
  timeoutS?: number;
}

/**
 * Closed-loop load: `connections` workers, each sending the next request when its previous answer
 * arrives, for `seconds`. Answers still in flight at the end are not counted (their latency would
 * depend on when the run stopped), the same rule autocannon applies.
 *
 * Latency is measured here rather than by autocannon: against a server that closes the connection
 * after every answer, as gunicorn's sync worker does, autocannon reports about 4x the real latency
 * (checked against a local server that answers in 300 ms: autocannon's p50 was 1208 ms). Requests per
 * second from autocannon were right; the same generator is used for both sides anyway.
 */
export async function load(spec: LoadSpec): Promise<LoadResult> {
  const { Agent, request } = await import('undici');
  const timeoutMs = (spec.timeoutS ?? 120) * 1000;
  const agent = new Agent({ connections: spec.connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const t0 = performance.now();
  const deadline = t0 + spec.seconds * 1000;
  const headers = { 'content-type': 'application/json', ...spec.headers };
  let stopped = false;
  const worker = async () => {
    while (!stopped && performance.now() < deadline) {
      const s = performance.now();
      try {
        const res = await request(spec.url, { method: 'POST', body: spec.body, headers, dispatcher: agent });
        await res.body.text();
        const end = performance.now();
        if (end > deadline) break;
        latencies.push(end - s);
        if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        else {
          non2xx++;
          statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
        }
      } catch (err) {
        if (stopped || performance.now() > deadline) break;
        const code = (err as { code?: string }).code ?? '';
        if (code.includes('TIMEOUT')) timeouts++;
        else errors++;
      }
    }
  };
  const workers = Array.from({ length: spec.connections }, worker);
  // At the deadline, in-flight requests are abandoned: closing the agent ends their sockets.
  const timer = setTimeout(() => {
    stopped = true;
    void agent.destroy().catch(() => undefined);
  }, spec.seconds * 1000 + 5);
  await Promise.all(workers);
  clearTimeout(timer);
  stopped = true;
  await agent.destroy().catch(() => undefined);
  const seconds = Math.min(performance.now(), deadline) / 1000 - t0 / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies.length ? (latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil((p / 100) * latencies.length) - 1))] as number) : NaN);
  const r1 = (x: number) => Math.round(x * 10) / 10;
  return {
    connections: spec.connections,
    seconds,
    ok,
    non2xx,
    errors,
    timeouts,
    rps: ok / seconds,
    p50_ms: r1(pct(50)),
    p90_ms: r1(pct(90)),
    p99_ms: r1(pct(99)),
    mean_ms: r1(latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length)),
    max_ms: r1(latencies[latencies.length - 1] ?? NaN),
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
