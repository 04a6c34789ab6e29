/**
 * The compute routes, one encapsulated plugin: POST /verify, /represent and /compare, behind
 * auth-limits.ts (registered in this context only), with their multipart bodies read before
 * validation. Bodies are typed from the JSON Schemas that validate them (src/vocabulary/schemas.ts,
 * through the json-schema-to-ts type provider), so a handler's `req.body` is what passed the schema.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifyTypeProvider } from 'fastify';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { AccountsPort } from '../../accounts/api.js';
import { ServiceError } from '../../errors/index.js';
import * as S from '../../vocabulary/schemas.js';
import type { ComputeContext, ComputeService } from '../../service/compute-service.js';
import type { BufferPool } from '../../service/buffer-pool.js';
import { compareJson } from '../../service/compare-result.js';
import type { Limiter } from '../../service/limits/limiter.js';
import { strikeGuard, type StrikeSettings } from '../../service/limits/strikes.js';
import type { GatewayMetrics } from '../metrics.js';
import { parseMultipart } from '../multipart.js';
import { authAndLimits, type AuthLimitsOptions } from './auth-limits.js';

export interface ComputeRoutesOptions {
  compute: ComputeService;
  accounts: AccountsPort;
  limiter: Limiter;
  metrics: GatewayMetrics;
  /** Binary /compare targets land in these reused buffers, returned once the kernel is done. */
  targetBuffers: BufferPool;
  maxImageBytes: number;
  /** FACECOMPUTE_MAX_COMPARE_BYTES: /compare carries vectors and has its own, larger body limit. */
  maxCompareBytes: number;
  strikes: StrikeSettings;
  auth: Omit<AuthLimitsOptions, 'accounts' | 'limiter'>;
}

/**
 * Request bodies typed from their schemas (json-schema-to-ts's FromSchema, the validator half of
 * @fastify/type-provider-json-schema-to-ts). The answers are not typed from the response schemas:
 * the compute service builds them (its results are `unknown` to the routes) and the serializers
 * compiled from S.*Response check them at run time; typing them from the schema here would be a cast.
 */
interface BodyTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends JSONSchema ? FromSchema<this['schema']> : unknown;
  serializer: unknown;
}

export const computeRoutes: FastifyPluginAsync<ComputeRoutesOptions> = async (plain, o) => {
  const app = plain.withTypeProvider<BodyTypeProvider>();
  await app.register(authAndLimits, { ...o.auth, accounts: o.accounts, limiter: o.limiter });

  const { compute, targetBuffers } = o;
  app.addHook('preValidation', async function multipartBody(req: FastifyRequest): Promise<void> {
    if (req.isMultipart()) {
      // /compare reads its parts with our own reader: its binary targets are most of the body.
      const compare = req.routeOptions.url === '/compare';
      const plan = compare ? (fields: Record<string, unknown>) => compute.planCompareStream(fields, req.id) : undefined;
      const r = await parseMultipart(req, o.maxImageBytes, o.auth.bodyLimitOf(req), compare ? targetBuffers : undefined, compare ? 'stream' : 'busboy', plan);
      if (r.binaryTargets) o.metrics.compareTargets.inc({ path: 'contiguous' });
      if (r.streamedTargets) o.metrics.compareTargets.inc({ path: 'streamed' });
      if (r.binaryTargets && req.routeOptions.url !== '/compare') {
        throw new ServiceError('invalid_request', "a binary 'targets' part is only accepted by /compare");
      }
      req.body = r.body;
      req.uploads = r.uploads;
      if (r.binaryTargets) req.binaryTargets = r.binaryTargets;
      if (r.streamedTargets) req.streamedTargets = r.streamedTargets;
    }
  });

  /** The compute context; its signal aborts upstream work when the client goes away. */
  const ctxOf = (req: FastifyRequest, reply: FastifyReply): ComputeContext => {
    const ac = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) ac.abort();
    });
    const reserve = async () => {
      if (req.fc!.consumed) return;
      await o.accounts.consume(req.auth!.accountId);
      req.fc!.consumed = true;
    };
    return {
      requestId: req.id,
      uploads: req.uploads,
      authenticated: req.auth !== undefined,
      signal: ac.signal,
      reserve,
      ...(req.binaryTargets ? { binaryTargets: req.binaryTargets } : {}),
      ...(req.streamedTargets ? { streamedTargets: req.streamedTargets } : {}),
      ...(req.fc?.ticket ? { admission: req.fc.ticket } : {}),
      strikes: strikeGuard(o.limiter, req.auth!.accountId, o.strikes),
    };
  };
  const err = { '4xx': { $ref: 'ErrorResponse#' }, '5xx': { $ref: 'ErrorResponse#' } } as const;

  app.post('/verify', { schema: { body: S.verifyBody, response: { 200: S.verifyResponse, ...err } } }, async (req, reply) => compute.verify(req.body, ctxOf(req, reply)));
  app.post('/represent', { schema: { body: S.representBody, response: { 200: S.representResponse, ...err } } }, async (req, reply) => compute.represent(req.body, ctxOf(req, reply)));
  // The answer is written as JSON text from the kernel's typed arrays (compare-result.ts): 100,000
  // results without top_k would otherwise be 100,000 objects. S.compareResponse still documents it
  // (openapi.json) and test/compare-result.test.ts checks the text against it.
  app.post('/compare', { bodyLimit: o.maxCompareBytes, schema: { body: S.compareBody, response: { ...err } } }, async (req, reply) => {
    // The handler owns the targets buffer from here: it goes back to the pool only once the kernel
    // is done with it (onResponse can fire earlier, when the client goes away).
    const ctx = ctxOf(req, reply);
    req.binaryTargets = undefined;
    req.streamedTargets = undefined;
    try {
      const r = await compute.compare(req.body, ctx);
      return reply.type('application/json; charset=utf-8').send(await compareJson(r));
    } finally {
      if (ctx.binaryTargets) targetBuffers.release(ctx.binaryTargets);
      ctx.streamedTargets?.close();
    }
  });
};
