/**
 * Post/redirect/get for the web forms: a form that changed something answers 303 to its page and
 * leaves what that page must show once (a notice, a new key) in a short-lived cookie, which the next
 * page read takes and clears. Reloading the page then reloads a GET: it never submits the form again
 * (a second key), and the new key is not shown twice.
 *
 * The cookie is sealed with AES-256-GCM under a key derived from the session token that made it, so
 * the new key never rests in the browser in the clear, is useless without that session, and nothing
 * but its hash is stored on the server (the flash lives in the browser, so any console replica can
 * take it).
 */
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { CreatedKey } from '../../accounts/index.js';
import type { Notice } from '../views/pages.js';

export interface Flash {
  notice?: Notice;
  created?: CreatedKey;
}

export interface FlashOptions {
  secureCookies: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Leaves `flash` for the next page this session reads; `sessionToken` names the session when it
     * began with this very response (its cookie is not in the request yet).
     */
    setFlash(req: FastifyRequest, reply: FastifyReply, flash: Flash, sessionToken?: string): void;
    /** The flash left for this session, or null; the cookie is cleared either way. */
    takeFlash(req: FastifyRequest, reply: FastifyReply): Flash | null;
  }
}

// Long enough for the redirect that follows the POST, short enough that an unread flash soon goes.
const FLASH_MAX_AGE_S = 120;
const IV_BYTES = 12;
const TAG_BYTES = 16;

function sealKey(sessionToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', sessionToken, Buffer.alloc(0), 'facecompute console flash v1', 32));
}

export function seal(sessionToken: string, flash: Flash): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealKey(sessionToken), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

export function open(sessionToken: string, sealed: string): Flash | null {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES + 2) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey(sessionToken), raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as Flash) : null;
  } catch {
    // Another session's flash, a tampered or truncated cookie: nothing to show.
    return null;
  }
}

export function flashCookieName(secure: boolean): string {
  return secure ? '__Host-fc_flash' : 'fc_flash';
}

async function flash(app: FastifyInstance, opts: FlashOptions): Promise<void> {
  const name = flashCookieName(opts.secureCookies);
  const cookie = { path: '/', httpOnly: true, sameSite: 'strict' as const, secure: opts.secureCookies };

  app.decorate('setFlash', (req: FastifyRequest, reply: FastifyReply, value: Flash, sessionToken?: string) => {
    const token = sessionToken ?? app.sessionToken(req);
    if (token === null) return;
    void reply.setCookie(name, seal(token, value), { ...cookie, maxAge: FLASH_MAX_AGE_S });
  });

  app.decorate('takeFlash', (req: FastifyRequest, reply: FastifyReply) => {
    const sealed = req.cookies[name];
    if (typeof sealed !== 'string' || sealed === '') return null;
    void reply.clearCookie(name, cookie);
    const token = app.sessionToken(req);
    return token === null ? null : open(token, sealed);
  });
}

export default fp(flash, { name: 'console-flash', dependencies: ['console-session'] });
