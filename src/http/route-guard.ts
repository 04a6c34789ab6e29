/**
 * Unknown routes and methods are refused from the request line, before any byte of the body is read.
 * Fastify's not-found route runs the whole lifecycle, body parsing included, so a 1 MB JSON body to
 * `POST /x` was received and parsed before its 404. Here an onRequest hook answers `404 not_found`,
 * or `405 method_not_allowed` with `Allow` when the path exists under other methods, and adds
 * `Connection: close` when a body was declared, so that Node drops the unread body with the socket
 * instead of reading it to keep the connection alive.
 *
 * The decision is Fastify's: `req.is404` (no route matched) or the CORS plugin's `OPTIONS *` route
 * reached by anything but a bodiless preflight. The registered routes (collected by onRoute) only
 * tell 405 from 404. Register it first, before the surface's routes and its other onRequest hooks.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors/index.js';

/** A request declares a body: a non-zero Content-Length or any Transfer-Encoding. */
export function declaresBody(req: FastifyRequest): boolean {
  const cl = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (cl !== undefined && cl !== '0');
}

/** A route URL ('/keys/:id', '/docs/*') as a whole-path pattern. */
function pathPattern(url: string): RegExp {
  const body = url
    .split('/')
    .map((seg) => (seg === '*' ? '.*' : seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${body}$`);
}

export interface RouteGuardOptions {
  /** The surface's 404 (its detail names where its routes are). */
  notFound: (req: FastifyRequest) => ServiceError;
}

export function registerRouteGuard(app: FastifyInstance, o: RouteGuardOptions): void {
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    if (route.url === '*') return; // @fastify/cors's preflight route, answered by its own hook
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    routes.push({ pattern: pathPattern(route.url), methods });
  });
  const allowedMethods = (path: string): string[] => {
    const out = new Set<string>();
    for (const r of routes) if (r.pattern.test(path)) for (const m of r.methods) out.add(m);
    return [...out].sort();
  };

  app.addHook('onRequest', async (req) => {
    const corsWildcard = req.method === 'OPTIONS' && req.routeOptions.url === '*';
    if (!req.is404 && !corsWildcard) return;
    const body = declaresBody(req);
    const preflight = req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
    if (corsWildcard && preflight && !body) return;
    const headers: Record<string, string> = body ? { connection: 'close' } : {};
    const path = req.url.split('?')[0]!;
    const allow = allowedMethods(path).filter((m) => m !== req.method);
    if (allow.length > 0) {
      throw new ServiceError('method_not_allowed', `${req.method.slice(0, 20)} is not allowed on ${path.slice(0, 200)}; allowed: ${allow.join(', ')}`, { headers: { ...headers, allow: allow.join(', ') } });
    }
    const e = o.notFound(req);
    throw new ServiceError(e.code, e.detail, { headers: { ...e.headers, ...headers } });
  });
}
