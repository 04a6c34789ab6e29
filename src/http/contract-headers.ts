/**
 * Contract §6 on every surface (gateway, MCP endpoint, console): `x-request-id` (the caller's UUID
 * echoed, otherwise a new UUID v4) and `x-api-version: v1` on every response, and the same id in
 * every log line of the request (label `request_id`). The three Fastify apps take `requestIdOptions`
 * and `registerContractHeaders`; the responses written outside a Fastify reply (Node's clientError
 * and checkExpectation answers, src/http/transport-guards.ts) take `contractHeaders`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { LogController, type FastifyInstance } from 'fastify';

export const API_VERSION = 'v1';

/** A UUID's text form, any version or variant (nil included): a caller's tracing id need not be random. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The id of a request whose `x-request-id` header holds `given`: that UUID (lower case), else a new v4. */
export function requestIdFrom(given: unknown): string {
  return typeof given === 'string' && UUID.test(given) ? given.toLowerCase() : randomUUID();
}

/** The two headers, for a response written on the raw socket or `http.ServerResponse`. */
export function contractHeaders(requestId: string): { 'x-request-id': string; 'x-api-version': string } {
  return { 'x-request-id': requestId, 'x-api-version': API_VERSION };
}

/**
 * The Fastify options that give a request its id and put it in the log lines as `request_id`.
 * `disableRequestLogging`: a surface that writes its own one line per request (the gateway).
 */
export function requestIdOptions(opts: { disableRequestLogging?: boolean } = {}) {
  return {
    genReqId: (req: IncomingMessage) => requestIdFrom(req.headers['x-request-id']),
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: opts.disableRequestLogging ?? false }),
  };
}

/**
 * Sets both headers as the first thing a request does, on the reply and on the raw response: the
 * reply's copy survives Fastify's error handler and 404 route, the raw copy is in every answer
 * written past Fastify (a hijacked reply: the MCP SDK writes its JSON-RPC and SSE answers with
 * `res.writeHead` itself). Register it before any other onRequest hook, so that what those hooks
 * refuse carries the headers too. Routing refusals that precede the hooks (`frameworkErrors`) set
 * them themselves.
 */
export function registerContractHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', async (req, reply) => {
    const h = contractHeaders(req.id);
    void reply.headers(h);
    for (const [k, v] of Object.entries(h)) reply.raw.setHeader(k, v);
  });
}
