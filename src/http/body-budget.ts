/**
 * A process-wide budget of request-body bytes held at once (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES).
 * Each surface bounds one body (25 MiB, 64 MiB for /compare), but not how many arrive together: a
 * few hundred keys, each one request at its limit, would hold gigabytes. A request takes its share
 * from its headers, after authentication and before its body is read (its declared Content-Length,
 * or its route's body limit when it is sent chunked), and gives it back when its response closes,
 * however it ends. A request that does not fit is refused unread, `503 body_capacity_full` with
 * Retry-After: it is capacity pressure, like queue_full, not the caller's own rate (contract §5).
 * `serve` gives the gateway and the MCP endpoint one budget (they share the process).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors/index.js';

export class BodyBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  /** Bytes held now by requests in flight. */
  get inUse(): number {
    return this.held;
  }

  /** Takes `bytes` if they fit; false (and nothing taken) otherwise. */
  take(bytes: number): boolean {
    if (bytes <= 0) return true;
    if (this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held = Math.max(0, this.held - bytes);
  }

  /**
   * Takes the share of `req`, whose body may be at most `bodyLimit` bytes, until its response closes;
   * throws `body_capacity_full` when it does not fit. A request without a body takes nothing.
   */
  hold(req: FastifyRequest, reply: FastifyReply, bodyLimit: number): void {
    const declared = Number(req.headers['content-length'] ?? NaN);
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const bytes = Number.isFinite(declared) ? Math.min(declared, bodyLimit) : chunked ? bodyLimit : 0;
    if (bytes <= 0) return;
    if (!this.take(bytes)) {
      throw new ServiceError('body_capacity_full', `the server is receiving as many request bodies as it holds at once (${this.limit} bytes); retry in a second`, {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    reply.raw.once('close', () => this.give(bytes));
  }
}
