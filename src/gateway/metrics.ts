/** Prometheus metrics, served only on the admin listener (FACECOMPUTE_METRICS_HOST:FACECOMPUTE_METRICS_PORT). */
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { QueueStats } from '../service/queue.js';
import { listenHttp } from '../http/listen.js';
import { ServiceError } from '../errors/index.js';
import { contractHeaders, requestIdFrom } from '../http/contract-headers.js';
import type { ReplicaSnapshot } from '../model-client/replicas.js';

export interface GatewayMetrics {
  registry: Registry;
  requests: Counter<'route' | 'code'>;
  latency: Histogram<'route'>;
  queueWait: Histogram;
  upstreamErrors: Counter<'kind'>;
  limiterRejections: Counter<'reason'>;
  /** Binary /compare targets by how they were read: compared as they arrived, or kept in one buffer. */
  compareTargets: Counter<'path'>;
  /** Large JSON /compare bodies whose `targets` rows were read natively (src/http/json-body.ts). */
  compareJsonLifted: Counter;
}

export function createMetrics(queueStats: () => QueueStats): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'facecompute_gateway_' });
  const requests = new Counter({ name: 'facecompute_gateway_requests_total', help: 'Requests by route and error code (ok for success).', labelNames: ['route', 'code'] as const, registers: [registry] });
  const latency = new Histogram({ name: 'facecompute_gateway_request_duration_seconds', help: 'Request latency by route.', labelNames: ['route'] as const, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] });
  const queueWait = new Histogram({ name: 'facecompute_gateway_queue_wait_seconds', help: 'Time spent waiting for a compute slot.', buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers: [registry] });
  const upstreamErrors = new Counter({ name: 'facecompute_gateway_upstream_errors_total', help: 'Model-server errors by kind.', labelNames: ['kind'] as const, registers: [registry] });
  const limiterRejections = new Counter({ name: 'facecompute_gateway_limiter_rejections_total', help: 'Requests refused by the rate limiter or the queue.', labelNames: ['reason'] as const, registers: [registry] });
  const compareTargets = new Counter({ name: 'facecompute_gateway_compare_binary_targets_total', help: 'Binary /compare targets parts read: path streamed (compared as they arrived) or contiguous (kept in one buffer, then compared).', labelNames: ['path'] as const, registers: [registry] });
  const compareJsonLifted = new Counter({ name: 'facecompute_gateway_compare_json_targets_lifted_total', help: 'JSON /compare bodies whose targets rows were read natively as float32, off the event loop, and left out of JSON.parse.', registers: [registry] });
  new Gauge({ name: 'facecompute_gateway_queue_depth', help: 'Compute requests waiting for a slot.', registers: [registry], collect() { this.set(queueStats().waiting); } });
  new Gauge({ name: 'facecompute_gateway_queue_service_seconds', help: 'Moving average of the time a compute job holds its slot (the admission estimate uses it).', registers: [registry], collect() { this.set((queueStats().serviceMs ?? 0) / 1000); } });
  new Gauge({ name: 'facecompute_gateway_queue_wait_factor', help: 'Calibration of the admission estimate: actual ÷ estimated queue waits (mean + 2 SD).', registers: [registry], collect() { this.set(queueStats().waitFactor); } });
  new Gauge({ name: 'facecompute_gateway_queue_shed', help: 'Waiting compute requests shed (503 queue_full) since start because the estimate said they could no longer start before their deadline.', registers: [registry], collect() { this.set(queueStats().shed); } });
  new Gauge({ name: 'facecompute_gateway_upstream_in_flight', help: 'Compute requests running against the model servers.', registers: [registry], collect() { this.set(queueStats().running); } });
  return { registry, requests, latency, queueWait, upstreamErrors, limiterRejections, compareTargets, compareJsonLifted };
}

/** The model-server replicas as this process sees them (src/model-client/replicas.ts). */
export function registerReplicaMetrics(registry: Registry, snapshot: () => ReplicaSnapshot[]): void {
  new Gauge({
    name: 'facecompute_gateway_model_server_replicas',
    help: 'Model-server replicas known, by state (up: in rotation; down: ejected, probed until ready).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const s = snapshot();
      this.set({ state: 'up' }, s.filter((r) => r.state === 'up').length);
      this.set({ state: 'down' }, s.filter((r) => r.state === 'down').length);
    },
  });
  new Gauge({
    name: 'facecompute_gateway_model_server_replica_requests',
    help: 'Requests sent to each current replica since it joined (retries and probes included).',
    labelNames: ['replica', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of snapshot()) this.set({ replica: r.origin, state: r.state }, r.requests);
    },
  });
}

/** The admin listener answers like the public surfaces: contract headers, errors as {error, detail}. */
export async function startMetricsServer(m: GatewayMetrics, port: number, host = '127.0.0.1'): Promise<Server> {
  const server = createServer((req, res) => {
    const headers = contractHeaders(requestIdFrom(req.headers['x-request-id']));
    const fail = (e: ServiceError) => res.writeHead(e.status, { ...headers, 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(e.toBody()));
    if (req.method === 'GET' && req.url === '/metrics') {
      m.registry.metrics().then(
        (body) => res.writeHead(200, { ...headers, 'content-type': m.registry.contentType }).end(body),
        () => fail(new ServiceError('internal_error', 'the metrics could not be collected')),
      );
    } else fail(new ServiceError('not_found', 'this listener serves GET /metrics only'));
  });
  await listenHttp('metrics listener', server, host, port);
  return server;
}
