/**
 * The compute routes, one encapsulated plugin: POST /verify, /represent and /compare, behind the
 * keyed door (src/service/lifecycle/door.ts; their config says `keyed: true`), with their multipart
 * bodies read before validation. Bodies are typed from the JSON Schemas that validate them (src/vocabulary/schemas.ts,
 * through the json-schema-to-ts type provider), so a handler's `req.body` is what passed the schema.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, FastifyTypeProvider } from 'fastify';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import * as S from '../../vocabulary/schemas.js';
import type { ComputeContext, ComputeService } from '../../service/compute-service.js';
import { compareJson } from '../../service/compare-result.js';
import type { JsonBodyParserOptions } from '../../http/json-body.js';
import type { Metering } from '../../service/lifecycle/metering.js';
import type { GatewayMetrics } from '../metrics.js';
import { readCompareMultipart, readImageMultipart } from '../multipart.js';
import { onClose } from '../../service/lifecycle/cleanup.js';

export interface ComputeRoutesOptions {
  compute: ComputeService;
  metering: Metering;
  metrics: GatewayMetrics;
  maxImageBytes: number;
  /** FACECOMPUTE_MAX_COMPARE_BYTES: /compare carries vectors and has its own, larger body limit. */
  maxCompareBytes: number;
  /** A route's body limit (/compare has its own, larger one). */
  bodyLimitOf: (req: FastifyRequest) => number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body carries /compare's targets (lifted from JSON, or read by our multipart reader). */
    compareTargets?: boolean;
  }
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

/**
 * The JSON body parser's lifting for /compare (src/http/json-body.ts, registered app-wide in
 * src/gateway/app.ts): a large body's `targets` rows and `targets_b64` text are read natively, off the
 * event loop, into the request's owner of its targets, and JSON.parse reads the rest.
 */
export function compareTargetsLift(compute: ComputeService, metrics: GatewayMetrics, maxTargets: number): NonNullable<JsonBodyParserOptions['lift']> {
  // Rows past max_targets + 1 are read, not kept: the answer is too_many_targets whatever they hold.
  const lift = { rows: 'targets', text: 'targets_b64', maxRows: maxTargets } as const;
  return {
    members: (req) => (req.routeOptions.config.compareTargets === true ? lift : undefined),
    take: (req, lifted, holder) => {
      req.compareTargets ??= compute.openCompareTargets();
      if (lifted.rows) req.compareTargets.adoptRows(lifted.rows);
      if (lifted.text) req.compareTargets.adoptText(lifted.text, holder);
      metrics.compareJsonLifted.inc();
    },
  };
}

export const computeRoutes: FastifyPluginAsync<ComputeRoutesOptions> = async (plain, o) => {
  const app = plain.withTypeProvider<BodyTypeProvider>();
  const { compute } = o;
  app.addHook('preValidation', async function multipartBody(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!req.isMultipart()) {
      // A JSON body's lifted targets (compareTargetsLift) may hold a pooled body buffer: freed when
      // the response closes, as the multipart path's are, if no compare consumed them before.
      const lifted = req.compareTargets;
      if (lifted) onClose(req, () => lifted.release());
      return;
    }
    if (req.routeOptions.config.compareTargets !== true) {
      const r = await readImageMultipart(req, o.maxImageBytes, o.bodyLimitOf(req));
      req.body = r.body;
      req.uploads = r.uploads;
      return;
    }
    // /compare reads its parts with our own reader into one owner of its targets, which frees them
    // once, when the response closes (answered, refused, or the client gone) or when compare ends.
    const targets = compute.openCompareTargets();
    req.compareTargets = targets;
    onClose(req, () => targets.release());
    const r = await readCompareMultipart(req, o.maxImageBytes, o.bodyLimitOf(req), targets);
    const path = targets.binaryPath;
    if (path) o.metrics.compareTargets.inc({ path });
    req.body = r.body;
    req.uploads = r.uploads;
  });

  /** The compute context; its signal aborts upstream work when the client goes away. */
  const ctxOf = (req: FastifyRequest, reply: FastifyReply): ComputeContext => {
    const ac = new AbortController();
    onClose(req, () => {
      if (!reply.raw.writableFinished) ac.abort();
    });
    return {
      ...o.metering.context(req.auth!, req.id, req.meter),
      uploads: req.uploads,
      signal: ac.signal,
      ...(req.compareTargets ? { targets: req.compareTargets } : {}),
      ...(req.ticket ? { admission: req.ticket } : {}),
    };
  };
  const err = { '4xx': { $ref: 'ErrorResponse#' }, '5xx': { $ref: 'ErrorResponse#' } } as const;

  app.post('/verify', { config: { keyed: true, admission: true }, schema: { body: S.verifyBody, response: { 200: S.verifyResponse, ...err } } }, async (req, reply) => compute.verify(req.body, ctxOf(req, reply)));
  app.post('/represent', { config: { keyed: true, admission: true }, schema: { body: S.representBody, response: { 200: S.representResponse, ...err } } }, async (req, reply) => compute.represent(req.body, ctxOf(req, reply)));
  // The answer is written as JSON text from the kernel's typed arrays (compare-result.ts): 100,000
  // results without top_k would otherwise be 100,000 objects. S.compareResponse still documents it
  // (openapi.json) and test/compare-result.test.ts checks the text against it.
  app.post('/compare', { bodyLimit: o.maxCompareBytes, config: { keyed: true, compareTargets: true }, schema: { body: S.compareBody, response: { ...err } } }, async (req, reply) => {
    const r = await compute.compare(req.body, ctxOf(req, reply));
    return reply.type('application/json; charset=utf-8').send(await compareJson(r));
  });
};
