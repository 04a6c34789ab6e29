/**
 * A minimum average upload rate (FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S) for request bodies. A body
 * holds its share of the body budget, its account's concurrency slot and a socket for as long as it
 * takes to arrive; FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS alone lets a drip hold them for 30 s. Once
 * the grace (FACECOMPUTE_UPLOAD_GRACE_MS) has passed, a body that has arrived slower than the rate on
 * average since its headers is cut off: `408 upload_too_slow` with Connection: close, and the socket
 * is destroyed, which gives back everything the request held (its 'close' listeners run).
 *
 * Bytes are counted on the socket (`bytesRead`, plus what the request had buffered when the watch
 * began), not by listening to the request stream, which would take the body from Fastify's parser.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors/index.js';
import { contractHeaders } from './contract-headers.js';
import { onClose } from '../service/lifecycle/cleanup.js';

export interface UploadRate {
  /** Bytes per second, on average; 0 turns the check off. */
  minBytesPerS: number;
  graceMs: number;
}

/** Watches the body of `req` until it has arrived or the response has closed. */
export function watchUploadRate(req: FastifyRequest, reply: FastifyReply, o: UploadRate): void {
  if (o.minBytesPerS <= 0) return;
  const socket = req.raw.socket;
  const t0 = performance.now();
  // Body bytes that came in the same reads as the headers are already buffered in the request:
  // they count as received (a client that sent 64 KiB with its headers was cut off as if it had
  // sent nothing).
  const read0 = socket.bytesRead - req.raw.readableLength;
  const check = () => {
    if (req.raw.complete || reply.raw.headersSent || socket.destroyed) return stop();
    const s = (performance.now() - t0) / 1000;
    const got = socket.bytesRead - read0;
    if (got >= o.minBytesPerS * s) return;
    stop();
    const e = new ServiceError('upload_too_slow', `the body arrived at ${Math.round(got / s)} bytes/s on average over ${s.toFixed(1)} s; the minimum is ${o.minBytesPerS} bytes/s: send it promptly`);
    req.log.info({ code: e.code, received: got, seconds: s }, 'upload cut off: too slow');
    const body = JSON.stringify(e.toBody());
    reply.hijack();
    reply.raw.writeHead(e.status, { ...contractHeaders(req.id), 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    reply.raw.end(body, () => socket.destroy());
  };
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    clearTimeout(timer);
    clearInterval(timer);
    timer = undefined;
  };
  timer = setTimeout(() => {
    check();
    if (timer !== undefined) timer = setInterval(check, 250).unref();
  }, o.graceMs).unref();
  onClose(req, stop);
}
