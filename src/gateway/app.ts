/**
 * The REST gateway (contract §2): exactly six routes, as Fastify plugins, one per concern: the
 * request lifecycle every surface shares (src/service/lifecycle/: cleanup on close, the keyed door
 * with REST's key policy and per-request metering), the gateway's request state (request-state.ts),
 * the compute routes (compute-routes.ts) and the open probes (probes.ts). `buildGateway(deps)` builds it over the compute stack it shares with MCP
 * (src/service/configured.ts), with injected dependencies (the accounts store, optionally a limiter,
 * an upstream, a remote-image fetcher), so the integrator and the tests wire the real or fake ones.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { Config } from '../config/index.js';
import { PACKAGE_VERSION } from '../package-root.js';
import type { AccountsPort } from '../accounts/api.js';
import { registerTransportGuards, transportOptions } from '../http/transport-guards.js';
import { registerContractHeaders, requestIdOptions } from '../http/contract-headers.js';
import type { Logger } from '../logging/logger.js';
import { notFound, registerErrorHandling } from '../http/error-handler.js';
import { registerRouteGuard } from '../http/route-guard.js';
import * as S from '../vocabulary/schemas.js';
import type { ComputeService } from '../service/compute-service.js';
import type { Upstream } from '../model-client/client.js';
import type { UpstreamSupervision } from '../model-client/supervised.js';
import type { RemoteFetchOptions, RemoteFetcher } from '../service/inputs/remote-fetch.js';
import type { ComputeQueue } from '../service/queue.js';
import type { FetchBudget } from '../service/limits/fetch-budget.js';
import type { Limiter } from '../service/limits/limiter.js';
import { createComputeStack } from '../service/configured.js';
import { createMetrics, registerReplicaMetrics, type GatewayMetrics } from './metrics.js';
import { useJsonBodyParser } from '../http/json-body.js';
import { BodyBudget } from '../http/body-budget.js';
import type { UsageSink } from '../accounts/usage/recorder.js';
import { InFlight, requestState } from './plugins/request-state.js';
import { computeRoutes, compareTargetsLift } from './plugins/compute-routes.js';
import { probes } from './plugins/probes.js';
import { requestCleanup } from '../service/lifecycle/cleanup.js';
import { keyedDoor } from '../service/lifecycle/door.js';
import { REST_KEYS } from '../service/lifecycle/authenticate.js';
import { Metering } from '../service/lifecycle/metering.js';
import { registerConsoleCors } from './cors.js';

/**
 * The validator's options: bodies are checked, never changed, and the first error is the answer.
 * unicode: false counts string lengths in UTF-16 units (.length) instead of code points: with code
 * points, `minLength: 1` on an image walked every character of a 150 KB base64 string, about 1 ms of
 * the event loop per image. The only other length limits are on ASCII names.
 */
export const AJV_OPTIONS = { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, unicode: false } as const;

export const VERSION: string = PACKAGE_VERSION;

export interface GatewayDeps {
  config: Config;
  accounts: AccountsPort;
  logger: Logger;
  limiter?: Limiter;
  upstream?: Upstream;
  /** Shared with the MCP endpoint when both run in one process (`facecompute serve`). */
  queue?: ComputeQueue;
  /** Overrides for the remote fetcher (tests inject a fake DNS resolver here). */
  remoteFetch?: Partial<RemoteFetchOptions>;
  /** The model server is a supervised child (`serve`): restarts answer 503 service_warming, not 502. */
  supervision?: UpstreamSupervision;
  /** Request bodies held at once in this process; `serve` shares it with the MCP endpoint. */
  bodyBudget?: BodyBudget;
  /** Where each authenticated request's usage goes once answered (src/accounts/usage/recorder.ts). */
  usage?: UsageSink;
}

export interface Gateway {
  app: FastifyInstance;
  compute: ComputeService;
  limiter: Limiter;
  queue: ComputeQueue;
  upstream: Upstream;
  metrics: GatewayMetrics;
  fetcher: RemoteFetcher | null;
  /** The per-account budget of remote fetches (null when remote images are off); `serve` shares it with MCP. */
  fetchBudget: FetchBudget | null;
  bodyBudget: BodyBudget;
  /** Stop taking new work: new requests get 503 gateway_draining with Connection: close. */
  startDraining(): void;
  isDraining(): boolean;
  /** Waits for in-flight requests (up to timeoutMs), then closes listeners and clients. */
  close(timeoutMs?: number): Promise<void>;
}

export async function buildGateway(deps: GatewayDeps): Promise<Gateway> {
  const { config: cfg, accounts, logger } = deps;
  // The compute stack REST shares with MCP (src/service/configured.ts); metrics read its queue lazily.
  const metrics: GatewayMetrics = createMetrics(() => stack.queue.stats());
  const stack = await createComputeStack(cfg, {
    limiter: deps.limiter,
    queue: deps.queue,
    upstream: deps.upstream,
    supervision: deps.supervision,
    remoteFetch: deps.remoteFetch,
    logger: logger.child({ component: 'upstream' }),
    onUpstreamError: (k) => metrics.upstreamErrors.inc({ kind: k }),
    onQueueWait: (ms) => metrics.queueWait.observe(ms / 1000),
  });
  const { compute, fetcher, fetchBudget, limiter, queue, upstream } = stack;
  if (stack.client.replicas) registerReplicaMetrics(metrics.registry, stack.client.replicas.bind(stack.client));

  const bodyBudget = deps.bodyBudget ?? new BodyBudget(cfg.capacity.maxInflightBodyBytes, cfg.capacity.maxInflightBodyBytesPerAccount);
  const inFlight = new InFlight();

  const app = Fastify({
    loggerInstance: logger.child({ component: 'gateway' }) as unknown as FastifyBaseLogger,
    bodyLimit: cfg.limits.maxRequestBytes,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    // Our own one-line-per-request log (onResponse) replaces fastify's pair of lines.
    ...requestIdOptions({ disableRequestLogging: true }),
    ajv: { customOptions: AJV_OPTIONS },
    // Bounds slow clients (a whole request must arrive in time); parser refusals in the contract's shape.
    ...transportOptions(cfg.capacity.requestReceiveTimeoutMs),
  });
  // First: every later hook may register what its request gives back on close.
  await app.register(requestCleanup);

  registerContractHeaders(app);
  registerTransportGuards(app);
  registerRouteGuard(app, { notFound });
  registerErrorHandling(app, {
    notFound,
    onError: (req, e) => {
      if (req.fc) req.fc.error = e.code;
      if (e.code === 'rate_limited' || e.code === 'queue_full' || e.code === 'queue_timeout') metrics.limiterRejections.inc({ reason: e.code });
    },
  });

  await app.register(multipart, { throwFileSizeLimit: true });
  useJsonBodyParser(app, { maxValues: cfg.limits.maxJsonValues, buffers: compute.bodyBuffers, lift: compareTargetsLift(compute, metrics, cfg.limits.maxTargets) });
  // The console's Try it page calls the API from the browser (src/gateway/cors.ts).
  await registerConsoleCors(app, cfg.accounts.publicConsoleUrl);
  await app.register(requestState, { metrics, inFlight, usage: deps.usage });
  app.addSchema(S.errorResponse);

  /** A route's body limit: /compare carries vectors and has its own (FACECOMPUTE_MAX_COMPARE_BYTES). */
  const bodyLimitOf = (req: FastifyRequest): number => req.routeOptions.bodyLimit ?? cfg.limits.maxRequestBytes;
  const metering = new Metering({
    accounts,
    limiter,
    windowMs: cfg.capacity.rateLimitWindowMs,
    concurrent: cfg.capacity.rateLimitConcurrent,
    strikes: { limit: cfg.capacity.strikeLimit, windowMs: cfg.capacity.strikeWindowMs },
    fetchBudget,
  });
  // The keyed door on the routes whose config says `keyed: true` (the compute routes).
  await app.register(keyedDoor, {
    accounts,
    metering,
    bodyBudget,
    policy: REST_KEYS,
    meter: 'request',
    bodyLimitOf,
    refuseDeclaredOver: true,
    queue,
    uploadRate: { minBytesPerS: cfg.capacity.minUploadBytesPerS, graceMs: cfg.capacity.uploadGraceMs },
  });
  await app.register(probes, {
    version: VERSION,
    compute,
    limiter,
    upstream,
    readinessTimeoutMs: cfg.capacity.readinessTimeoutMs,
    readinessCacheMs: cfg.capacity.readinessCacheMs,
  });
  await app.register(computeRoutes, {
    compute,
    metering,
    metrics,
    maxImageBytes: cfg.limits.maxImageBytes,
    maxCompareBytes: cfg.limits.maxCompareBytes,
    bodyLimitOf,
  });

  return {
    app,
    compute,
    limiter,
    queue,
    upstream,
    metrics,
    fetcher,
    fetchBudget,
    bodyBudget,
    startDraining() {
      inFlight.draining = true;
    },
    isDraining: () => inFlight.draining,
    async close(timeoutMs = cfg.capacity.drainTimeoutMs) {
      inFlight.draining = true;
      await inFlight.idle(timeoutMs);
      await app.close();
      await upstream.close().catch(() => undefined);
      await limiter.close().catch(() => undefined);
      await fetchBudget?.close().catch(() => undefined);
    },
  };
}
