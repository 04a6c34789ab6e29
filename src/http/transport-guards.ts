/**
 * Transport-level refusals: requests that Node's HTTP parser rejects before any route sees them (a
 * malformed Content-Length, headers over the size limit, a request that does not arrive in time).
 * Node reports them as `clientError` on the server; every surface answers them in the contract's
 * shape (`{error, detail}`, stable codes from ERROR_STATUS) whenever the socket can still take a
 * response, instead of Fastify's own `{error, message, statusCode}`.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors/service-error.js';
import { contractHeaders, requestIdFrom } from './contract-headers.js';
import { registerLingeringClose } from './lingering-close.js';

/** The error Node's parser or its request timer raised (`code` is llhttp's HPE_* or Node's ERR_*). */
export interface ClientError extends Error {
  code?: string;
  /** What Node's parser had of the request when it failed (absent for timeouts). */
  rawPacket?: unknown;
}

/** Node's HTTP parser codes and what they mean to a client, in words. */
const PARSER_DETAIL: Record<string, string> = {
  HPE_INVALID_CONTENT_LENGTH: 'the Content-Length header is not a valid non-negative integer',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'the request carries more than one Content-Length header',
  HPE_INVALID_TRANSFER_ENCODING: 'the Transfer-Encoding header is invalid, or sent together with Content-Length (send one of them; chunked must come last)',
  HPE_INVALID_CHUNK_SIZE: 'a chunk size of the chunked body is invalid',
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 'the chunk extensions of the chunked body are too large',
  HPE_INVALID_METHOD: 'the HTTP method is invalid',
  HPE_INVALID_URL: 'the request target is not a valid URL path',
  HPE_INVALID_VERSION: 'the HTTP version is invalid',
  HPE_INVALID_HEADER_TOKEN: 'a header name or value holds a character HTTP does not allow',
  HPE_INVALID_CONSTANT: 'the request line is malformed',
  HPE_LF_EXPECTED: 'a line of the request does not end with CRLF',
  HPE_CR_EXPECTED: 'a line of the request does not end with CRLF',
  HPE_INVALID_EOF_STATE: 'the connection ended before the whole request (headers and body) arrived',
};

/**
 * The contract error for a client error, or null when nothing should be written (the peer reset
 * the connection). `receiveTimeoutMs` is the configured bound, named in the 408's detail.
 */
export function clientErrorToServiceError(err: ClientError, receiveTimeoutMs: number): ServiceError | null {
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return null;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ServiceError('request_timeout', `the whole request (headers and body) must arrive within ${receiveTimeoutMs} ms; it did not`, { cause: err });
    case 'HPE_HEADER_OVERFLOW':
      return new ServiceError('headers_too_large', 'the request headers are larger than the server accepts (16 KiB in all)', { cause: err });
  }
  const detail = (err.code && PARSER_DETAIL[err.code]) ?? 'the HTTP request is malformed';
  return new ServiceError('invalid_request', detail, { cause: err });
}

/** The raw HTTP/1.1 response for `e`: the connection is closed after it, since the parser's state is lost. */
export function rawErrorResponse(e: ServiceError, requestId: string): string {
  const body = JSON.stringify(e.toBody());
  return [
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}`,
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    ...Object.entries(contractHeaders(requestId)).map(([k, v]) => `${k}: ${v}`),
    '',
    body,
  ].join('\r\n');
}

/**
 * The id of a request the parser refused. A request whose head was parsed (one whose body did not
 * arrive in time) already has its id, set on its response by registerContractHeaders; otherwise the
 * caller's `x-request-id` when the refused bytes still hold it (Node passes them as `rawPacket`:
 * the request's head for most parser errors), else a new one.
 */
export function refusedRequestId(socket: Socket, rawPacket: unknown): string {
  const res = (socket as Socket & { _httpMessage?: { getHeader?(name: string): unknown } })._httpMessage;
  const assigned = res?.getHeader?.('x-request-id');
  if (typeof assigned === 'string') return assigned;
  if (!Buffer.isBuffer(rawPacket)) return requestIdFrom(undefined);
  const head = rawPacket.subarray(0, 64 * 1024).toString('latin1');
  return requestIdFrom(/\r\nx-request-id[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r\n/i.exec(head)?.[1]);
}

/** A response is already on its way on this socket: writing another would corrupt it. */
function responseStarted(socket: Socket): boolean {
  const res = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  return res?.headersSent === true;
}

/**
 * Fastify options that bound how long a client may take to send a request and answer transport
 * errors in the contract's shape. Node checks the bound on a timer (`connectionsCheckingInterval`,
 * 30 s by default, which is how a 100 s limit became ~128 s); the timer here is at most a second,
 * so a request is refused within `receiveTimeoutMs` + 1 s. The header timeout must not exceed the
 * request timeout or Node keeps waiting on the longer one.
 */
export function transportOptions(receiveTimeoutMs: number) {
  const checkEvery = Math.max(50, Math.min(1000, Math.floor(receiveTimeoutMs / 4)));
  return {
    requestTimeout: receiveTimeoutMs,
    // requireHostHeader: Node would answer a missing Host itself, with an empty 400; the onRequest
    // guard of registerTransportGuards answers it in the contract's shape instead.
    http: { requestTimeout: receiveTimeoutMs, headersTimeout: receiveTimeoutMs, connectionsCheckingInterval: checkEvery, requireHostHeader: false },
    /** Router-level refusals (a path that is not valid percent-encoding), before any hook runs. */
    frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
      const e = err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new ServiceError('invalid_request', 'the request path is not valid: check its percent-encoding', { cause: err })
        : new ServiceError('invalid_request', 'the request could not be routed', { cause: err });
      req.log.info({ code: e.code, router_error: err.code, method: req.method, status: e.status }, 'request refused by the router');
      void reply.code(e.status).headers(contractHeaders(req.id)).type('application/json; charset=utf-8').send(JSON.stringify(e.toBody()));
    },
    clientErrorHandler(this: FastifyInstance, err: ClientError, socket: Socket): void {
      const e = socket.destroyed ? null : clientErrorToServiceError(err, receiveTimeoutMs);
      if (e) {
        const requestId = refusedRequestId(socket, err.rawPacket);
        this.log.info({ request_id: requestId, code: e.code, transport_error: err.code }, 'request refused by the HTTP parser');
        if (socket.writable && !responseStarted(socket)) socket.write(rawErrorResponse(e, requestId));
      }
      socket.destroy();
    },
  };
}

/**
 * The rest of what Node would otherwise answer outside the contract: an HTTP/1.1 request without a
 * Host header (RFC 9112 requires a 400) and an `Expect` other than 100-continue (a 417); and a
 * connection closed with its body unread lingers (src/http/lingering-close.ts). Register
 * it after registerContractHeaders (src/http/contract-headers.ts), before the surface's own onRequest
 * hooks.
 */
export function registerTransportGuards(app: FastifyInstance): void {
  registerLingeringClose(app);
  app.addHook('onRequest', async (req) => {
    if (req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor >= 1 && req.headers.host === undefined) {
      throw new ServiceError('invalid_request', 'an HTTP/1.1 request must carry a Host header');
    }
  });
  app.server.on('checkExpectation', (req, res) => {
    const e = new ServiceError('expectation_failed', `only "Expect: 100-continue" is supported, not ${JSON.stringify(String(req.headers.expect).slice(0, 60))}`);
    const body = JSON.stringify(e.toBody());
    const requestId = requestIdFrom(req.headers['x-request-id']);
    app.log.info({ request_id: requestId, code: e.code, method: req.method, status: e.status }, 'request refused: unsupported Expect');
    res.writeHead(e.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close', ...contractHeaders(requestId) });
    res.end(body);
  });
}
