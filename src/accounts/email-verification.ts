/**
 * Email verification links: `<console>/verify-email?token=<account id>.<expiry ms>.<HMAC>`, the HMAC
 * (SHA-256) over the account id, the email and the expiry, keyed by a random key stored with the
 * pending verification. A token is valid only for that email, until it expires, and only while its
 * key is the account's current one: sending a new mail or verifying replaces or deletes the key, so
 * every earlier link stops working.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { hashesEqual } from './secrets.js';

export interface VerificationToken {
  accountId: string;
  expiresAt: number;
  mac: string;
}

export function newSigningKey(): string {
  return randomBytes(32).toString('base64url');
}

function mac(key: string, accountId: string, email: string, expiresAt: number): string {
  return createHmac('sha256', Buffer.from(key, 'base64url')).update(`facecompute email verification v1\n${accountId}\n${email}\n${expiresAt}`).digest('base64url');
}

export function signToken(key: string, accountId: string, email: string, expiresAt: number): string {
  return `${accountId}.${expiresAt}.${mac(key, accountId, email, expiresAt)}`;
}

/** The token's parts, or null for anything not shaped like one (checked before any database read). */
export function parseToken(token: unknown): VerificationToken | null {
  if (typeof token !== 'string' || token.length > 200) return null;
  const m = /^([0-9a-f-]{36})\.(\d{13})\.([A-Za-z0-9_-]{43})$/.exec(token);
  return m ? { accountId: m[1]!, expiresAt: Number(m[2]), mac: m[3]! } : null;
}

export function tokenMatches(t: VerificationToken, key: string, email: string): boolean {
  return hashesEqual(t.mac, mac(key, t.accountId, email, t.expiresAt));
}
