/**
 * The gateway's request state, one plugin: what each request carries (its key, its uploads, its
 * binary compare targets, its bookkeeping) and the hooks that release it once, whatever way the
 * request ends; draining (new requests refused, in-flight ones waited for); the per-request metrics
 * and log line. Wrapped in fastify-plugin: its decorators and hooks are the whole gateway's.
 */
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UsageSink } from '../../accounts/usage/recorder.js';
import { ServiceError, type ErrorCode } from '../../errors/index.js';
import type { CompareTargets } from '../../service/compare-targets.js';
import type { GatewayMetrics } from '../metrics.js';
import { recordUsage } from '../../service/lifecycle/usage.js';
import { onClose } from '../../service/lifecycle/cleanup.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route still answers while the gateway drains (/health). */
    whileDraining?: boolean;
  }
  interface FastifyRequest {
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
  /** The error code of the answer, when it is an error. */
  error: ErrorCode | null;
  finished: boolean;
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
  metrics: GatewayMetrics;
  inFlight: InFlight;
  usage?: UsageSink | undefined;
}

export const requestState = fp<RequestStateOptions>(
  async (app, { metrics, inFlight, usage }) => {
    // Declared up front, so every request object has the same shape (Fastify's advice for V8).
    app.decorateRequest('uploads', undefined);
    app.decorateRequest('compareTargets', undefined);
    app.decorateRequest('fc', undefined);

    /** Settles the request's metered call by the answer (src/service/lifecycle/metering.ts). */
    async function settle(req: FastifyRequest, status: number | null): Promise<void> {
      // status null: the caller went away before any answer was sent.
      await req.meter?.settle(status, req.fc?.error, (err) => req.log.error({ err }, 'refund failed'));
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
      recordUsage(usage, { surface: 'rest', auth: req.auth, route: req.routeOptions.url ?? 'unmatched', status, error: fc.error, outcome: req.meter?.outcome ?? 'not_charged', t0: fc.t0, requestId: req.id });
      await req.meter?.release();
      if (fc.counted) inFlight.leave();
    }

    // Request context: draining, metrics (ids and the version header: registerContractHeaders).
    app.addHook('onRequest', async (req, reply) => {
      req.fc = { t0: performance.now(), counted: false, error: null, finished: false };
      onClose(req, () => finish(req, reply));
      if (inFlight.draining && req.routeOptions.config.whileDraining !== true) {
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
  { name: 'facecompute-request-state', fastify: '5.x', dependencies: ['facecompute-request-cleanup'] },
);
