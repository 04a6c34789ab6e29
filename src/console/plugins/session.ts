/**
 * Who is calling: agents send `Authorization: Bearer <session_token>`, browsers carry the session in
 * an httpOnly cookie. Cookie-authenticated writes need the CSRF token too (double submit: a cookie
 * and the same value in a form field or the `x-csrf-token` header), because browsers attach cookies
 * to cross-site requests; bearer tokens are never sent implicitly, so they need none.
 */
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../../errors/index.js';
import { CONSOLE_SESSIONS, credential } from '../../service/lifecycle/authenticate.js';
import { hashesEqual } from '../../accounts/secrets.js';
import type { AccountsStore } from '../../accounts/index.js';

/**
 * Cookie names. With Secure cookies they carry the `__Host-` prefix, which browsers accept only from
 * this exact host over HTTPS with Path=/ and no Domain, so a sibling subdomain cannot plant one.
 */
export function cookieNames(secure: boolean): { session: string; csrf: string } {
  return secure ? { session: '__Host-fc_session', csrf: '__Host-fc_csrf' } : { session: 'fc_session', csrf: 'fc_csrf' };
}
const SESSION_MAX_AGE_S = 30 * 24 * 3600;

export interface SessionOptions {
  store: AccountsStore;
  secureCookies: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The calling account; throws `unauthorized` when there is no valid session. */
    requireAccount(req: FastifyRequest): Promise<string>;
    /** The calling account or null, for pages that also serve signed-out visitors. */
    optionalAccount(req: FastifyRequest): Promise<string | null>;
    /** Throws `csrf_failed` unless the request carries the CSRF cookie's value. */
    checkCsrf(req: FastifyRequest, submitted: unknown): void;
    /** The CSRF token for forms on this page, set as a cookie when the browser has none. */
    csrfToken(req: FastifyRequest, reply: FastifyReply): string;
    /** The session token this request carries (bearer or cookie), whether valid or not; null when none. */
    sessionToken(req: FastifyRequest): string | null;
    startSession(reply: FastifyReply, token: string): void;
    endSession(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

async function session(app: FastifyInstance, opts: SessionOptions): Promise<void> {
  const { store, secureCookies } = opts;
  const { session: SESSION_COOKIE, csrf: CSRF_COOKIE } = cookieNames(secureCookies);
  const cookieBase = { path: '/', httpOnly: true, sameSite: 'lax' as const, secure: secureCookies };

  app.decorate('checkCsrf', (req: FastifyRequest, submitted: unknown) => {
    const cookie = req.cookies[CSRF_COOKIE];
    const value = typeof submitted === 'string' ? submitted : req.headers['x-csrf-token'];
    if (typeof cookie !== 'string' || cookie.length < 16 || typeof value !== 'string' || !hashesEqual(cookie, value)) {
      throw new ServiceError('csrf_failed', 'the form is out of date or was not sent by this site; reload the page and try again');
    }
  });

  async function resolve(req: FastifyRequest, submittedCsrf: unknown): Promise<string | null> {
    const token = credential(req, CONSOLE_SESSIONS);
    if (token !== null) {
      const id = await store.sessionAccount(token);
      if (id === null) throw new ServiceError('unauthorized', 'the session token is not valid or has expired; sign in again');
      return id;
    }
    const cookie = req.cookies[SESSION_COOKIE];
    if (typeof cookie !== 'string' || cookie === '') return null;
    const id = await store.sessionAccount(cookie);
    if (id !== null && req.method !== 'GET' && req.method !== 'HEAD') app.checkCsrf(req, submittedCsrf);
    return id;
  }

  app.decorate('optionalAccount', async (req: FastifyRequest) => resolve(req, (req.body as Record<string, unknown> | undefined)?.['_csrf']));
  app.decorate('requireAccount', async (req: FastifyRequest) => {
    const id = await resolve(req, (req.body as Record<string, unknown> | undefined)?.['_csrf']);
    if (id === null) throw new ServiceError('unauthorized', 'sign in first: send Authorization: Bearer <session_token>', { headers: { 'www-authenticate': 'Bearer' } });
    return id;
  });

  app.decorate('csrfToken', (req: FastifyRequest, reply: FastifyReply) => {
    const existing = req.cookies[CSRF_COOKIE];
    if (typeof existing === 'string' && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
    const token = randomBytes(32).toString('base64url');
    void reply.setCookie(CSRF_COOKIE, token, { ...cookieBase });
    // The new value must also count for forms rendered in this same response.
    req.cookies[CSRF_COOKIE] = token;
    return token;
  });

  app.decorate('sessionToken', (req: FastifyRequest) => {
    const token = credential(req, CONSOLE_SESSIONS) ?? req.cookies[SESSION_COOKIE];
    return typeof token === 'string' && token !== '' ? token : null;
  });

  app.decorate('startSession', (reply: FastifyReply, token: string) => {
    void reply.setCookie(SESSION_COOKIE, token, { ...cookieBase, maxAge: SESSION_MAX_AGE_S });
  });

  app.decorate('endSession', async (req: FastifyRequest, reply: FastifyReply) => {
    const token = app.sessionToken(req);
    if (token !== null) await store.logout(token);
    void reply.clearCookie(SESSION_COOKIE, { ...cookieBase });
  });
}

export default fp(session, { name: 'console-session', dependencies: ['@fastify/cookie'] });
