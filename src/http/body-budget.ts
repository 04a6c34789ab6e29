/**
 * A process-wide budget of request-body bytes held at once (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES).
 * Each surface bounds one body (25 MiB, 64 MiB for /compare), but not how many arrive together: a
 * few hundred keys, each one request at its limit, would hold gigabytes. A request takes its share
 * from its headers, after authentication and before its body is read (its declared Content-Length,
 * or its route's body limit when it is sent chunked), and gives it back when its response closes,
 * however it ends. A request that does not fit is refused unread, `503 body_capacity_full` with
 * Retry-After: it is capacity pressure, like queue_full, not the caller's own rate (contract §5).
 * `serve` gives the gateway and the MCP endpoint one budget (they share the process).
 *
 * Each account may hold at most its share (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT): one free
 * key that opened six 64 MiB uploads and dripped them filled the whole budget, and every other
 * tenant's /verify got body_capacity_full. Past its share an account is refused `429 rate_limited`:
 * the pressure is its own.
 */
import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../errors/index.js';
import { onClose } from '../service/lifecycle/cleanup.js';

export class BodyBudget {
  private held = 0;
  private readonly byAccount = new Map<string, number>();

  constructor(
    readonly limit: number,
    /** One account's share; the whole budget when not given. */
    readonly perAccount: number = limit,
  ) {}

  /** Bytes `account` holds now. */
  heldBy(account: string): number {
    return this.byAccount.get(account) ?? 0;
  }

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
  hold(req: FastifyRequest, bodyLimit: number, account?: string): void {
    const declared = Number(req.headers['content-length'] ?? NaN);
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const bytes = Number.isFinite(declared) ? Math.min(declared, bodyLimit) : chunked ? bodyLimit : 0;
    if (bytes <= 0) return;
    const mine = account === undefined ? 0 : this.heldBy(account);
    if (account !== undefined && mine + bytes > this.perAccount) {
      throw new ServiceError('rate_limited', `this account already sends ${mine} bytes of request bodies; its share is ${this.perAccount} bytes at once: wait for one to finish`, {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    if (!this.take(bytes)) {
      throw new ServiceError('body_capacity_full', `the server is receiving as many request bodies as it holds at once (${this.limit} bytes); retry in a second`, {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    }
    if (account !== undefined) this.byAccount.set(account, mine + bytes);
    onClose(req, () => {
      this.give(bytes);
      if (account === undefined) return;
      const left = this.heldBy(account) - bytes;
      if (left > 0) this.byAccount.set(account, left);
      else this.byAccount.delete(account);
    });
  }
}
