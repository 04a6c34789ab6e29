/**
 * The keyed door, one plugin for every surface whose routes take a key (REST's compute routes, MCP's
 * /mcp): from the headers alone, before the body is read, it authenticates the caller
 * (authenticate.ts, under the surface's KeyPolicy), meters it (metering.ts), holds its share of the
 * process-wide body budget (src/http/body-budget.ts), takes the compute queue's admission, and
 * watches the upload rate. It acts on the routes whose config says so, never on their URL:
 * `keyed: true` (the door applies), `admission: true` (a queue place is taken from the headers).
 * Everything it takes is given back by cleanup.ts's one close listener.
 *
 * The surface chooses how a key is metered: `request` (REST) counts each request in the window, with
 * the RateLimit headers, and holds one concurrent slot for its life (the gateway's request state
 * settles the call by the answer); `call` (MCP) only refuses a spent window here, because each
 * JSON-RPC element counts and each tool call takes its slot as it runs (Metering.run).
 * Wrapped in fastify-plugin: its hook is the surface's, in the order it is registered.
 */
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import type { AccountsPort, AuthenticatedKey } from '../../accounts/api.js';
import { ServiceError } from '../../errors/index.js';
import type { BodyBudget } from '../../http/body-budget.js';
import { declaresBody } from '../../http/route-guard.js';
import { watchUploadRate, type UploadRate } from '../../http/upload-rate.js';
import type { AdmissionTicket, ComputeQueue } from '../queue.js';
import { authenticate, type KeyPolicy } from './authenticate.js';
import { onClose } from './cleanup.js';
import type { MeteredCall, Metering } from './metering.js';

export interface DoorOptions {
  accounts: AccountsPort;
  metering: Metering;
  bodyBudget: BodyBudget;
  policy: KeyPolicy;
  meter: 'request' | 'call';
  /** A route's body limit (REST's /compare has its own, larger one). */
  bodyLimitOf: (req: FastifyRequest) => number;
  /** A declared body over the route's limit is refused before the key is looked at (REST). */
  refuseDeclaredOver: boolean;
  /** The queue `admission: true` routes take a place in. */
  queue?: ComputeQueue;
  uploadRate?: UploadRate;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes a key: the keyed door (src/service/lifecycle/door.ts) applies. */
    keyed?: boolean;
    /** The route's request takes a compute queue place from its headers (src/service/queue.ts). */
    admission?: boolean;
  }
  interface FastifyRequest {
    /** The caller's key, authenticated from the headers by the keyed door. */
    auth: AuthenticatedKey | undefined;
    /** The request's metered call (`meter: 'request'`): its slot and its free call. */
    meter: MeteredCall | undefined;
    /** The compute queue's place reserved at admission, until the job queues. */
    ticket: AdmissionTicket | undefined;
  }
}

export const keyedDoor = fp<DoorOptions>(
  async (app, o) => {
    app.decorateRequest('auth', undefined);
    app.decorateRequest('meter', undefined);
    app.decorateRequest('ticket', undefined);
    app.addHook('onRequest', async (req, reply) => {
      const config = req.routeOptions.config;
      if (config.keyed !== true) return;
      const limit = o.bodyLimitOf(req);
      if (o.refuseDeclaredOver) {
        const declared = Number(req.headers['content-length'] ?? NaN);
        if (Number.isFinite(declared) && declared > limit) {
          throw new ServiceError('request_too_large', `the request body is larger than the limit of ${limit} bytes`, { headers: { connection: 'close' } });
        }
      }
      const key = await authenticate(o.accounts, req, o.policy);
      req.auth = key;
      if (o.meter === 'request') {
        const w = await o.metering.count(key.accountId);
        reply.headers(o.metering.headers(w));
        o.metering.refuseOver(w);
        // The slot comes before the budget: an account at its concurrency holds no more of the
        // budget than its slots allow.
        req.meter = await o.metering.open(key.accountId);
      } else {
        // Past the window every element of a batch would be refused anyway, after its body was read.
        await o.metering.refuseSpent(key.accountId, declaresBody(req));
      }
      o.bodyBudget.hold(req, limit, key.accountId);
      if (config.admission === true && o.queue) {
        // Deadline-aware admission before the body is read; the place is held until the job queues.
        const ticket = o.queue.admit();
        req.ticket = ticket;
        onClose(req, () => ticket.release());
      }
      if (o.uploadRate) watchUploadRate(req, reply, o.uploadRate);
    });
  },
  { name: 'facecompute-keyed-door', fastify: '5.x', dependencies: ['facecompute-request-cleanup'] },
);
