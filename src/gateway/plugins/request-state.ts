/**
 * The gateway's request state, one plugin: what each request carries (its key, its uploads, its
 * binary compare targets, its bookkeeping) and the hooks that release it once, whatever way the
 * request ends; draining (new requests refused, in-flight ones waited for); the per-request metrics
 * and log line. Wrapped in fastify-plugin: its decorators and hooks are the whole gateway's.
 */
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountsPort, AuthenticatedKey } from '../../accounts/api.js';
import type { UsageSink } from '../../accounts/usage/recorder.js';
import { consumesCall } from '../../accounts/charging.js';
import { ServiceError, type ErrorCode } from '../../errors/index.js';
import type { Limiter } from '../../service/limits/limiter.js';
import type { AdmissionTicket } from '../../service/queue.js';
import type { CompareTargets } from '../../service/compare-targets.js';
import type { GatewayMetrics } from '../metrics.js';
import { recordUsage } from '../usage.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's REST key, authenticated from the headers (auth-limits.ts). */
    auth: AuthenticatedKey | undefined;
    /** Multipart file parts by field name (compute-routes.ts). */
    uploads: Map<string, Buffer> | undefined;
    /** /compare's targets (src/service/compare-targets.ts), released when the response closes (compute-routes.ts). */
    compareTargets: CompareTargets | undefined;
    /** This request's bookkeeping, set by the first onRequest hook. */
    fc: RequestState | undefined;
  }
}

/** Per-request bookkeeping of a gateway request, released once whatever way the request ends. */
export interface RequestState {
  t0: number;
  /** Counted in the in-flight total that draining waits for. */
  counted: boolean;
  /** The account's concurrent-request slot this request holds (null: none). */
  slot: string | null;
  /** A free call is reserved; `settled` once the answer decided whether it stays consumed. */
  consumed: boolean;
  settled: boolean;
  /** The reserved call was given back. */
  refunded: boolean;
  /** The error code of the answer, when it is an error. */
  error: ErrorCode | null;
  finished: boolean;
  /** The compute queue's place reserved at admission (src/service/queue.ts), until the job queues. */
  ticket?: AdmissionTicket;
}

/** Draining and the in-flight count it waits for. */
export class InFlight {
  draining = false;
  private count = 0;
  private readonly idleWaiters: Array<() => void> = [];

  enter(): void {
    this.count++;
  }

  leave(): void {
    this.count = Math.max(0, this.count - 1);
    if (this.count === 0) this.idleWaiters.splice(0).forEach((f) => f());
  }

  /** Resolves once no request is in flight, or after timeoutMs. */
  async idle(timeoutMs: number): Promise<void> {
    if (this.count === 0) return;
    await Promise.race([new Promise<void>((r) => this.idleWaiters.push(r)), new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
  }
}

export interface RequestStateOptions {
  accounts: AccountsPort;
  limiter: Limiter;
  metrics: GatewayMetrics;
  inFlight: InFlight;
  usage?: UsageSink | undefined;
}

export const requestState = fp<RequestStateOptions>(
  async (app, { accounts, limiter, metrics, inFlight, usage }) => {
    // Declared up front, so every request object has the same shape (Fastify's advice for V8).
    app.decorateRequest('auth', undefined);
    app.decorateRequest('uploads', undefined);
    app.decorateRequest('compareTargets', undefined);
    app.decorateRequest('fc', undefined);

    /** Settles a reserved call by the answer (src/accounts/charging.ts): kept only when compute ran. */
    async function settle(req: FastifyRequest, status: number | null): Promise<void> {
      const fc = req.fc;
      if (!fc || !fc.consumed || fc.settled || !req.auth) return;
      fc.settled = true;
      // status null: the caller went away before any answer was sent.
      if (status !== null && consumesCall(status, fc.error)) return;
      await accounts.refund(req.auth.accountId).then(
        () => {
          fc.refunded = true;
        },
        (err: unknown) => req.log.error({ err }, 'refund failed'),
      );
    }

    /**
     * Releases what a request holds. It runs on the response's 'close', which fires whether the answer
     * was sent or the connection was cut (a client gone mid-body, a receive timeout): Fastify's
     * onResponse runs only for answers that finished, and a slot held past that is never given back.
     */
    async function finish(req: FastifyRequest, reply: FastifyReply): Promise<void> {
      const fc = req.fc;
      if (!fc || fc.finished) return;
      fc.finished = true;
      const status = reply.raw.writableFinished ? reply.statusCode : null;
      await settle(req, status);
      recordUsage(usage, { auth: req.auth, route: req.routeOptions.url ?? 'unmatched', status, error: fc.error, consumed: fc.consumed, refunded: fc.refunded, t0: fc.t0, requestId: req.id });
      if (fc.slot !== null && req.auth) await limiter.release(req.auth.accountId, fc.slot).catch(() => undefined);
      if (fc.counted) inFlight.leave();
    }

    // Request context: draining, metrics (ids and the version header: registerContractHeaders).
    app.addHook('onRequest', async (req, reply) => {
      req.fc = { t0: performance.now(), counted: false, slot: null, consumed: false, settled: false, refunded: false, error: null, finished: false };
      reply.raw.once('close', () => void finish(req, reply));
      if (inFlight.draining && req.routeOptions.url !== '/health') {
        throw new ServiceError('gateway_draining', 'the gateway is draining (shutting down); retry on another instance', { headers: { 'retry-after': '5' } });
      }
      inFlight.enter();
      req.fc.counted = true;
    });
    // Before the answer leaves, so that a caller who reads its allowance next sees the refund.
    app.addHook('onSend', async (req, reply) => {
      await settle(req, reply.statusCode);
    });
    app.addHook('onResponse', async (req, reply) => {
      const fc = req.fc;
      const route = req.routeOptions.url ?? 'unmatched';
      if (fc) metrics.latency.observe({ route }, (performance.now() - fc.t0) / 1000);
      metrics.requests.inc({ route, code: String(reply.statusCode) });
      req.log.info({ method: req.method, route, status: reply.statusCode, ms: fc ? Math.round((performance.now() - fc.t0) * 10) / 10 : undefined }, 'request');
    });
  },
  { name: 'facecompute-request-state', fastify: '5.x' },
);
