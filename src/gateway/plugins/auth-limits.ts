/**
 * Auth and limits of the compute routes, one plugin, from the headers alone, before the body is read:
 * the declared body size, the key, the rate limit (with the RateLimit headers), the account's
 * concurrent slot, the process-wide body budget (with the account's share of it), the queue's
 * admission (routes whose config says `admission: true`) and the minimum upload rate. The slot comes
 * before the budget: an account at its concurrency holds no more of the budget than its slots allow. Wrapped in
 * fastify-plugin so that its onRequest hook joins the context that registers it (compute-routes.ts),
 * and only that one: the probes and /capabilities stay open.
 */
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountsPort } from '../../accounts/api.js';
import { ServiceError } from '../../errors/index.js';
import type { BodyBudget } from '../../http/body-budget.js';
import { watchUploadRate, type UploadRate } from '../../http/upload-rate.js';
import { readBearer } from '../../http/bearer.js';
import type { Limiter } from '../../service/limits/limiter.js';
import { countRequests, rateLimitHeaders, refuseOver, takeSlot } from '../../service/limits/account-limits.js';
import type { ComputeQueue } from '../../service/queue.js';

export interface AuthLimitsOptions {
  accounts: AccountsPort;
  limiter: Limiter;
  queue: ComputeQueue;
  bodyBudget: BodyBudget;
  /** The rate-limit policy the headers describe (FACECOMPUTE_RATE_LIMIT_WINDOW_MS, _CONCURRENT). */
  rateLimitWindowMs: number;
  rateLimitConcurrent: number;
  /** A route's body limit (/compare has its own, larger one). */
  bodyLimitOf: (req: FastifyRequest) => number;
  uploadRate: UploadRate;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's request takes a compute queue place from its headers (src/service/queue.ts). */
    admission?: boolean;
  }
}

/** The caller's key from `Authorization: Bearer <key>` or `x-api-key`, or null when neither is sent. */
function bearer(req: FastifyRequest): string | null {
  const b = readBearer(req);
  if (b === 'malformed') throw new ServiceError('invalid_api_key', 'the Authorization header must be "Bearer <key>"');
  if (b !== 'absent') return b.token;
  const k = req.headers['x-api-key'];
  if (typeof k === 'string' && k.length > 0) return k.trim();
  return null;
}

export const authAndLimits = fp<AuthLimitsOptions>(
  async (app, o) => {
    app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      const declared = Number(req.headers['content-length'] ?? NaN);
      const limit = o.bodyLimitOf(req);
      if (Number.isFinite(declared) && declared > limit) {
        throw new ServiceError('request_too_large', `the request body is larger than the limit of ${limit} bytes`, { headers: { connection: 'close' } });
      }
      const secret = bearer(req);
      if (!secret) throw new ServiceError('missing_api_key', 'an API key is required: Authorization: Bearer <key> or x-api-key');
      req.auth = await o.accounts.authenticate(secret, 'rest');
      // The window and the slot (src/service/limits/account-limits.ts), the same as MCP's.
      const w = await countRequests(o.limiter, req.auth.accountId);
      reply.headers(rateLimitHeaders(w, o.rateLimitWindowMs, o.rateLimitConcurrent));
      refuseOver(w, o.rateLimitWindowMs);
      req.fc!.slot = await takeSlot(o.limiter, req.auth.accountId);
      // The process-wide budget of bodies held at once (src/http/body-budget.ts), before the body is read.
      o.bodyBudget.hold(req, reply, limit, req.auth.accountId);
      if (req.routeOptions.config.admission === true) {
        // Deadline-aware admission before the body is read; the place is held until the job queues.
        const ticket = o.queue.admit();
        req.fc!.ticket = ticket;
        reply.raw.once('close', () => ticket.release());
      }
      watchUploadRate(req, reply, o.uploadRate);
    });
  },
  { name: 'facecompute-auth-limits', fastify: '5.x', dependencies: ['facecompute-request-state'] },
);
