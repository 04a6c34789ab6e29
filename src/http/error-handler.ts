/**
 * The one place errors become responses, for every surface (REST, MCP, the console): one table
 * (`toServiceError`) from a ServiceError, a native error or Fastify's own validation, parser and limit
 * errors to a contract code and detail; anything else is an internal_error whose detail never leaks a
 * stack, path, SQL or upstream body (the log has the cause). `registerErrorHandling` is the one error
 * handler; a surface only chooses its envelope (`SurfaceErrors.send`: REST's JSON by default, the
 * console's HTML page for a browser) and its 404.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RETRYABLE_503, ServiceError, fromNative } from '../errors/index.js';

interface AjvError {
  instancePath: string;
  schemaPath?: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** '/source/img' → 'source.img'; '/targets/3/1' → 'targets[3][1]'; the empty path is `root`. */
export function fieldName(path: string, extra?: string, root = 'body'): string {
  const parts = path.split('/').filter((p) => p.length > 0);
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out || root;
}

const BOOL_FIELDS = new Set(['align', 'enforce_detection', 'l2_normalize', 'return_face', 'anti_spoofing', 'detector_fallback']);

export function validationDetail(errors: AjvError[]): string {
  const e = errors.find((x) => x.keyword === 'additionalProperties') ?? errors.find((x) => x.keyword === 'required') ?? errors.find((x) => x.keyword === 'anyOf') ?? errors.find((x) => x.keyword === 'oneOf') ?? errors[0];
  if (!e) return 'invalid request body';
  switch (e.keyword) {
    case 'additionalProperties':
      return `unknown field '${fieldName(e.instancePath, String(e.params['additionalProperty']))}'`;
    case 'required':
      return `missing required field '${fieldName(e.instancePath, String(e.params['missingProperty']))}'`;
    case 'anyOf': {
      const f = fieldName(e.instancePath);
      const last = f.split('.').pop() ?? f;
      if (BOOL_FIELDS.has(last)) return `field '${f}' must be a boolean: true, false, "true", "false", "1" or "0"`;
      if (last === 'img1' || last === 'img2') return `field '${f}' must be an image string or an embedding (array of numbers)`;
      if (last === 'img') return `field '${f}' must be an image string or an array of image strings`;
      return `field '${f}' has the wrong type`;
    }
    case 'oneOf':
      return `field '${fieldName(e.instancePath)}' must hold exactly one of img or embedding`;
    default: {
      const f = fieldName(e.instancePath);
      return f === 'body' ? `request body ${e.message ?? 'is invalid'}` : `field '${f}' ${e.message ?? 'is invalid'}`;
    }
  }
}

type SchemaNode = { type?: unknown; items?: SchemaNode } & Record<string, unknown>;

/** An embedding's schema, by shape: an array of numbers (schemas.ts has no other). */
function isEmbedding(n: SchemaNode | undefined): boolean {
  return n?.type === 'array' && n.items?.type === 'number';
}

/**
 * A validation error inside an embedding is the contract's `invalid_embedding` (NaN, ±Infinity,
 * which JSON.parse makes of 1e999, or anything not a number) or `embedding_dimension_mismatch` (no
 * numbers at all, or more than any model has), not a generic invalid_request. The error's
 * schemaPath is walked in the route's body schema to find whether it fails inside an embedding.
 * Where a field may be an image or an embedding (verify's img1/img2), only failures inside the
 * array count: a number or an object there could be either, and stays invalid_request.
 */
export function embeddingError(errors: AjvError[], bodySchema: unknown): ServiceError | null {
  if (typeof bodySchema !== 'object' || bodySchema === null) return null;
  for (const e of errors) {
    const segs = (e.schemaPath ?? '').replace(/^#\/?/, '').split('/').filter((x) => x.length > 0);
    const nodes: Array<SchemaNode | undefined> = [bodySchema as SchemaNode];
    for (const seg of segs) nodes.push((nodes[nodes.length - 1] as Record<string, SchemaNode> | undefined)?.[seg]);
    const holder = nodes[nodes.length - 2];
    const f = fieldName(e.instancePath);
    if (segs[segs.length - 2] === 'items' && isEmbedding(nodes[nodes.length - 3]) && e.keyword === 'type') {
      return new ServiceError('invalid_embedding', `${f} is not a finite number (NaN, Infinity and non-numbers are refused)`);
    }
    if (!isEmbedding(holder)) continue;
    if (e.keyword === 'minItems') return new ServiceError('embedding_dimension_mismatch', `${f} holds no numbers; an embedding has as many as the model has dimensions (see /capabilities embedding_dims)`);
    if (e.keyword === 'maxItems') return new ServiceError('embedding_dimension_mismatch', `${f} holds more numbers than any model has dimensions`);
    if (e.keyword === 'type' && !segs.includes('anyOf')) return new ServiceError('invalid_embedding', `${f} must be an embedding: an array of finite numbers`);
  }
  return null;
}

/**
 * Maps anything thrown to a ServiceError. `tooLargeDetail` is the detail of a body refused by
 * Fastify's body limit when the surface names its own limit there (MCP).
 */
export function toServiceError(err: FastifyError & { validation?: AjvError[] }, bodySchema?: unknown, tooLargeDetail?: string): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err.validation) {
    const emb = embeddingError(err.validation, bodySchema);
    if (emb) return new ServiceError(emb.code, emb.detail, { cause: err });
    return new ServiceError('invalid_request', validationDetail(err.validation), { cause: err });
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError('request_too_large', tooLargeDetail ?? 'the request body is larger than the limit', { cause: err });
    case 'FST_REQ_FILE_TOO_LARGE':
      return new ServiceError('image_too_large', 'an uploaded file is larger than the image byte limit', { cause: err });
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new ServiceError('request_too_large', 'the multipart body has too many parts', { cause: err });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new ServiceError('invalid_request', 'unsupported Content-Type; send application/json or multipart/form-data', { cause: err });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ServiceError('invalid_request', 'the JSON body is empty', { cause: err });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ServiceError('invalid_request', 'the body is not valid JSON', { cause: err });
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return new ServiceError('invalid_request', 'a multipart text part typed application/json does not hold valid JSON', { cause: err });
    case 'FST_PROTO_VIOLATION':
      return new ServiceError('invalid_request', 'the JSON body uses a forbidden key (__proto__ or constructor)', { cause: err });
  }
  if (err instanceof SyntaxError || err.name === 'SyntaxError') return new ServiceError('invalid_request', 'the body is not valid JSON', { cause: err });
  const status = (err as { statusCode?: number }).statusCode;
  if (status === 413) return new ServiceError('request_too_large', tooLargeDetail ?? 'the request body is larger than the limit', { cause: err });
  if (status !== undefined && status >= 400 && status < 500) return new ServiceError('invalid_request', 'the request could not be parsed', { cause: err });
  // The binding's errors carry the core's stable code (src/errors/native-error.ts).
  const native = fromNative(err);
  if (native.code !== 'internal_error') return native;
  return new ServiceError('internal_error', 'internal error; the request id identifies it in the logs', { cause: err });
}

export function sendError(reply: FastifyReply, e: ServiceError): FastifyReply {
  const headers: Record<string, string> = { ...e.headers };
  if ((e.status === 429 || RETRYABLE_503.has(e.code)) && !Object.keys(headers).some((h) => h.toLowerCase() === 'retry-after')) headers['retry-after'] = '1';
  if (e.code === 'missing_api_key' && headers['www-authenticate'] === undefined) headers['www-authenticate'] = 'Bearer';
  if (e.code === 'gateway_draining') headers['connection'] = 'close';
  reply.code(e.status).headers(headers).type('application/json; charset=utf-8');
  return reply.send(JSON.stringify(e.toBody()));
}

export function notFound(req: FastifyRequest): ServiceError {
  return new ServiceError('not_found', `no route ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}; see GET /capabilities and the OpenAPI document`);
}

/** What a surface decides about its errors; the mapping itself is the table above. */
export interface SurfaceErrors {
  /** The surface's 404 (unknown routes, whatever their body). */
  notFound: (req: FastifyRequest) => ServiceError;
  /** The surface's envelope: how a mapped error is written. REST's JSON when not given. */
  send?: (req: FastifyRequest, reply: FastifyReply, e: ServiceError) => unknown;
  /** request_too_large's detail for a body over Fastify's body limit, when the surface names it. */
  tooLargeDetail?: string;
  /** Sees every mapped error before it is sent (the gateway's metrics and usage record). */
  onError?: (req: FastifyRequest, e: ServiceError) => void;
}

/** The one error handler (and not-found handler) of a surface. */
export function registerErrorHandling(app: FastifyInstance, surface: Partial<SurfaceErrors> = {}): void {
  const notFoundOf = surface.notFound ?? notFound;
  const send = surface.send ?? ((_req: FastifyRequest, reply: FastifyReply, e: ServiceError) => sendError(reply, e));
  app.setErrorHandler((err: FastifyError, req, reply) => {
    // A route that does not exist has no body to parse: Fastify's 404 route still runs the content-type
    // and body checks of body-bearing methods (QUERY without Content-Type was a 400), the contract says 404.
    // The route guard's own refusals (src/http/route-guard.ts: 405, Connection: close) stand as thrown.
    const e = req.is404 && !(err instanceof ServiceError) ? notFoundOf(req) : toServiceError(err, (req.routeOptions.schema as { body?: unknown } | undefined)?.body, surface.tooLargeDetail);
    // A capacity refusal (queue_full, queue_timeout, warming, draining) is the service protecting
    // itself, not a fault: logged like a 4xx, without the error's stack. Under overload they are
    // most answers, and serializing a stack for each cost the gateway's event loop the time that
    // delays every other refusal.
    if (e.status >= 500 && !RETRYABLE_503.has(e.code)) req.log.error({ err, code: e.code }, 'request failed');
    else if (e.status >= 500) req.log.warn({ code: e.code, detail: e.detail }, 'request refused');
    else req.log.info({ code: e.code, detail: e.detail }, 'request refused');
    surface.onError?.(req, e);
    return send(req, reply, e);
  });
  app.setNotFoundHandler((req, reply) => send(req, reply, notFoundOf(req)));
}
