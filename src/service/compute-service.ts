/**
 * Compute semantics shared by the REST routes and the MCP endpoint: takes a body that passed the
 * JSON Schemas (src/vocabulary/schemas.ts) and returns the REST result. Validates model/detector against
 * the model server's capabilities, resolves image inputs, checks embeddings, decides two-embedding
 * verifies and every compare in the gateway (no model-server hop), and sends the rest upstream.
 */
import { ServiceError } from '../errors/index.js';
import { compareManyToMany, compareOneToMany, METRICS, type Metric } from '../native/compare.js';
import { STREAM_MAX_SOURCES, type StreamPlan } from '../native/compare-stream.js';
import { CompareTargets, type TargetFields } from './compare-targets.js';
import { checkEmbedding } from './embeddings.js';
import { BufferPool } from './buffer-pool.js';
import { CompareRows, type CompareResponse, type SourceInfo } from './compare-result.js';
import { EMBEDDING_DIMS as DEFAULT_DIMS, decide, findThreshold } from '../deepface/decision.js';
import { DISTANCE_METRICS, type CapabilitiesResponse, type DistanceMetric, type InputRef, type Normalization, type PipelineOptions, type NullArea, type VerifyDistance } from '../model-client/protocol.js';
import type { Upstream } from '../model-client/client.js';
import type { ImageResolver, InputContext, InputSettings } from './inputs/resolve.js';
import { inputModes } from './inputs/resolve.js';
import { PixelBudget } from './inputs/pixel-budget.js';
import type { AdmissionTicket, ComputeQueue } from './queue.js';
import type { StrikeGuard } from './limits/strikes.js';
import type { RepresentRequest, VerifyRequest } from '../vocabulary/schemas.js';

export type Bool = boolean | 'true' | 'false' | '1' | '0' | 0 | 1;

interface CommonBody {
  model_name?: string;
  detector_backend?: string;
  align?: Bool;
  enforce_detection?: Bool;
  expand_percentage?: number;
  normalization?: Normalization;
  detector_fallback?: Bool;
}
/** The bodies as their JSON Schemas describe them (src/vocabulary/schemas.ts): one description. */
export type VerifyBody = VerifyRequest;
export type RepresentBody = RepresentRequest;
export interface SourceRef {
  img?: string;
  embedding?: number[];
}
/** The targets' body fields are CompareTargets' (src/service/compare-targets.ts), which reads them. */
export interface CompareBody extends CommonBody, TargetFields {
  /** One source, or a list of them (many-to-many: one result list per source). */
  source: SourceRef | SourceRef[];
  distance_metric?: DistanceMetric;
  threshold?: number;
  top_k?: number;
}

export interface ComputeContext extends InputContext {
  requestId: string;
  signal?: AbortSignal;
  /**
   * /compare only: the targets of a multipart body (`openCompareTargets`), which `compare` consumes
   * and frees. Without it the targets are the body's JSON fields.
   */
  targets?: CompareTargets;
  /**
   * Reserves the caller's free call; called once a request has passed every check that needs no
   * compute, right before the compute starts (src/accounts/charging.ts settles it by the answer).
   * Requests refused earlier never touch the allowance. Idempotent: a request with remote images
   * reserves before fetching them, and compute calls it again.
   */
  reserve?: () => Promise<void>;
  /** The place the gateway's admission reserved for this request (src/service/queue.ts). */
  admission?: AdmissionTicket;
  /**
   * The caller's strikes (src/service/limits/strikes.ts): checked before a request with images does
   * anything, counted when one is lost with its model server.
   */
  strikes?: StrikeGuard;
}

export interface GatewayLimits {
  max_request_bytes: number;
  max_image_bytes: number;
  max_image_pixels: number;
  max_request_pixels: number;
  max_targets: number;
  max_sources: number;
  max_compare_results: number;
  max_compare_bytes: number;
  max_json_values: number;
  max_batch_images: number;
  max_upstream_response_bytes: number;
  queue_capacity: number;
  queue_timeout_ms: number;
  upstream_concurrency: number;
  upstream_timeout_ms: number;
  rate_limit_requests: number;
  rate_limit_window_ms: number;
  rate_limit_concurrent: number;
}

export interface ComputeDeps {
  upstream: Upstream;
  resolver: ImageResolver;
  queue: ComputeQueue;
  inputSettings: InputSettings;
  limits: GatewayLimits;
  /** Used when the model server has never answered /internal/capabilities. */
  fallback: { allowedModels: string[]; defaultModel: string; allowedDetectors: string[]; defaultDetector: string };
  capabilitiesTtlMs?: number;
  onQueueWait?: (ms: number) => void;
  /** Where binary /compare targets land (default: a pool of two buffers, src/service/buffer-pool.ts). */
  targetBuffers?: BufferPool;
}

export interface ComputeService {
  capabilities(ctx?: { requestId: string }): Promise<CapabilitiesResponse>;
  verify(body: VerifyBody, ctx: ComputeContext): Promise<unknown>;
  represent(body: RepresentBody, ctx: ComputeContext): Promise<unknown>;
  /**
   * Results stay typed arrays (CompareRows) until rendered: REST writes JSON text, MCP plain objects.
   * Consumes `ctx.targets` (frees what it holds when done, whatever the outcome).
   */
  compare(body: CompareBody, ctx: ComputeContext): Promise<CompareResponse>;
  /**
   * The targets of one /compare whose multipart body is about to be read, for `compare`'s
   * `ctx.targets`: a binary part lands in this service's pooled buffers, or is compared while it
   * arrives when the fields before it allow (`planStream`). The caller calls `release()` when the
   * request ends however it ends.
   */
  openCompareTargets(): CompareTargets;
  /**
   * The resident buffers binary targets land in, which large JSON bodies are read into as well
   * (src/http/body-collector.ts): a fresh 64 MiB buffer costs page faults and V8's full collections.
   */
  readonly bodyBuffers: BufferPool;
}


export function toBool(v: Bool | undefined, dflt: boolean): boolean {
  if (v === undefined) return dflt;
  return v === true || v === 'true' || v === '1' || v === 1;
}

const NULL_AREA: NullArea = { x: null, y: null, w: null, h: null, left_eye: null, right_eye: null };

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** A remote image URL (fetched by the gateway), as ImageResolver tells them apart. */
const isRemote = (v: unknown): boolean => typeof v === 'string' && /^https?:\/\//i.test(v);

/**
 * Reserves the call before any remote image is fetched: a fetch costs up to max_image_bytes per image
 * and the time of a remote server, so a caller without credits gets 402 before any (otherwise
 * a request of 16 URLs is fetched in full at 0 credits). A fetch that fails gives the call back, as
 * any refusal does (src/accounts/charging.ts). `reserve` is idempotent: compute calls it again later.
 */
async function reserveBeforeFetching(images: readonly unknown[], ctx: ComputeContext): Promise<void> {
  if (images.some(isRemote)) await ctx.reserve?.();
}

export function createComputeService(d: ComputeDeps): ComputeService {
  let cached: { at: number; caps: CapabilitiesResponse } | null = null;
  let inflight: Promise<CapabilitiesResponse> | null = null;
  const ttl = d.capabilitiesTtlMs ?? 10_000;
  const targetBuffers = d.targetBuffers ?? new BufferPool();

  function withGateway(c: CapabilitiesResponse): CapabilitiesResponse {
    return { ...c, limits: { ...(c.limits ?? {}), ...d.limits }, input_modes: inputModes(d.inputSettings), version: 'v1' };
  }

  function fallbackCaps(): CapabilitiesResponse {
    const f = d.fallback;
    const thresholds: CapabilitiesResponse['thresholds'] = {};
    const dims: Record<string, number> = {};
    for (const m of f.allowedModels) {
      if (DEFAULT_DIMS[m] !== undefined) dims[m] = DEFAULT_DIMS[m]!;
      try {
        thresholds[m] = Object.fromEntries(DISTANCE_METRICS.map((x) => [x, findThreshold(m, x)])) as Record<DistanceMetric, number>;
      } catch {
        /* unknown model */
      }
    }
    return {
      allowed_models: f.allowedModels, default_model: f.defaultModel, allowed_detectors: f.allowedDetectors, default_detector: f.defaultDetector,
      distance_metrics: [...DISTANCE_METRICS], default_distance_metric: 'cosine', embedding_dims: dims, thresholds, limits: {}, input_modes: [], version: 'v1',
    };
  }

  async function fetchCaps(requestId: string): Promise<CapabilitiesResponse> {
    if (!inflight) {
      inflight = d.upstream
        .capabilities({ requestId })
        .then((c) => {
          cached = { at: Date.now(), caps: withGateway(c) };
          return cached.caps;
        })
        .finally(() => {
          inflight = null;
        });
    }
    return inflight;
  }

  /** Cached capabilities; refreshed after the TTL (stale ones are served while refreshing). */
  async function caps(requestId: string, needFresh = false): Promise<CapabilitiesResponse> {
    if (cached && Date.now() - cached.at < ttl) return cached.caps;
    if (cached && !needFresh) {
      fetchCaps(requestId).catch(() => undefined);
      return cached.caps;
    }
    const stale = cached;
    // A model server that stops answering does not take /capabilities down while a stale copy exists.
    return fetchCaps(requestId).catch((err: unknown) => {
      if (stale) return stale.caps;
      throw err;
    });
  }

  /**
   * Capabilities for vector-only work: the last ones fetched, however old, else the configured
   * allowlist. Never calls the model server, not even in the background: a vector-only request costs
   * no model-server call, so a stranger's vector requests cannot load it, nor count failures against
   * it while it is down (README, "a vector-only request never calls the model server"). Image
   * requests and GET /capabilities refresh the cache.
   */
  function capsNoHop(): CapabilitiesResponse {
    return cached ? cached.caps : withGateway(fallbackCaps());
  }

  function pipeline(b: CommonBody, c: CapabilitiesResponse): PipelineOptions {
    const model = b.model_name ?? c.default_model;
    if (!c.allowed_models.includes(model)) throw new ServiceError('model_not_allowed', `model ${JSON.stringify(model)} is not allowed; allowed: ${c.allowed_models.join(', ')}`);
    const det = b.detector_backend ?? c.default_detector;
    if (!c.allowed_detectors.includes(det)) {
      // A degraded start whose default detector cannot be served: the request must name one (never
      // `skip` in its place, silently).
      if (b.detector_backend === undefined && c.default_detector_reason) {
        throw new ServiceError('detector_not_allowed', `no detector_backend given, and the default detector cannot be served here (${c.default_detector_reason}); name one of: ${c.allowed_detectors.join(', ')}`);
      }
      throw new ServiceError('detector_not_allowed', `detector ${JSON.stringify(det)} is not allowed; allowed: ${c.allowed_detectors.join(', ')}`);
    }
    return {
      model_name: model,
      detector_backend: det,
      align: toBool(b.align, true),
      enforce_detection: toBool(b.enforce_detection, true),
      expand_percentage: b.expand_percentage ?? 0,
      normalization: b.normalization ?? 'base',
      detector_fallback: toBool(b.detector_fallback, true),
    };
  }

  function dimsOf(c: CapabilitiesResponse, model: string): number {
    const n = c.embedding_dims?.[model] ?? DEFAULT_DIMS[model];
    if (!n) throw new ServiceError('model_not_allowed', `model ${model} has no known embedding dimension`);
    return n;
  }

  function thresholdOf(c: CapabilitiesResponse, model: string, metric: DistanceMetric): number {
    return c.thresholds?.[model]?.[metric] ?? findThreshold(model, metric);
  }

  function noSpoofing(v: Bool | undefined): void {
    if (toBool(v, false)) throw new ServiceError('unsupported_option', 'anti_spoofing=true is not offered by this service; only false is accepted');
  }

  /**
   * Runs an upstream job in the compute queue; skipped when the client has gone away meanwhile. A job
   * lost with its model server (upstream_lost) is a strike against the caller's account.
   */
  const upstreamRun = async <T>(job: () => Promise<T>, ctx: ComputeContext): Promise<T> => {
    try {
      return await d.queue.run(
        () => {
          if (ctx.signal?.aborted) throw new ServiceError('upstream_failed', 'the client went away before the request ran');
          return job();
        },
        d.onQueueWait,
        ctx.admission,
      );
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'upstream_lost') await ctx.strikes?.record().catch(() => undefined);
      throw err;
    }
  };

  return {
    async capabilities(ctx) {
      return caps(ctx?.requestId ?? 'capabilities', true);
    },

    async verify(b, ctx) {
      const t0 = performance.now();
      noSpoofing(b.anti_spoofing);
      const bothVectors = Array.isArray(b.img1) && Array.isArray(b.img2);
      const c = bothVectors ? capsNoHop() : await caps(ctx.requestId);
      const p = pipeline(b, c);
      const metric = b.distance_metric ?? 'cosine';
      const dims = dimsOf(c, p.model_name);
      const vecs: Array<Float32Array | null> = [b.img1, b.img2].map((x, i) => (Array.isArray(x) ? checkEmbedding(x, dims, `img${i + 1}`) : null));
      // The one place verify is decided, for embeddings and images alike; `time` is this call's.
      const decided = (raw: number, r: Pick<VerifyDistance, 'detector_backend' | 'facial_areas'>) => ({
        ...decide(raw, p.model_name, metric, b.threshold, thresholdOf(c, p.model_name, metric)),
        model: p.model_name,
        detector_backend: r.detector_backend,
        similarity_metric: metric,
        facial_areas: r.facial_areas,
        time: round2((performance.now() - t0) / 1000),
      });
      if (bothVectors) {
        await ctx.reserve?.();
        const r = await compareOneToMany(vecs[0]!, vecs[1]!, dims, metric as Metric);
        return decided(r.distances[0]!, { detector_backend: p.detector_backend, facial_areas: { img1: NULL_AREA, img2: NULL_AREA } });
      }
      const images: Buffer[] = [];
      const refs: InputRef[] = [];
      await ctx.strikes?.check();
      await reserveBeforeFetching([b.img1, b.img2], ctx);
      const budget = new PixelBudget(d.limits.max_request_pixels);
      for (const [i, x] of [b.img1, b.img2].entries()) {
        if (Array.isArray(x)) refs.push({ embedding: x });
        else {
          images.push(await d.resolver.resolve(x, `img${i + 1}`, ctx, budget));
          refs.push({ image: images.length - 1 });
        }
      }
      await ctx.reserve?.();
      const r = await upstreamRun(() =>
        d.upstream.verify({ op: 'verify', ...p, img1: refs[0]!, img2: refs[1]!, distance_metric: metric, threshold: b.threshold ?? null }, images, ctx),
      ctx);
      return decided(r.distance, r);
    },

    async represent(b, ctx) {
      noSpoofing(b.anti_spoofing);
      const c = await caps(ctx.requestId);
      const p = pipeline(b, c);
      const batch = Array.isArray(b.img);
      const list = batch ? (b.img as string[]) : [b.img as string];
      if (list.length > d.limits.max_batch_images) throw new ServiceError('request_too_large', `img: a batch holds at most ${d.limits.max_batch_images} images`);
      const images: Buffer[] = [];
      await ctx.strikes?.check();
      await reserveBeforeFetching(list, ctx);
      const budget = new PixelBudget(d.limits.max_request_pixels);
      for (const [i, x] of list.entries()) images.push(await d.resolver.resolve(x, batch ? `img[${i}]` : 'img', ctx, budget));
      await ctx.reserve?.();
      const r = await upstreamRun(() =>
        d.upstream.represent({ op: 'represent', ...p, images: images.map((_, i) => i), max_faces: b.max_faces ?? null, l2_normalize: toBool(b.l2_normalize, false), return_face: toBool(b.return_face, false), ...(b.image_dtype === 'float' ? { image_dtype: 'float' as const } : {}) }, images, ctx),
      ctx);
      return { results: batch ? r.results : (r.results[0] ?? []), model: r.model, detector_backend: r.detector_backend };
    },

    openCompareTargets() {
      return new CompareTargets(targetBuffers, planStream);
    },
    bodyBuffers: targetBuffers,

    async compare(b, ctx) {
      const targets = ctx.targets ?? new CompareTargets();
      return targets.consume(() => compareWith(b, ctx, targets));
    },
  };

  /**
   * Whether a binary `targets` part can be compared while it arrives, from the multipart fields read
   * before it: only when nothing that follows can change the comparison. `source` (1 to
   * STREAM_MAX_SOURCES embeddings), `model_name` (the row length) and `distance_metric` must be
   * there, since a later part cannot repeat them; `top_k` may come later (every distance is kept
   * until then). Anything else, or anything invalid, is null: the part is then kept in one buffer
   * and the request runs, and fails, exactly as it would have.
   */
  function planStream(f: Record<string, unknown>): StreamPlan | null {
    const b = f as Partial<CompareBody>;
    if (b.source === undefined || b.model_name === undefined || b.distance_metric === undefined) return null;
    if (!(METRICS as readonly unknown[]).includes(b.distance_metric)) return null;
    if (b.top_k !== undefined && !(Number.isInteger(b.top_k) && b.top_k >= 1 && b.top_k <= 0xffff_ffff)) return null;
    const sources = Array.isArray(b.source) ? (b.source as unknown[]) : [b.source];
    if (sources.length < 1 || sources.length > STREAM_MAX_SOURCES) return null;
    try {
      const p = pipeline(b as CommonBody, capsNoHop());
      const dims = dimsOf(capsNoHop(), p.model_name);
      const vectors = new Float32Array(sources.length * dims);
      for (const [i, src] of sources.entries()) {
        const s = src as SourceRef | null;
        if (typeof s !== 'object' || s === null || s.img !== undefined || !Array.isArray(s.embedding)) return null;
        vectors.set(checkEmbedding(s.embedding, dims, 'source'), i * dims);
      }
      return { sources: vectors, dims, metric: b.distance_metric as Metric, ...(b.top_k !== undefined ? { topK: b.top_k } : {}), maxRows: d.limits.max_targets };
    } catch {
      return null;
    }
  }

  async function compareWith(b: CompareBody, ctx: ComputeContext, owner: CompareTargets): Promise<CompareResponse> {
    const t0 = performance.now();
    const many = Array.isArray(b.source);
    const sources: SourceRef[] = many ? (b.source as SourceRef[]) : [b.source as SourceRef];
    if (sources.length > d.limits.max_sources) throw new ServiceError('too_many_targets', `source holds ${sources.length} entries; the limit is ${d.limits.max_sources}`);
    const imageSources = sources.filter((x) => x.img !== undefined).length;
    if (imageSources > d.limits.max_batch_images) throw new ServiceError('request_too_large', `source holds ${imageSources} images; at most ${d.limits.max_batch_images} image sources per request (send embeddings for the others)`);
    const c = imageSources > 0 ? await caps(ctx.requestId) : capsNoHop();
    const p = pipeline(b, c);
    const metric = (b.distance_metric ?? 'cosine') as Metric;
    const dims = dimsOf(c, p.model_name);
    // Targets first: they are cheap to check and may refuse the request before any upstream work.
    const targets = await owner.resolve(b, dims, d.limits.max_targets);
    const n = targets.count;
    const perSource = b.top_k === undefined ? n : Math.min(b.top_k, n);
    if (many && sources.length * perSource > d.limits.max_compare_results) {
      throw new ServiceError('too_many_targets', `${sources.length} sources × ${perSource} results is ${sources.length * perSource} results; the limit is ${d.limits.max_compare_results} (lower top_k or send fewer sources)`);
    }
    const vectors = new Float32Array(sources.length * dims);
    const infos: SourceInfo[] = [];
    // Every source is checked (embeddings) or resolved (images) before the call is reserved, unless
    // an image must be fetched.
    if (imageSources > 0) await ctx.strikes?.check();
    // All image sources are one upstream job with one admission ticket: a request is one queue place
    // and one upstream slot, however many sources it has (16 sources were 16 jobs, none admitted).
    const admission = imageSources > 0 ? (ctx.admission ?? d.queue.admit()) : undefined;
    try {
      return await compareSources();
    } finally {
      admission?.release();
    }

    async function compareSources() {
      await reserveBeforeFetching(sources.map((x) => x.img), ctx);
      const budget = new PixelBudget(d.limits.max_request_pixels);
      const images = await Promise.all(
        sources.map(async (src, i) => {
          const what = many ? `source[${i}]` : 'source';
          if (src.embedding !== undefined) {
            vectors.set(checkEmbedding(src.embedding, dims, `${what}.embedding`), i * dims);
            infos[i] = null;
            return null;
          }
          return d.resolver.resolve(src.img!, `${what}.img`, ctx, budget);
        }),
      );
      await ctx.reserve?.();
      if (imageSources > 0) {
        await upstreamRun(async () => {
          for (const [i, img] of images.entries()) {
            if (img === null) continue;
            const what = many ? `source[${i}]` : 'source';
            if (ctx.signal?.aborted) throw new ServiceError('upstream_failed', 'the client went away before the request ran');
            const e = await d.upstream.embed({ op: 'embed', ...p, image: 0 }, [img], ctx);
            vectors.set(checkEmbedding(e.embedding, dims, `${what} embedding from the model server`), i * dims);
            infos[i] = { facial_area: e.facial_area, face_confidence: e.face_confidence };
          }
        }, admission ? { ...ctx, admission } : ctx);
      }
      const pretuned = thresholdOf(c, p.model_name, metric);
      const decide = { model: p.model_name, metric, pretuned, threshold: b.threshold || pretuned };
      if (targets.kind === 'streamed') {
        const r = owner.finishStream(targets.stream, dims, metric, vectors, b.top_k);
        const rows = many ? new CompareRows(decide, r.indices, r.distances, r.offsets) : new CompareRows(decide, r.indices, r.distances);
        return { model: p.model_name, similarity_metric: metric, threshold: decide.threshold, dims, source: many ? infos : (infos[0] ?? null), results: rows, time: round2((performance.now() - t0) / 1000) };
      }
      if (!many) {
        const r = await compareOneToMany(vectors, targets.rows, dims, metric, b.top_k);
        const rows = new CompareRows(decide, r.indices, r.distances);
        return { model: p.model_name, similarity_metric: metric, threshold: decide.threshold, dims, source: infos[0] ?? null, results: rows, time: round2((performance.now() - t0) / 1000) };
      }
      const r = await compareManyToMany(vectors, targets.rows, dims, metric, b.top_k);
      const lists = new CompareRows(decide, r.indices, r.distances, r.offsets);
      return { model: p.model_name, similarity_metric: metric, threshold: decide.threshold, dims, source: infos, results: lists, time: round2((performance.now() - t0) / 1000) };
    }
  }
}
