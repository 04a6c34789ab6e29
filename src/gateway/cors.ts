/**
 * CORS for exactly one origin: the console's (FACECOMPUTE_PUBLIC_CONSOLE_URL), whose "Try it" page
 * calls /capabilities, /verify and /represent from the browser with a key the person holds
 * (src/console/routes/try.ts says why). @fastify/cors does the protocol; this module only decides
 * the policy:
 * - one origin, compared exactly (on loopback, its spellings: consoleOrigins); any other Origin (and a
 *   request with none) gets no CORS header,
 *   and a preflight from it falls through to the contract's 404, as before;
 * - no credentials: the gateway has no cookies, a key travels in the Authorization header, which a
 *   browser never attaches by itself, so a cross-site page cannot spend anyone's calls;
 * - the headers a client reads are exposed (request id, rate limit, Retry-After).
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

export const CORS_EXPOSED_HEADERS = ['x-request-id', 'x-api-version', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after'];

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The origins the console is reached at: its public URL's origin (scheme, host, port). Under
 * `facecompute serve` that URL is http://127.0.0.1:8082 by default and people type localhost: on
 * loopback, the other spellings of the same scheme and port are the same console on the same machine.
 */
export function consoleOrigins(consoleUrl: string): Set<string> {
  const u = new URL(consoleUrl);
  const out = new Set([u.origin]);
  if (LOOPBACK_HOSTS.includes(u.hostname)) for (const h of LOOPBACK_HOSTS) out.add(`${u.protocol}//${h}${u.port ? `:${u.port}` : ''}`);
  return out;
}

export async function registerConsoleCors(app: FastifyInstance, consoleUrl: string): Promise<void> {
  const allowed = consoleOrigins(consoleUrl);
  await app.register(cors, {
    origin: (origin, done) => done(null, origin !== undefined && allowed.has(origin) ? origin : false),
    methods: ['GET', 'POST'],
    allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
    exposedHeaders: CORS_EXPOSED_HEADERS,
    credentials: false,
    maxAge: 600,
    strictPreflight: true,
  });
}
