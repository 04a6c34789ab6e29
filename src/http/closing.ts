/**
 * Requests that reach a surface while it closes. Fastify would answer them itself (before any hook)
 * with a bare 503 `{error, message, statusCode}`, without the contract's headers; a surface built with
 * `CLOSING_OPTIONS` and this hook answers `503 gateway_draining` (the contract's code for "shutting
 * down") in the contract's shape, with Retry-After and Connection: close. Such requests are the ones
 * already pipelined or arriving on a busy keep-alive connection: a closing server takes no new
 * connections and closes its idle ones. The gateway drains in its own way (src/gateway/app.ts).
 */
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../errors/index.js';

export const CLOSING_OPTIONS = { return503OnClosing: false } as const;

export function registerClosingRefusal(app: FastifyInstance, surface: string): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) {
      throw new ServiceError('gateway_draining', `the ${surface} is shutting down; retry on another instance`, { headers: { 'retry-after': '5', connection: 'close' } });
    }
  });
}
