/**
 * The console's envelope of an error (src/http/error-handler.ts maps every failure, for every
 * surface, through one table): the API and agents get the contract's ErrorResponse as JSON; a person
 * in a browser (a stale form, a mistyped address) gets a page.
 */
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../errors/index.js';
import { registerErrorHandling, sendError } from '../../http/error-handler.js';
import { randomBytes } from 'node:crypto';
import { html } from '../views/html.js';
import { layout, pageCsp } from '../views/layout.js';

/** A person in a browser (a stale form, a mistyped address) gets a page; the API always answers JSON. */
function wantsPage(req: FastifyRequest): boolean {
  return !req.url.startsWith('/api/') && String(req.headers.accept ?? '').includes('text/html');
}

function sendPage(req: FastifyRequest, reply: FastifyReply, se: ServiceError): unknown {
  if (!wantsPage(req)) return sendError(reply, se);
  const nonce = randomBytes(16).toString('base64');
  const text = se.detail.charAt(0).toUpperCase() + se.detail.slice(1) + (/[.!?]$/.test(se.detail) ? '' : '.');
  const title = se.code === 'not_found' ? 'Page not found' : 'Something went wrong';
  const body = html`<h1>${title}</h1><section class="card"><p>${text}</p><p><a href="/">Back to the console</a></p></section>`;
  return reply
    .code(se.status)
    .headers(se.headers)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', pageCsp(nonce))
    .send(layout({ title, nonce, csrf: '', current: '', signedIn: null, body }).value);
}

/** The console's 404 (src/http/route-guard.ts refuses unknown routes with it before their body). */
export const consoleNotFound = (req: FastifyRequest): ServiceError => new ServiceError('not_found', `no route ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}`);

async function errors(app: FastifyInstance): Promise<void> {
  registerErrorHandling(app, { notFound: consoleNotFound, send: sendPage });
}

export default fp(errors, { name: 'console-errors' });
