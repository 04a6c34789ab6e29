/**
 * Secrets the accounts store hands out: API keys and session tokens. Each is 256 bits of randomness
 * behind a recognisable prefix (so a leaked one can be spotted by scanners); only its SHA-256 is
 * stored, and lookups go by that hash.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyKind } from './api.js';

export const KEY_PREFIX: Record<KeyKind, string> = { rest: 'fc_live_', mcp: 'fc_mcp_' };
export const SESSION_PREFIX = 'fc_sess_';
/** Characters of the random part shown in listings next to the kind prefix. */
const DISPLAY_CHARS = 8;

export function randomSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export function newApiKey(kind: KeyKind): { secret: string; prefix: string; hash: string } {
  const secret = randomSecret(KEY_PREFIX[kind]);
  return { secret, prefix: secret.slice(0, KEY_PREFIX[kind].length + DISPLAY_CHARS), hash: sha256(secret) };
}

/** The kind a presented secret claims by its prefix, or null for something that is not our key. */
export function kindOf(secret: string): KeyKind | null {
  if (secret.startsWith(KEY_PREFIX.rest)) return 'rest';
  if (secret.startsWith(KEY_PREFIX.mcp)) return 'mcp';
  return null;
}

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
