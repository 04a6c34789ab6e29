/**
 * The one place errors become responses: ServiceErrors use ERROR_STATUS; Fastify's own validation,
 * parser and limit errors are mapped to contract codes with a precise detail; anything else is an
 * internal_error whose detail never leaks a stack, path, SQL or upstream body (the log has the cause).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RETRYABLE_503, ServiceError } from '../errors/index.js';

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** '/source/img' → 'source.img'; '/targets/3/1' → 'targets[3][1]'. */
export function fieldName(path: string, extra?: string): string {
  const parts = path.split('/').filter((p) => p.length > 0);
  if (extra !== undefined) parts.push(extra);
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  return out || 'body';
}

const BOOL_FIELDS = new Set(['align', 'enforce_detection', 'l2_normalize', 'anti_spoofing']);

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

/** Maps a non-ServiceError thrown by Fastify or a plugin to a ServiceError. */
export function toServiceError(err: FastifyError & { validation?: AjvError[] }): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err.validation) return new ServiceError('invalid_request', validationDetail(err.validation), { cause: err });
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError('request_too_large', 'the request body is larger than the limit', { cause: err });
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
    case 'FST_PROTO_VIOLATION':
      return new ServiceError('invalid_request', 'the JSON body uses a forbidden key (__proto__ or constructor)', { cause: err });
  }
  if (err instanceof SyntaxError || err.name === 'SyntaxError') return new ServiceError('invalid_request', 'the body is not valid JSON', { cause: err });
  const status = (err as { statusCode?: number }).statusCode;
  if (status === 413) return new ServiceError('request_too_large', 'the request body is larger than the limit', { cause: err });
  if (status !== undefined && status >= 400 && status < 500) return new ServiceError('invalid_request', 'the request could not be parsed', { cause: err });
  return new ServiceError('internal_error', 'internal error; the request id identifies it in the logs', { cause: err });
}

export function sendError(reply: FastifyReply, e: ServiceError): FastifyReply {
  const headers: Record<string, string> = { ...e.headers };
  if ((e.status === 429 || RETRYABLE_503.has(e.code)) && !Object.keys(headers).some((h) => h.toLowerCase() === 'retry-after')) headers['retry-after'] = '1';
  if (e.code === 'missing_api_key') headers['www-authenticate'] = 'Bearer';
  if (e.code === 'gateway_draining') headers['connection'] = 'close';
  reply.code(e.status).headers(headers).type('application/json; charset=utf-8');
  return reply.send(JSON.stringify(e.toBody()));
}

export function registerErrorHandling(app: FastifyInstance, onError?: (req: FastifyRequest, e: ServiceError) => void): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toServiceError(err);
    if (e.status >= 500) req.log.error({ err, code: e.code }, 'request failed');
    else req.log.info({ code: e.code, detail: e.detail }, 'request refused');
    onError?.(req, e);
    return sendError(reply, e);
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, new ServiceError('not_found', `no route ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}; see GET /capabilities and the OpenAPI document`)));
}
