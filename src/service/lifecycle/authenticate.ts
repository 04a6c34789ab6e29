/**
 * Authentication from the headers, one function for every surface: `credential` reads what a request
 * presents under its surface's policy (src/http/bearer.ts reads the header itself), `authenticate`
 * turns it into the caller's key. A surface only states its policy: which header forms it takes, what
 * a malformed Authorization means, and the WWW-Authenticate challenge it sends (MCP, RFC 6750).
 */
import type { FastifyRequest } from 'fastify';
import type { AccountsPort, AuthenticatedKey, KeyKind } from '../../accounts/api.js';
import { ServiceError, isServiceError } from '../../errors/index.js';
import { readBearer } from '../../http/bearer.js';

/** How a surface's callers present their credential. */
export interface CredentialForms {
  /** Also `x-api-key: <key>` (REST). */
  xApiKey: boolean;
  /** A malformed `Authorization` is refused (`invalid_api_key`) rather than read as absent. */
  refuseMalformed: boolean;
}

/** A surface's key policy. */
export interface KeyPolicy extends CredentialForms {
  surface: KeyKind;
  /** missing_api_key's detail. */
  missing: string;
  /** WWW-Authenticate of a missing and of an invalid key; REST's missing key gets `Bearer`. */
  challenge?: { missing: string; invalid: string };
}

export const REST_KEYS: KeyPolicy = {
  surface: 'rest',
  xApiKey: true,
  refuseMalformed: true,
  missing: 'an API key is required: Authorization: Bearer <key> or x-api-key',
};

export const MCP_KEYS: KeyPolicy = {
  surface: 'mcp',
  xApiKey: false,
  refuseMalformed: false,
  missing: 'send your MCP key as Authorization: Bearer <MCP_KEY>',
  challenge: { missing: 'Bearer realm="facecompute-mcp"', invalid: 'Bearer realm="facecompute-mcp", error="invalid_token"' },
};

/** The console's sessions: a bearer session token (agents); browsers carry a cookie instead. */
export const CONSOLE_SESSIONS: CredentialForms = { xApiKey: false, refuseMalformed: false };

/** The credential `req`'s headers carry under `forms`, or null when there is none. */
export function credential(req: FastifyRequest, forms: CredentialForms): string | null {
  const b = readBearer(req);
  if (b === 'malformed' && forms.refuseMalformed) throw new ServiceError('invalid_api_key', 'the Authorization header must be "Bearer <key>"');
  if (typeof b === 'object') return b.token;
  if (!forms.xApiKey) return null;
  const k = req.headers['x-api-key'];
  return typeof k === 'string' && k.length > 0 ? k.trim() : null;
}

/** The caller's key of `policy.surface`, from `req`'s headers; throws the contract's refusals. */
export async function authenticate(accounts: AccountsPort, req: FastifyRequest, policy: KeyPolicy): Promise<AuthenticatedKey> {
  const challenge = policy.challenge;
  const secret = credential(req, policy);
  if (!secret) throw new ServiceError('missing_api_key', policy.missing, challenge ? { headers: { 'www-authenticate': challenge.missing } } : {});
  try {
    return await accounts.authenticate(secret, policy.surface);
  } catch (err) {
    if (challenge && isServiceError(err) && err.code === 'invalid_api_key') {
      throw new ServiceError('invalid_api_key', err.detail, { headers: { 'www-authenticate': challenge.invalid } });
    }
    throw err;
  }
}
