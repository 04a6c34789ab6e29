/**
 * Renders every failure as the contract's ErrorResponse. Fastify's own errors (validation, content
 * type, body size, bad JSON) get stable codes; anything unexpected is `internal_error`, logged with
 * the request id and never shown.
 */
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors/index.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { html } from '../views/html.js';
import { layout, pageCsp } from '../views/layout.js';

function describeValidation(err: FastifyError): string {
  const first = err.validation?.[0];
  if (!first) return 'the request is not valid';
  const params = first.params as Record<string, unknown>;
  if (first.keyword === 'additionalProperties') return `unknown field "${String(params['additionalProperty'])}"`;
  if (first.keyword === 'required') return `missing field "${String(params['missingProperty'])}"`;
  const field = first.instancePath.replace(/^\//, '').replace(/\//g, '.');
  return field ? `field "${field}" ${first.message ?? 'is not valid'}` : `the body ${first.message ?? 'is not valid'}`;
}

export function toServiceError(err: FastifyError | ServiceError | Error): ServiceError {
  if (err instanceof ServiceError) return err;
  const e = err as FastifyError;
  if (e.validation) return new ServiceError('invalid_request', describeValidation(e));
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ServiceError('invalid_request', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError('request_too_large', 'the request body is too large');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ServiceError('invalid_request', 'the body is not valid JSON');
  }
  if (e.statusCode === 400 && err instanceof SyntaxError) return new ServiceError('invalid_request', 'the body is not valid JSON');
  // Fastify's other refusals of the request itself (a body-bearing method without Content-Type, …)
  // are the client's: a 4xx with a stable code, not an internal_error (the OpenAPI fuzz sent QUERY).
  if (e.statusCode === 413) return new ServiceError('request_too_large', 'the request body is too large', { cause: err });
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return new ServiceError('invalid_request', 'the request could not be parsed', { cause: err });
  return new ServiceError('internal_error', 'internal error', { cause: err });
}

/** A person in a browser (a stale form, a mistyped address) gets a page; the API always answers JSON. */
function wantsPage(req: FastifyRequest): boolean {
  return !req.url.startsWith('/api/') && String(req.headers.accept ?? '').includes('text/html');
}

function sendError(req: FastifyRequest, reply: FastifyReply, se: ServiceError): void {
  void reply.code(se.status).headers(se.headers);
  if (!wantsPage(req)) {
    void reply.type('application/json; charset=utf-8').send(se.toBody());
    return;
  }
  const nonce = randomBytes(16).toString('base64');
  const text = se.detail.charAt(0).toUpperCase() + se.detail.slice(1) + (/[.!?]$/.test(se.detail) ? '' : '.');
  const title = se.code === 'not_found' ? 'Page not found' : 'Something went wrong';
  const body = html`<h1>${title}</h1><section class="card"><p>${text}</p><p><a href="/">Back to the console</a></p></section>`;
  void reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', pageCsp(nonce))
    .send(layout({ title, nonce, csrf: '', current: '', signedIn: null, body }).value);
}

/** The console's 404 (src/http/route-guard.ts refuses unknown routes with it before their body). */
export const consoleNotFound = (req: FastifyRequest): ServiceError => new ServiceError('not_found', `no route ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}`);

async function errors(app: FastifyInstance): Promise<void> {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    // An unknown route is not_found whatever its body (Fastify's 404 route still parses it).
    const se = req.is404 && !(err instanceof ServiceError) ? consoleNotFound(req) : toServiceError(err);
    if (se.code === 'internal_error') req.log.error({ err }, 'unhandled console error');
    sendError(req, reply, se);
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(req, reply, consoleNotFound(req));
  });
}

export default fp(errors, { name: 'console-errors' });
