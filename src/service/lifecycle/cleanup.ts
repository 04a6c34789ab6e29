/**
 * Cleanup on close, in one place. Whatever a request takes (its account's slot and reserved call, a
 * queue place, its share of the body budget, the upload-rate watch, /compare's targets, the compute
 * signal, MCP's transport) is given back by a function it registers here with `onClose(req, fn)`.
 * This plugin puts the one listener on the response's 'close', which fires however the request ends
 * (answered, refused, the client gone mid-body, a receive timeout: Fastify's onResponse runs only for
 * answers that finished), and runs them once, in the order they were taken. A function registered
 * after the close runs at once. Wrapped in fastify-plugin: the whole surface's.
 */
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';

type Release = () => unknown;

/** What one request must give back when its response closes. */
export class Releases {
  private fns: Release[] | null = [];

  add(fn: Release): void {
    if (this.fns === null) return run(fn);
    this.fns.push(fn);
  }

  /** Runs every release once; async ones run side by side, their failures ignored. */
  runAll(): void {
    const fns = this.fns;
    this.fns = null;
    for (const fn of fns ?? []) run(fn);
  }
}

function run(fn: Release): void {
  try {
    const r = fn();
    if (r instanceof Promise) r.catch(() => undefined);
  } catch {
    // A release that throws must not keep the others from running.
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What this request gives back when its response closes (src/service/lifecycle/cleanup.ts). */
    releases: Releases | undefined;
  }
}

/** Registers `fn` to run once when `req`'s response closes, however it ends. */
export function onClose(req: FastifyRequest, fn: Release): void {
  if (!req.releases) throw new Error('the request lifecycle (requestCleanup) is not registered on this surface');
  req.releases.add(fn);
}

export const requestCleanup = fp(
  async (app) => {
    app.decorateRequest('releases', undefined);
    app.addHook('onRequest', async (req, reply) => {
      const releases = new Releases();
      req.releases = releases;
      reply.raw.once('close', () => releases.runAll());
    });
  },
  { name: 'facecompute-request-cleanup', fastify: '5.x' },
);
