/**
 * The one reader of `Authorization: Bearer <token>` for every surface (gateway keys, MCP keys,
 * console sessions). It only reads the header; what an absent or malformed one means is each
 * surface's policy, applied in one place (src/service/lifecycle/authenticate.ts).
 */
import type { FastifyRequest } from 'fastify';

export type BearerHeader = { token: string } | 'malformed' | 'absent';

export function readBearer(req: FastifyRequest): BearerHeader {
  const h = req.headers.authorization;
  if (typeof h !== 'string' || h.length === 0) return 'absent';
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? { token: m[1]! } : 'malformed';
}
