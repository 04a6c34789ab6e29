/**
 * The model server's internal HTTP API (protocol.ts). It trusts the gateway for the callers'
 * authentication and request validation but still checks every frame: a malformed one is a 400,
 * never a crash. With FACECOMPUTE_INTERNAL_TOKEN set, /internal/ requires the token
 * (internal-auth.ts); `/health` and `/readiness` are the kubelet's probes and say only up/ready.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config/index.js';
import { ServiceError, isServiceError, fromNative } from '../errors/index.js';
import { registerErrorHandling } from '../http/error-handler.js';
import type { Logger } from '../logging/logger.js';
import { DISTANCE_METRICS } from '../deepface/distance.js';
import {
  FRAME_CONTENT_TYPE,
  INTERNAL_PATHS,
  NORMALIZATIONS,
  decodeFrame,
  type ComputeHeader,
  type EmbedResponse,
  type PipelineOptions,
  type ReadinessResponse,
  type RepresentResponse,
  type VerifyDistance,
} from '../model-client/protocol.js';
import type { ImageOps, NativeImage } from './engines.js';
import { Pipeline } from './pipeline.js';
import { capabilities, type RegistryState } from './registry.js';
import { requireInternalToken } from './internal-auth.js';
import { probeImage } from '../native/image.js';
import { jobCost, type ImageDims } from '../model-client/job-cost.js';
import { MemoryGate } from './memory-gate.js';

const KNOWN_NORMALIZATIONS: ReadonlySet<string> = new Set(NORMALIZATIONS);

export interface ModelServerDeps {
  config: Config;
  logger: Logger;
  state: RegistryState;
  image: ImageOps;
  /** Resident bytes of the warmed, idle process (the memory gate's baseline); tests pin it. */
  baselineBytes?: () => number;
}

export function readiness(state: RegistryState): ReadinessResponse {
  const w = state.warmup.snapshot();
  const body: ReadinessResponse = {
    status: w.status,
    ready: w.status === 'ready',
    warming: w.status === 'warming',
    warmed_models: w.warmedModels,
    warmed_detectors: w.warmedDetectors,
    error: w.error,
  };
  if (w.warmedAt) body.warmed_at = w.warmedAt;
  if (state.defaultModelReason) {
    body.effective_default_model = state.defaultModel;
    body.default_model_reason = state.defaultModelReason;
  }
  if (state.defaultDetectorReason) {
    body.effective_default_detector = state.defaultDetector;
    body.default_detector_reason = state.defaultDetectorReason;
  }
  if (state.degraded.length > 0) {
    body.degraded = true;
    body.degraded_reasons = [...state.degraded];
  }
  // What is allowed but missing, and how to fetch it; ready regardless (the defaults are served).
  const missing = Object.keys(state.unavailable);
  if (missing.length > 0) body.unavailable = missing;
  if (state.fetchCommand) body.fetch_command = state.fetchCommand;
  if (state.fallbackUnavailable) body.detector_fallback_unavailable = state.fallbackUnavailable;
  return body;
}

function checkOptions(h: Partial<PipelineOptions>): PipelineOptions {
  if (typeof h.model_name !== 'string' || typeof h.detector_backend !== 'string') throw new ServiceError('invalid_request', 'model_name and detector_backend are required');
  if (typeof h.align !== 'boolean' || typeof h.enforce_detection !== 'boolean') throw new ServiceError('invalid_request', 'align and enforce_detection must be booleans');
  if (typeof h.expand_percentage !== 'number' || !(h.expand_percentage >= 0 && h.expand_percentage <= 100)) throw new ServiceError('invalid_request', 'expand_percentage must be within 0..100');
  if (typeof h.normalization !== 'string' || !KNOWN_NORMALIZATIONS.has(h.normalization)) throw new ServiceError('invalid_request', 'unknown normalization');
  if (h.detector_fallback !== undefined && typeof h.detector_fallback !== 'boolean') throw new ServiceError('invalid_request', 'detector_fallback must be a boolean');
  return h as PipelineOptions;
}

export async function buildModelServer(deps: ModelServerDeps): Promise<FastifyInstance> {
  const { config, state, image } = deps;
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: config.limits.maxRequestBytes + 1024 * 1024,
    genReqId: (req) => {
      const id = req.headers['x-request-id'];
      return typeof id === 'string' && /^[0-9a-f-]{36}$/i.test(id) ? id : randomUUID();
    },
  });
  const pipeline = new Pipeline({
    image,
    detectors: state.detectors,
    recognizers: state.recognizers,
    fallbackDetector: 'retinaface',
    detectorMaxSide: config.limits.detectorMaxSide,
    fallbackRule: { minFaceSide: config.limits.fallbackMinFaceSide, centreSpan: config.limits.fallbackCentreSpan },
  });

  const gate = new MemoryGate({
    budgetBytes: config.modelServer.memoryBudgetBytes,
    baselineBytes: deps.baselineBytes ?? (() => process.memoryUsage().rss),
    maxWaitMs: config.capacity.queueTimeoutMs,
  });
  const costOptions = { detectorMaxSide: config.limits.detectorMaxSide };

  app.addContentTypeParser(FRAME_CONTENT_TYPE, { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // The one error table of every surface (src/http/error-handler.ts), in the internal JSON envelope.
  registerErrorHandling(app, {
    notFound: () => new ServiceError('not_found', 'no such internal route'),
    send: (_req, reply, e) => reply.status(e.status).headers(e.headers).send(e.toBody()),
  });

  if (config.modelServer.internalToken) requireInternalToken(app, config.modelServer.internalToken);

  // Probes without the token: up, and ready or not, nothing else.
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/readiness', async (_req, reply) => {
    const body = readiness(state);
    return reply.status(body.ready ? 200 : 503).send({ status: body.status, ready: body.ready });
  });

  app.get(INTERNAL_PATHS.readiness, async (_req, reply) => {
    const body = readiness(state);
    return reply.status(body.ready ? 200 : 503).send(body);
  });
  app.get(INTERNAL_PATHS.capabilities, async () => capabilities(config, state));

  function requireReady(): void {
    if (!state.warmup.ready) {
      const w = state.warmup.snapshot();
      if (w.status === 'error') throw new ServiceError('internal_error', `the model server is not ready (${w.error})`);
      throw new ServiceError('service_warming', 'the model server is warming up', { headers: { 'retry-after': '2' } });
    }
  }

  /**
   * The request's decoded pixels, from the headers, against FACECOMPUTE_MAX_REQUEST_PIXELS, before
   * anything is decoded. The gateway checks the same budget before it forwards; this holds it for a
   * caller that does not (another gateway's configuration, a direct internal call).
   */
  function checkRequestPixels(images: Buffer[]): ImageDims[] {
    let total = 0;
    const dims: ImageDims[] = [];
    for (const b of images) {
      const p = probeImage(b);
      total += p.width * p.height;
      dims.push({ width: p.width, height: p.height });
    }
    if (total > config.limits.maxRequestPixels) {
      throw new ServiceError('too_many_pixels', `the images of this request decode to ${total} pixels, more than the limit of ${config.limits.maxRequestPixels} per request`);
    }
    return dims;
  }

  /** Runs `job` once its estimated peak fits the memory budget (memory-gate.ts). */
  async function withMemory<T>(bytes: number, job: () => Promise<T>): Promise<T> {
    const release = await gate.admit(bytes);
    try {
      return await job();
    } finally {
      release();
    }
  }

  /** Decodes each distinct image once: a verify of one image against itself decodes it once. */
  async function decodeAll(images: Buffer[]): Promise<NativeImage[]> {
    const decoded: NativeImage[] = [];
    for (let i = 0; i < images.length; i++) {
      const bytes = images[i] as Buffer;
      const same = images.findIndex((b, j) => j < i && b.equals(bytes));
      decoded.push(same >= 0 ? (decoded[same] as NativeImage) : await image.decode(bytes));
    }
    return decoded;
  }

  function frameOf(body: unknown): { header: ComputeHeader; images: Buffer[] } {
    if (!Buffer.isBuffer(body)) throw new ServiceError('invalid_request', `expected ${FRAME_CONTENT_TYPE}`);
    try {
      return decodeFrame(body);
    } catch (err) {
      throw new ServiceError('invalid_request', `malformed frame: ${(err as Error).message}`);
    }
  }

  function imageAt(images: NativeImage[], index: unknown): NativeImage {
    const img = typeof index === 'number' ? images[index] : undefined;
    if (!img) throw new ServiceError('invalid_request', 'image index out of range');
    return img;
  }

  function bytesAt(images: Buffer[], index: unknown): Buffer {
    const b = typeof index === 'number' && Number.isInteger(index) ? images[index] : undefined;
    if (!b) throw new ServiceError('invalid_request', 'image index out of range');
    return b;
  }

  app.post(INTERNAL_PATHS.represent, async (req): Promise<RepresentResponse> => {
    requireReady();
    const { header, images } = frameOf(req.body);
    if (header.op !== 'represent' || !Array.isArray(header.images)) throw new ServiceError('invalid_request', 'not a represent frame');
    const opts = checkOptions(header);
    const dims = checkRequestPixels(images);
    const loaders = header.images.map((i) => {
      const bytes = bytesAt(images, i);
      return () => image.decode(bytes);
    });
    const cost = jobCost(header, header.images.map((i) => dims[i] as ImageDims), costOptions);
    // Each image is decoded when the pipeline comes to it, after the previous one's faces are
    // tensor rows: one decoded image at a time, not the whole batch.
    const results = await withMemory(cost.sequential, () =>
      pipeline.represent(loaders, {
        ...opts,
        max_faces: header.max_faces ?? null,
        l2_normalize: header.l2_normalize === true,
        return_face: header.return_face === true,
        image_dtype: header.image_dtype === 'float' ? 'float' : 'uint8',
      }),
    );
    return { results, model: opts.model_name, detector_backend: opts.detector_backend };
  });

  app.post(INTERNAL_PATHS.embed, async (req): Promise<EmbedResponse> => {
    requireReady();
    const { header, images } = frameOf(req.body);
    if (header.op !== 'embed') throw new ServiceError('invalid_request', 'not an embed frame');
    const opts = checkOptions(header);
    const bytes = bytesAt(images, header.image);
    const dims = checkRequestPixels([bytes]);
    const face = await withMemory(jobCost(header, dims, costOptions).sequential, async () => pipeline.embedLargest(await image.decode(bytes), opts));
    return { embedding: Array.from(face.embedding), facial_area: face.facial_area, face_confidence: face.face_confidence, model: opts.model_name };
  });

  app.post(INTERNAL_PATHS.verify, async (req): Promise<VerifyDistance> => {
    requireReady();
    const { header, images } = frameOf(req.body);
    if (header.op !== 'verify') throw new ServiceError('invalid_request', 'not a verify frame');
    const opts = checkOptions(header);
    if (!DISTANCE_METRICS.includes(header.distance_metric)) throw new ServiceError('invalid_request', 'unknown distance_metric');
    // Two images at most, both needed at once (their faces are compared). They are detected at
    // once when that fits the memory budget, else one after the other, else refused.
    const cost = jobCost(header, checkRequestPixels(images), costOptions);
    const together = gate.fits(cost.concurrent);
    const release = await gate.admit(together ? cost.concurrent : cost.sequential);
    try {
      const decoded = await decodeAll(images);
      const resolve = (ref: unknown): NativeImage | number[] => {
        if (ref && typeof ref === 'object' && 'embedding' in ref && Array.isArray((ref as { embedding: unknown }).embedding)) {
          const e = (ref as { embedding: unknown[] }).embedding;
          if (!e.every((x) => typeof x === 'number' && Number.isFinite(x))) throw new ServiceError('invalid_embedding', 'embeddings must be finite numbers');
          return e as number[];
        }
        if (ref && typeof ref === 'object' && 'image' in ref) return imageAt(decoded, (ref as { image: unknown }).image);
        throw new ServiceError('invalid_request', 'img1 and img2 must be an image or an embedding');
      };
      const img1 = resolve(header.img1);
      const img2 = resolve(header.img2);
      const r = await pipeline.verify({ img1, img2, sameImage: !Array.isArray(img1) && img1 === img2, oneAtATime: !together }, { ...opts, distance_metric: header.distance_metric });
      return { distance: r.distance, model: opts.model_name, detector_backend: opts.detector_backend, similarity_metric: header.distance_metric, facial_areas: r.areas };
    } finally {
      release();
    }
  });

  return app;
}
