/**
 * The REST gateway (contract §2): exactly six routes, one plugin-like section per concern.
 * `buildGateway(deps)` builds it with injected dependencies (the accounts store, optionally a limiter,
 * an upstream, a remote-image fetcher), so the integrator and the tests wire the real or fake ones.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { Config } from '../config/index.js';
import { PACKAGE_VERSION } from '../package-root.js';
import type { AccountsPort, AuthenticatedKey } from '../accounts/api.js';
import { ServiceError, type ErrorCode } from '../errors/index.js';
import { consumesCall } from '../accounts/charging.js';
import { registerTransportGuards, transportOptions } from '../http/transport-guards.js';
import { registerContractHeaders, requestIdOptions } from '../http/contract-headers.js';
import type { Logger } from '../logging/logger.js';
import { registerErrorHandling, sendError } from '../http/error-handler.js';
import * as S from '../vocabulary/schemas.js';
import type { ComputeService, VerifyBody, RepresentBody, CompareBody } from '../service/compute-service.js';
import type { Upstream } from '../model-client/client.js';
import type { UpstreamSupervision } from '../model-client/supervised.js';
import type { RemoteFetchOptions, RemoteFetcher } from '../service/inputs/remote-fetch.js';
import type { AdmissionTicket, ComputeQueue } from '../service/queue.js';
import type { Limiter } from '../service/limits/limiter.js';
import { createComputeStack } from '../service/configured.js';
import { strikeGuard } from '../service/limits/strikes.js';
import { createMetrics, registerReplicaMetrics, type GatewayMetrics } from './metrics.js';
import { parseMultipart } from './multipart.js';
import { BufferPool } from '../service/buffer-pool.js';
import type { TargetStream } from '../native/compare-stream.js';
import { compareJson } from '../service/compare-result.js';
import { useJsonBodyParser } from '../http/json-body.js';
import { BodyBudget } from '../http/body-budget.js';
import type { UsageSink } from '../accounts/usage/recorder.js';
import { recordUsage } from './usage.js';
import { registerConsoleCors } from './cors.js';

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
  bodyBudget: BodyBudget;
  /** Stop taking new work: new requests get 503 gateway_draining with Connection: close. */
  startDraining(): void;
  isDraining(): boolean;
  /** Waits for in-flight requests (up to timeoutMs), then closes listeners and clients. */
  close(timeoutMs?: number): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthenticatedKey;
    uploads?: Map<string, Buffer>;
    binaryTargets?: Uint8Array;
    streamedTargets?: TargetStream;
    fc?: RequestState;
  }
}

/** Per-request bookkeeping of a gateway request, released once whatever way the request ends. */
interface RequestState {
  t0: number;
  /** Counted in the in-flight total that draining waits for. */
  counted: boolean;
  /** The account's concurrent-request slot this request holds (null: none). */
  slot: string | null;
  /** A free call is reserved; `settled` once the answer decided whether it stays consumed. */
  consumed: boolean;
  settled: boolean;
  /** The reserved call was given back. */
  refunded: boolean;
  /** The error code of the answer, when it is an error. */
  error: ErrorCode | null;
  finished: boolean;
  /** The compute queue's place reserved at admission (src/service/queue.ts), until the job queues. */
  ticket?: AdmissionTicket;
}

function bearer(req: FastifyRequest): string | null {
  const h = req.headers['authorization'];
  if (typeof h === 'string' && h.length > 0) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (!m) throw new ServiceError('invalid_api_key', 'the Authorization header must be "Bearer <key>"');
    return m[1]!;
  }
  const k = req.headers['x-api-key'];
  if (typeof k === 'string' && k.length > 0) return k.trim();
  return null;
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
  const { compute, fetcher, limiter, queue, upstream } = stack;
  if (stack.client.replicas) registerReplicaMetrics(metrics.registry, stack.client.replicas.bind(stack.client));

  const bodyBudget = deps.bodyBudget ?? new BodyBudget(cfg.capacity.maxInflightBodyBytes);
  let draining = false;
  let inFlight = 0;
  const idleWaiters: Array<() => void> = [];

  const app = Fastify({
    loggerInstance: logger.child({ component: 'gateway' }) as unknown as FastifyBaseLogger,
    bodyLimit: cfg.limits.maxRequestBytes,
    exposeHeadRoutes: false,
    return503OnClosing: false,
    // Our own one-line-per-request log (onResponse) replaces fastify's pair of lines.
    ...requestIdOptions({ disableRequestLogging: true }),
    // unicode: false counts string lengths in UTF-16 units (.length) instead of code points: with
    // code points, `minLength: 1` on an image walked every character of a 150 KB base64 string,
    // about 1 ms of the event loop per image. The only other length limits are on ASCII names.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: false, unicode: false } },
    // Bounds slow clients (a whole request must arrive in time); parser refusals in the contract's shape.
    ...transportOptions(cfg.capacity.requestReceiveTimeoutMs),
  });

  registerContractHeaders(app);
  registerTransportGuards(app);
  registerErrorHandling(app, (req, e) => {
    if (req.fc) req.fc.error = e.code;
    if (e.code === 'rate_limited' || e.code === 'queue_full' || e.code === 'queue_timeout') metrics.limiterRejections.inc({ reason: e.code });
  });

  await app.register(multipart, { throwFileSizeLimit: true });
  useJsonBodyParser(app);
  // The console's Try it page calls the API from the browser (src/gateway/cors.ts).
  await registerConsoleCors(app, cfg.accounts.publicConsoleUrl);

  /** Settles a reserved call by the answer (src/accounts/charging.ts): kept only when compute ran. */
  async function settle(req: FastifyRequest, status: number | null): Promise<void> {
    const fc = req.fc;
    if (!fc || !fc.consumed || fc.settled || !req.auth) return;
    fc.settled = true;
    // status null: the caller went away before any answer was sent.
    if (status !== null && consumesCall(status, fc.error)) return;
    await accounts.refund(req.auth.accountId).then(
      () => {
        fc.refunded = true;
      },
      (err: unknown) => req.log.error({ err }, 'refund failed'),
    );
  }

  /**
   * Releases what a request holds. It runs on the response's 'close', which fires whether the answer
   * was sent or the connection was cut (a client gone mid-body, a receive timeout): Fastify's
   * onResponse runs only for answers that finished, and a slot held past that is never given back.
   */
  async function finish(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const fc = req.fc;
    if (!fc || fc.finished) return;
    fc.finished = true;
    const status = reply.raw.writableFinished ? reply.statusCode : null;
    await settle(req, status);
    recordUsage(deps.usage, { auth: req.auth, route: req.routeOptions.url ?? 'unmatched', status, error: fc.error, consumed: fc.consumed, refunded: fc.refunded, t0: fc.t0, requestId: req.id });
    if (fc.slot !== null && req.auth) await limiter.release(req.auth.accountId, fc.slot).catch(() => undefined);
    if (fc.counted) {
      inFlight = Math.max(0, inFlight - 1);
      if (inFlight === 0) idleWaiters.splice(0).forEach((f) => f());
    }
  }

  // Request context: draining, metrics (ids and the version header: registerContractHeaders).
  app.addHook('onRequest', async (req, reply) => {
    req.fc = { t0: performance.now(), counted: false, slot: null, consumed: false, settled: false, refunded: false, error: null, finished: false };
    reply.raw.once('close', () => void finish(req, reply));
    if (draining && req.url !== '/health') {
      throw new ServiceError('gateway_draining', 'the gateway is draining (shutting down); retry on another instance', { headers: { 'retry-after': '5' } });
    }
    inFlight++;
    req.fc.counted = true;
  });
  // Before the answer leaves, so that a caller who reads its allowance next sees the refund.
  app.addHook('onSend', async (req, reply) => {
    await settle(req, reply.statusCode);
  });
  app.addHook('onResponse', async (req, reply) => {
    const fc = req.fc;
    const route = req.routeOptions.url ?? 'unmatched';
    if (fc) metrics.latency.observe({ route }, (performance.now() - fc.t0) / 1000);
    if (req.binaryTargets) {
      // Parsed but never handed to the kernel (refused before the handler ran).
      targetBuffers.release(req.binaryTargets);
      req.binaryTargets = undefined;
    }
    req.streamedTargets?.close();
    req.streamedTargets = undefined;
    metrics.requests.inc({ route, code: String(reply.statusCode) });
    req.log.info({ method: req.method, route, status: reply.statusCode, ms: fc ? Math.round((performance.now() - fc.t0) * 10) / 10 : undefined }, 'request');
  });

  // Auth + rate limit (headers only, before the body is read).
  async function authAndLimit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const declared = Number(req.headers['content-length'] ?? NaN);
    const limit = bodyLimitOf(req);
    if (Number.isFinite(declared) && declared > limit) {
      throw new ServiceError('request_too_large', `the request body is larger than the limit of ${limit} bytes`, { headers: { connection: 'close' } });
    }
    const secret = bearer(req);
    if (!secret) throw new ServiceError('missing_api_key', 'an API key is required: Authorization: Bearer <key> or x-api-key');
    req.auth = await accounts.authenticate(secret, 'rest');
    const w = await limiter.hit(req.auth.accountId);
    const resetS = Math.ceil(w.resetMs / 1000);
    const windowS = Math.ceil(cfg.capacity.rateLimitWindowMs / 1000);
    reply.header('ratelimit-limit', String(w.limit));
    reply.header('ratelimit-remaining', String(w.remaining));
    reply.header('ratelimit-reset', String(resetS));
    reply.header('ratelimit-policy', `"default";q=${w.limit};w=${windowS}, "concurrency";q=${cfg.capacity.rateLimitConcurrent}`);
    reply.header('ratelimit', `"default";r=${w.remaining};t=${resetS}`);
    if (!w.allowed) throw new ServiceError('rate_limited', `rate limit of ${w.limit} requests per ${windowS} s exceeded`, { headers: { 'retry-after': String(Math.max(1, resetS)) } });
    // The process-wide budget of bodies held at once (src/http/body-budget.ts), before the body is read.
    bodyBudget.hold(req, reply, limit);
    if (req.url === '/verify' || req.url === '/represent') {
      // Deadline-aware admission before the body is read; the place is held until the job queues.
      const ticket = queue.admit();
      req.fc!.ticket = ticket;
      reply.raw.once('close', () => ticket.release());
    }
    const c = await limiter.acquire(req.auth.accountId);
    if (!c.allowed) throw new ServiceError('rate_limited', `at most ${c.limit} concurrent requests per account`, { headers: { 'retry-after': '1' } });
    req.fc!.slot = c.slot;
  }

  /** Binary /compare targets land in reused buffers, returned when the response is sent. */
  const targetBuffers = new BufferPool();

  /** /compare carries vectors and has its own, larger body limit (FACECOMPUTE_MAX_COMPARE_BYTES). */
  const bodyLimitOf = (req: FastifyRequest): number => req.routeOptions.bodyLimit ?? cfg.limits.maxRequestBytes;

  async function multipartBody(req: FastifyRequest): Promise<void> {
    if (req.isMultipart()) {
      // /compare reads its parts with our own reader: its binary targets are most of the body.
      const compare = req.routeOptions.url === '/compare';
      const plan = compare ? (fields: Record<string, unknown>) => compute.planCompareStream(fields, req.id) : undefined;
      const r = await parseMultipart(req, cfg.limits.maxImageBytes, bodyLimitOf(req), compare ? targetBuffers : undefined, compare ? 'stream' : 'busboy', plan);
      if (r.binaryTargets) metrics.compareTargets.inc({ path: 'contiguous' });
      if (r.streamedTargets) metrics.compareTargets.inc({ path: 'streamed' });
      if (r.binaryTargets && req.routeOptions.url !== '/compare') {
        throw new ServiceError('invalid_request', "a binary 'targets' part is only accepted by /compare");
      }
      req.body = r.body;
      req.uploads = r.uploads;
      if (r.binaryTargets) req.binaryTargets = r.binaryTargets;
      if (r.streamedTargets) req.streamedTargets = r.streamedTargets;
    }
  }

  const strikeSettings = { limit: cfg.capacity.strikeLimit, windowMs: cfg.capacity.strikeWindowMs };
  /** The compute context; its signal aborts upstream work when the client goes away. */
  const ctxOf = (req: FastifyRequest, reply: FastifyReply) => {
    const ac = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) ac.abort();
    });
    const reserve = async () => {
      if (req.fc!.consumed) return;
      await accounts.consume(req.auth!.accountId);
      req.fc!.consumed = true;
    };
    return {
      requestId: req.id,
      uploads: req.uploads,
      authenticated: req.auth !== undefined,
      signal: ac.signal,
      reserve,
      ...(req.binaryTargets ? { binaryTargets: req.binaryTargets } : {}),
      ...(req.streamedTargets ? { streamedTargets: req.streamedTargets } : {}),
      ...(req.fc?.ticket ? { admission: req.fc.ticket } : {}),
      strikes: strikeGuard(limiter, req.auth!.accountId, strikeSettings),
    };
  };
  const err = { '4xx': { $ref: 'ErrorResponse#' }, '5xx': { $ref: 'ErrorResponse#' } };
  app.addSchema(S.errorResponse);

  app.get('/health', { schema: { response: { 200: S.healthResponse } } }, async () => ({ status: 'ok', version: VERSION }));

  // Readiness answers within FACECOMPUTE_READINESS_TIMEOUT_MS whatever its dependencies do: a frozen
  // model server (kill -STOP) or Redis is a 503 once that time has passed, not a hang for the upstream
  // timeout. Both checks run at once, under one deadline. Anyone may ask, and each check asks every
  // model-server replica and Redis: one check runs at a time, and its answer serves every request for
  // FACECOMPUTE_READINESS_CACHE_MS (1 s), so a flood of /readiness costs the dependencies one check a
  // second. The answer holds only what a load balancer needs: the contract's ReadinessResponse fields.
  type Readiness = { status: number; body: Record<string, unknown> };
  let lastCheck: { at: number; result: Promise<Readiness> } | null = null;
  // `degraded` (a configured default the model server cannot serve, FACECOMPUTE_ALLOW_DEGRADED_START):
  // one boolean a load balancer or an operator can alert on; the reasons stay on /capabilities.
  const LB_FIELDS = ['status', 'ready', 'warming', 'warmed_models', 'warmed_detectors', 'error', 'warmed_at', 'degraded'] as const;
  app.get('/readiness', async (req, reply) => {
    const now = Date.now();
    if (!lastCheck || now - lastCheck.at >= cfg.capacity.readinessCacheMs) {
      const result = checkReadiness(req.id);
      lastCheck = { at: now, result };
      // A check that throws is not cached (a bug, not an answer).
      result.catch(() => {
        if (lastCheck?.result === result) lastCheck = null;
      });
    }
    const r = await lastCheck.result;
    if (r.status !== 200) reply.header('retry-after', '5');
    return reply.code(r.status).send(r.body);
  });
  async function checkReadiness(requestId: string): Promise<Readiness> {
    const notReady = (error: string) => ({ status: 503, body: { status: 'error' as const, ready: false, warming: false, warmed_models: [], warmed_detectors: [], error } });
    const deadline = AbortSignal.timeout(cfg.capacity.readinessTimeoutMs);
    const late = new Promise<'late'>((resolve) => deadline.addEventListener('abort', () => resolve('late'), { once: true }));
    const limiterCheck = limiter.kind === 'redis' ? Promise.race([limiter.ping().then(() => 'ok' as const, () => 'down' as const), late]) : Promise.resolve('ok' as const);
    const upstreamCheck = Promise.race([
      upstream.readiness({ requestId, signal: deadline }).then(
        (r) => r,
        () => (deadline.aborted ? ('late' as const) : ('down' as const)),
      ),
      late,
    ]);
    const [lim, up] = await Promise.all([limiterCheck, upstreamCheck]);
    if (lim !== 'ok') return notReady('limiter_unavailable');
    if (up === 'late') return notReady('model_server_unavailable');
    if (up === 'down') return notReady('model_server_unreachable');
    const body: Record<string, unknown> = {};
    const full = up.body as unknown as Record<string, unknown>;
    for (const k of LB_FIELDS) if (full[k] !== undefined) body[k] = full[k];
    return { status: up.status === 200 ? 200 : 503, body };
  }

  app.get('/capabilities', { schema: { response: { 200: S.capabilitiesResponse } } }, async (req) => compute.capabilities({ requestId: req.id }));

  const computeRoute = { onRequest: authAndLimit, preValidation: multipartBody };
  app.post<{ Body: VerifyBody }>('/verify', { ...computeRoute, schema: { body: S.verifyBody, response: { 200: S.verifyResponse, ...err } } }, async (req, reply) =>
    compute.verify(req.body, ctxOf(req, reply)),
  );
  app.post<{ Body: RepresentBody }>('/represent', { ...computeRoute, schema: { body: S.representBody, response: { 200: S.representResponse, ...err } } }, async (req, reply) =>
    compute.represent(req.body, ctxOf(req, reply)),
  );
  // The answer is written as JSON text from the kernel's typed arrays (compare-result.ts): 100,000
  // results without top_k would otherwise be 100,000 objects. S.compareResponse still documents it
  // (openapi.json) and test/compare-result.test.ts checks the text against it.
  app.post<{ Body: CompareBody }>('/compare', { ...computeRoute, bodyLimit: cfg.limits.maxCompareBytes, schema: { body: S.compareBody, response: { ...err } } }, async (req, reply) => {
    // The handler owns the targets buffer from here: it goes back to the pool only once the kernel
    // is done with it (onResponse can fire earlier, when the client goes away).
    const ctx = ctxOf(req, reply);
    req.binaryTargets = undefined;
    req.streamedTargets = undefined;
    try {
      const r = await compute.compare(req.body, ctx);
      return reply.type('application/json; charset=utf-8').send(await compareJson(r));
    } finally {
      if (ctx.binaryTargets) targetBuffers.release(ctx.binaryTargets);
      ctx.streamedTargets?.close();
    }
  });

  void sendError;
  return {
    app,
    compute,
    limiter,
    queue,
    upstream,
    metrics,
    fetcher,
    bodyBudget,
    startDraining() {
      draining = true;
    },
    isDraining: () => draining,
    async close(timeoutMs = cfg.capacity.drainTimeoutMs) {
      draining = true;
      if (inFlight > 0) {
        await Promise.race([new Promise<void>((r) => idleWaiters.push(r)), new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
      }
      await app.close();
      await upstream.close().catch(() => undefined);
      await limiter.close().catch(() => undefined);
    },
  };
}
