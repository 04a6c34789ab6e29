/**
 * The compute stack wired from the configuration: everything the REST gateway and the MCP endpoint
 * share (the per-account limiter, the compute queue, the model-server client, the remote fetcher,
 * the image resolver and the compute service). Both surfaces call `createComputeStack` and stay thin
 * adapters over what it returns; `facecompute serve` builds the limiter, queue and upstream once (the
 * gateway's) and hands them to the MCP endpoint, so both count against one budget.
 */
import type { Config } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { createUpstream, type Upstream } from '../model-client/client.js';
import { superviseUpstream, type UpstreamSupervision } from '../model-client/supervised.js';
import { createComputeService, type ComputeService, type GatewayLimits } from './compute-service.js';
import { ImageResolver, type InputSettings } from './inputs/resolve.js';
import { createRemoteFetcher, type RemoteFetchOptions, type RemoteFetcher } from './inputs/remote-fetch.js';
import { createQueue, type ComputeQueue } from './queue.js';
import type { Limiter } from './limits/limiter.js';
import { createMemoryLimiter } from './limits/memory.js';
import { FetchBudget } from './limits/fetch-budget.js';

/** The limits the compute service enforces and /capabilities reports, from the configuration. */
export function gatewayLimits(c: Config): GatewayLimits {
  return {
    max_request_bytes: c.limits.maxRequestBytes,
    max_image_bytes: c.limits.maxImageBytes,
    max_image_pixels: c.limits.maxImagePixels,
    max_request_pixels: c.limits.maxRequestPixels,
    max_targets: c.limits.maxTargets,
    max_sources: c.limits.maxSources,
    max_compare_results: c.limits.maxCompareResults,
    max_compare_bytes: c.limits.maxCompareBytes,
    max_json_values: c.limits.maxJsonValues,
    max_batch_images: c.limits.maxBatchImages,
    max_upstream_response_bytes: c.limits.maxUpstreamResponseBytes,
    queue_capacity: c.capacity.queueCapacity,
    queue_timeout_ms: c.capacity.queueTimeoutMs,
    upstream_concurrency: c.capacity.upstreamConcurrency,
    upstream_timeout_ms: c.capacity.upstreamTimeoutMs,
    rate_limit_requests: c.capacity.rateLimitRequests,
    rate_limit_window_ms: c.capacity.rateLimitWindowMs,
    rate_limit_concurrent: c.capacity.rateLimitConcurrent,
  };
}

/**
 * The per-account limiter the configuration asks for: Redis when FACECOMPUTE_REDIS_URL is set. The
 * Redis client is imported only then: loading ioredis costs every other start about 20 ms.
 */
export async function createConfiguredLimiter(cfg: Config): Promise<Limiter> {
  const c = cfg.capacity;
  // A slot outlives any request that holds it: the body's receive time, the queue wait, and an
  // upstream call with its one retry on another replica, plus a minute. It ends earlier only if its
  // holder died without releasing it.
  const slotDeadlineMs = c.requestReceiveTimeoutMs + c.queueTimeoutMs + 2 * c.upstreamTimeoutMs + 60_000;
  const s = { requests: c.rateLimitRequests, windowMs: c.rateLimitWindowMs, concurrent: c.rateLimitConcurrent, slotDeadlineMs, strikeWindowMs: c.strikeWindowMs };
  if (!cfg.redisUrl) return createMemoryLimiter(s);
  const { createRedisLimiter } = await import('./limits/redis.js');
  return createRedisLimiter(cfg.redisUrl, s);
}

/**
 * The per-account budget of remote fetches (src/service/limits/fetch-budget.ts): two one-minute
 * windows on the limiter's backend (Redis when configured, so every replica counts together).
 */
export async function createConfiguredFetchBudget(cfg: Config): Promise<FetchBudget> {
  const window = (requests: number) => ({ requests, windowMs: 60_000, concurrent: 1 });
  const n = window(cfg.inputs.remoteFetchesPerMinute);
  const b = window(cfg.inputs.remoteFetchBytesPerMinute);
  if (!cfg.redisUrl) return new FetchBudget(createMemoryLimiter(n), createMemoryLimiter(b));
  const { createRedisLimiter } = await import('./limits/redis.js');
  return new FetchBudget(createRedisLimiter(cfg.redisUrl, n, 'fc:fetch:n:'), createRedisLimiter(cfg.redisUrl, b, 'fc:fetch:b:'));
}

/** The model-server client the configuration asks for: its replicas (URLs, DNS) and the internal token. */
export function createConfiguredUpstream(cfg: Config, onError?: (kind: string) => void, logger?: Logger): Upstream {
  return createUpstream({
    urls: cfg.modelServerUrls,
    dns: cfg.modelServer.dns,
    internalToken: cfg.modelServer.internalToken,
    timeoutMs: cfg.capacity.upstreamTimeoutMs,
    maxResponseBytes: cfg.limits.maxUpstreamResponseBytes,
    connections: Math.max(4, cfg.capacity.upstreamConcurrency * 2),
    ...(onError ? { onError } : {}),
    ...(logger ? { logger } : {}),
  });
}

/** The compute queue the configuration asks for (FACECOMPUTE_UPSTREAM_CONCURRENCY, _QUEUE_*). */
export function createConfiguredQueue(cfg: Config): ComputeQueue {
  const c = cfg.capacity;
  return createQueue(c.upstreamConcurrency, c.queueCapacity, c.queueTimeoutMs, c.admission, undefined, c.queueHeadroom);
}

/** Which image inputs a surface accepts; unset fields follow the configuration (FACECOMPUTE_REMOTE_IMAGES, _LOCAL_IMAGES_ROOT). */
export type InputPolicy = Partial<Pick<InputSettings, 'remoteImages' | 'localImagesRoot'>>;

/**
 * A ComputeService wired from the configuration: image-input policy, remote fetcher, limits and the
 * allowlist fallback. The MCP endpoint passes its own policy (`mcpInputPolicy`, src/mcp/main.ts).
 */
export function createConfiguredCompute(
  cfg: Config,
  o: { upstream: Upstream; queue: ComputeQueue; remoteFetch?: Partial<RemoteFetchOptions>; inputPolicy?: InputPolicy; onQueueWait?: (ms: number) => void },
): { compute: ComputeService; fetcher: RemoteFetcher | null } {
  const inputSettings: InputSettings = {
    remoteImages: o.inputPolicy?.remoteImages ?? cfg.inputs.remoteImages,
    localImagesRoot: o.inputPolicy?.localImagesRoot ?? cfg.inputs.localImagesRoot,
    maxImageBytes: cfg.limits.maxImageBytes,
    maxImagePixels: cfg.limits.maxImagePixels,
  };
  const fetcher =
    inputSettings.remoteImages === 'off'
      ? null
      : createRemoteFetcher({
          mode: inputSettings.remoteImages,
          allowedOrigins: cfg.inputs.remoteOrigins,
          maxBytes: cfg.limits.maxImageBytes,
          timeoutMs: cfg.inputs.remoteTimeoutMs,
          maxRedirects: cfg.inputs.remoteMaxRedirects,
          ...o.remoteFetch,
        });
  const compute = createComputeService({
    upstream: o.upstream,
    resolver: new ImageResolver(inputSettings, fetcher),
    queue: o.queue,
    inputSettings,
    limits: gatewayLimits(cfg),
    fallback: { allowedModels: cfg.models.allowedModels, defaultModel: cfg.models.defaultModel, allowedDetectors: cfg.models.allowedDetectors, defaultDetector: cfg.models.defaultDetector },
    ...(o.onQueueWait ? { onQueueWait: o.onQueueWait } : {}),
  });
  return { compute, fetcher };
}

export interface ComputeStackOptions {
  /** Injected or shared parts; each one missing is made from the configuration. */
  limiter?: Limiter | undefined;
  queue?: ComputeQueue | undefined;
  upstream?: Upstream | undefined;
  /** The model server is a supervised child (`serve`): restarts answer 503 service_warming, not 502. */
  supervision?: UpstreamSupervision | undefined;
  /** Overrides for the remote fetcher (tests inject a fake DNS resolver; MCP asks for HTTPS only). */
  remoteFetch?: Partial<RemoteFetchOptions> | undefined;
  inputPolicy?: InputPolicy;
  /** For the upstream made here: its logger and where its errors are counted. */
  logger?: Logger;
  onUpstreamError?: (kind: string) => void;
  onQueueWait?: (ms: number) => void;
  /** Shared by the surfaces of one process (`serve`); made from the configuration when remote images are on. */
  fetchBudget?: FetchBudget | undefined;
}

export interface ComputeStack {
  compute: ComputeService;
  limiter: Limiter;
  queue: ComputeQueue;
  /** The model-server client compute calls (supervised when `supervision` was given). */
  upstream: Upstream;
  /** The client itself, unsupervised: its replicas are what metrics report. */
  client: Upstream;
  fetcher: RemoteFetcher | null;
  /** The per-account budget of remote fetches; null when remote images are off. */
  fetchBudget: FetchBudget | null;
}

/** Everything a compute surface sits on, from the configuration and what the caller shares. */
export async function createComputeStack(cfg: Config, o: ComputeStackOptions = {}): Promise<ComputeStack> {
  const limiter = o.limiter ?? (await createConfiguredLimiter(cfg));
  const queue = o.queue ?? createConfiguredQueue(cfg);
  const client = o.upstream ?? createConfiguredUpstream(cfg, o.onUpstreamError, o.logger);
  const upstream = o.supervision ? superviseUpstream(client, o.supervision) : client;
  const { compute, fetcher } = createConfiguredCompute(cfg, {
    upstream,
    queue,
    ...(o.remoteFetch ? { remoteFetch: o.remoteFetch } : {}),
    ...(o.inputPolicy ? { inputPolicy: o.inputPolicy } : {}),
    ...(o.onQueueWait ? { onQueueWait: o.onQueueWait } : {}),
  });
  const fetchBudget = fetcher ? (o.fetchBudget ?? (await createConfiguredFetchBudget(cfg))) : null;
  return { compute, limiter, queue, upstream, client, fetcher, fetchBudget };
}
