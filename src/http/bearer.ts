/**
 * The one reader of `Authorization: Bearer <token>` for every surface (gateway keys, MCP keys,
 * console sessions). It only reads the header; each surface decides what an absent or malformed one
 * means (the gateway refuses a malformed one and then looks at `x-api-key`; MCP and the console treat
 * it as absent).
 */
import type { FastifyRequest } from 'fastify';

export type BearerHeader = { token: string } | 'malformed' | 'absent';

export function readBearer(req: FastifyRequest): BearerHeader {
  const h = req.headers.authorization;
  if (typeof h !== 'string' || h.length === 0) return 'absent';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? { token: m[1]! } : 'malformed';
}

/** The token, or null when the header is absent or not a bearer credential. */
export function bearerToken(req: FastifyRequest): string | null {
  const b = readBearer(req);
  return typeof b === 'object' ? b.token : null;
}
