/**
 * Client of the internal model servers (src/model-server/protocol.ts). Several URLs are balanced
 * with undici's BalancedPool. Failures map to the contract: connection errors and 5xx →
 * upstream_failed (502), timeouts → upstream_timeout (504), an answer over the cap →
 * upstream_response_too_large (502). A 4xx ErrorBody with a code the contract lets through (e.g.
 * no_face_detected) is passed on; upstream bodies are never copied into a detail otherwise.
 */
import { BalancedPool, errors as undiciErrors, type Dispatcher } from 'undici';
import { ServiceError, isErrorCode, type ErrorCode } from '../../errors/index.js';
import {
  FRAME_CONTENT_TYPE,
  INTERNAL_PATHS,
  encodeFrame,
  type CapabilitiesResponse,
  type EmbedHeader,
  type EmbedResponse,
  type RepresentHeader,
  type VerifyHeader,
  type ReadinessResponse,
  type RepresentResponse,
  type VerifyResponse,
} from '../../model-server/protocol.js';

/** Codes a model server may answer that reach the caller unchanged. */
const PASS_THROUGH: ReadonlySet<ErrorCode> = new Set([
  'invalid_request', 'unsupported_option', 'model_not_allowed', 'detector_not_allowed', 'invalid_image',
  'embedding_dimension_mismatch', 'invalid_embedding', 'too_many_pixels', 'image_too_large', 'no_face_detected',
  'service_warming',
]);

const SAFE_DETAIL = /^[\w\s.,:;'"()\-=<>[\]{}+*%!?#]{1,300}$/;

export interface UpstreamOptions {
  urls: string[];
  timeoutMs: number;
  maxResponseBytes: number;
  connections?: number;
  onError?: (kind: string) => void;
}

export interface UpstreamCallContext {
  requestId: string;
  signal?: AbortSignal;
}

export interface Upstream {
  readiness(ctx: UpstreamCallContext): Promise<{ status: number; body: ReadinessResponse }>;
  capabilities(ctx: UpstreamCallContext): Promise<CapabilitiesResponse>;
  verify(h: VerifyHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<VerifyResponse>;
  represent(h: RepresentHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<RepresentResponse>;
  embed(h: EmbedHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<EmbedResponse>;
  close(): Promise<void>;
}

function isTimeout(err: unknown): boolean {
  return (
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    err instanceof undiciErrors.ConnectTimeoutError ||
    (err instanceof Error && (err.name === 'TimeoutError' || (err as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' || (err as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT'))
  );
}

export function createUpstream(opts: UpstreamOptions): Upstream {
  const pool = new BalancedPool(opts.urls, {
    connections: opts.connections ?? 16,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    keepAliveTimeout: 4000,
  });
  const note = (k: string) => opts.onError?.(k);

  async function call(method: 'GET' | 'POST', path: string, body: Buffer | undefined, ctx: UpstreamCallContext, okStatuses: number[] = [200]): Promise<{ status: number; json: unknown }> {
    // Timeouts are the pool's headersTimeout/bodyTimeout (cheap); a per-call AbortSignal.timeout costs
    // a timer and a GC-tracked signal per request.
    const timeout = { aborted: false };
    const signal = ctx.signal;
    let res: Dispatcher.ResponseData;
    try {
      res = await pool.request({
        method,
        path,
        body,
        ...(signal ? { signal } : {}),
        headers: { 'x-request-id': ctx.requestId, ...(body ? { 'content-type': FRAME_CONTENT_TYPE } : {}), accept: 'application/json' },
      });
    } catch (err) {
      if (isTimeout(err) || timeout.aborted) {
        note('timeout');
        throw new ServiceError('upstream_timeout', 'the model server did not answer in time', { cause: err });
      }
      note('connect');
      throw new ServiceError('upstream_failed', 'the model server could not be reached', { cause: err });
    }
    res.body.on('error', () => undefined);
    const declared = Number(res.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > opts.maxResponseBytes) {
      res.body.destroy();
      note('too_large');
      throw new ServiceError('upstream_response_too_large', `the model server answered more than ${opts.maxResponseBytes} bytes`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const c of res.body) {
        total += (c as Buffer).length;
        if (total > opts.maxResponseBytes) {
          res.body.destroy();
          note('too_large');
          throw new ServiceError('upstream_response_too_large', `the model server answered more than ${opts.maxResponseBytes} bytes`);
        }
        chunks.push(c as Buffer);
      }
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      if (isTimeout(err) || timeout.aborted) {
        note('timeout');
        throw new ServiceError('upstream_timeout', 'the model server did not answer in time', { cause: err });
      }
      note('body');
      throw new ServiceError('upstream_failed', 'the model server connection failed mid-response', { cause: err });
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.concat(chunks, total).toString('utf8'));
    } catch (err) {
      note('malformed');
      throw new ServiceError('upstream_failed', 'the model server sent a malformed answer', { cause: err });
    }
    if (okStatuses.includes(res.statusCode)) return { status: res.statusCode, json };
    const e = json as { error?: unknown; detail?: unknown };
    if (res.statusCode >= 400 && res.statusCode < 500 || res.statusCode === 503) {
      if (isErrorCode(e?.error) && PASS_THROUGH.has(e.error)) {
        const detail = typeof e.detail === 'string' && SAFE_DETAIL.test(e.detail) && !e.detail.includes('Traceback') ? e.detail : e.error.replace(/_/g, ' ');
        const headers: Record<string, string> = {};
        if (e.error === 'service_warming') headers['retry-after'] = String(res.headers['retry-after'] ?? '5');
        throw new ServiceError(e.error, detail, { headers });
      }
    }
    note(`status_${res.statusCode}`);
    throw new ServiceError('upstream_failed', `the model server failed (HTTP ${res.statusCode})`);
  }

  async function compute<T>(path: string, h: VerifyHeader | RepresentHeader | EmbedHeader, images: Buffer[], ctx: UpstreamCallContext): Promise<T> {
    return (await call('POST', path, encodeFrame(h, images), ctx)).json as T;
  }

  return {
    async readiness(ctx) {
      const r = await call('GET', INTERNAL_PATHS.readiness, undefined, ctx, [200, 503]);
      return { status: r.status, body: r.json as ReadinessResponse };
    },
    async capabilities(ctx) {
      return (await call('GET', INTERNAL_PATHS.capabilities, undefined, ctx)).json as CapabilitiesResponse;
    },
    verify: (h, images, ctx) => compute<VerifyResponse>(INTERNAL_PATHS.verify, h, images, ctx),
    represent: (h, images, ctx) => compute<RepresentResponse>(INTERNAL_PATHS.represent, h, images, ctx),
    embed: (h, images, ctx) => compute<EmbedResponse>(INTERNAL_PATHS.embed, h, images, ctx),
    close: () => pool.close(),
  };
}
