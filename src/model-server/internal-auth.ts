/**
 * The model server's link to its callers. Off loopback, anyone on the network could otherwise run
 * inference for free and read what the model server says about itself; so a non-loopback bind needs
 * the shared internal token, and every request under /internal/ must carry it. The kubelet's probes
 * (`/health`, `/readiness`) cannot carry a secret and answer only up/ready.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ConfigError } from '../config/index.js';
import { ServiceError } from '../errors/index.js';
import { INTERNAL_TOKEN_HEADER } from '../model-client/protocol.js';

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether binding `host` keeps the listener on this machine. A host name other than localhost is not trusted to. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const family = isIP(h);
  return family !== 0 && LOOPBACK.check(h, family === 4 ? 'ipv4' : 'ipv6');
}

/** Refuses a bind that would expose an unauthenticated model server (the process then exits 1). */
export function assertSafeBind(host: string, internalToken: string): void {
  if (internalToken === '' && !isLoopbackHost(host)) {
    throw new ConfigError(
      `FACECOMPUTE_MODEL_SERVER_HOST=${host} is not a loopback address: set FACECOMPUTE_INTERNAL_TOKEN (the same secret on the gateway and the MCP endpoint) or bind 127.0.0.1`,
    );
  }
}

export type TokenVerdict = 'ok' | 'missing' | 'mismatch';

/**
 * A constant-time check of a presented token: both sides are hashed first, so the comparison takes
 * the same time whatever the presented length and wherever the first differing byte is.
 */
export function tokenChecker(token: string): (presented: unknown) => TokenVerdict {
  const expected = createHash('sha256').update(token, 'utf8').digest();
  return (presented) => {
    if (typeof presented !== 'string' || presented.length === 0) return 'missing';
    const got = createHash('sha256').update(presented, 'utf8').digest();
    return timingSafeEqual(got, expected) ? 'ok' : 'mismatch';
  };
}

/** Paths the kubelet probes without the token. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/health', '/readiness']);

/**
 * Requires the token on every request but the probes, before the body is read (an unauthenticated
 * caller cannot make the server buffer a large frame). A refusal is logged with its reason and the
 * caller's address, never with what was presented.
 */
export function requireInternalToken(app: FastifyInstance, token: string): void {
  const check = tokenChecker(token);
  app.addHook('onRequest', async (req) => {
    const path = req.url.split('?', 1)[0] ?? '';
    if (PROBE_PATHS.has(path)) return;
    const verdict = check(req.headers[INTERNAL_TOKEN_HEADER]);
    if (verdict === 'ok') return;
    req.log.warn({ reason: verdict === 'missing' ? 'no internal token' : 'wrong internal token', remote: req.ip, method: req.method, path }, 'internal request refused');
    throw new ServiceError('unauthorized', verdict === 'missing' ? 'the internal token is required' : 'the internal token is not valid');
  });
}
