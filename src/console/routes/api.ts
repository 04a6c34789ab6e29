/** The console's JSON API under /api/: contract §7's table, and GET /api/usage. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountsStore, KeyKind } from '../../accounts/index.js';
import {
  accountAnswer,
  cardBody,
  createdKeyAnswer,
  credentialsBody,
  emptyBody,
  keyIdParams,
  keyListAnswer,
  keyNameBody,
  sessionAnswer,
  usageAnswer,
  verifyEmailBody,
} from '../schemas.js';
import { usageReport } from '../../accounts/usage/report.js';
import { ServiceError } from '../../errors/index.js';

interface Credentials {
  email: string;
  password: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in account of a route that needs one, resolved by `signedIn` before the body. */
    accountId?: string;
  }
}

/**
 * A browser request sent by another site: `Sec-Fetch-Site` says so (every current browser sends it),
 * or, from a browser without it, an `Origin` that is not the console's. Agents and CLIs send neither.
 */
export function crossSite(req: FastifyRequest, consoleOrigin: string): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  return typeof origin === 'string' && origin !== consoleOrigin;
}

export default async function apiRoutes(app: FastifyInstance, opts: { store: AccountsStore; publicConsoleUrl: string }): Promise<void> {
  const { store } = opts;
  const consoleOrigin = new URL(opts.publicConsoleUrl).origin;
  /**
   * POST /api/signup/anonymous needs no body, so any web page could make its visitors' browsers call
   * it (a "simple" cross-site request, no preflight) and spend their address's signup budget. Refused
   * from the headers when another site sends it; the console's own pages sign up through their form
   * (POST /signup/anonymous, with its CSRF token).
   */
  const sameSiteOnly = {
    onRequest: async (req: FastifyRequest) => {
      if (crossSite(req, consoleOrigin)) throw new ServiceError('origin_not_allowed', 'another site may not sign its visitors up; call this API from an agent or a CLI, or use the console');
    },
  };
  /**
   * Routes that need an account resolve it from the headers alone (a bearer session token, or the
   * session cookie with the x-csrf-token header: the JSON bodies are strict objects and cannot carry
   * `_csrf`), before the body is read: a request without a valid session is refused unread.
   */
  const signedIn = {
    onRequest: async (req: FastifyRequest) => {
      req.accountId = await app.requireAccount(req);
    },
  };
  const account = (req: FastifyRequest): string => req.accountId!;

  app.post('/api/signup/anonymous', { ...sameSiteOnly, schema: { body: { ...emptyBody, type: ['object', 'null'] }, response: { 201: sessionAnswer } } }, async (req, reply) => {
    const result = await store.signupAnonymous(req.ip);
    return reply.code(201).send(result);
  });

  app.post<{ Body: Credentials }>('/api/signup', { schema: { body: credentialsBody, response: { 201: sessionAnswer } } }, async (req, reply) => {
    const result = await store.signup(req.body.email, req.body.password, req.ip);
    return reply.code(201).send(result);
  });

  app.post<{ Body: Credentials }>('/api/login', { schema: { body: credentialsBody, response: { 200: sessionAnswer } } }, async (req) => {
    return store.login(req.body.email, req.body.password, req.ip);
  });

  app.post('/api/logout', signedIn, async (req, reply) => {
    await app.endSession(req, reply);
    return reply.code(204).send();
  });

  app.post<{ Body: Credentials }>('/api/account/upgrade', { ...signedIn, schema: { body: credentialsBody, response: { 200: accountAnswer } } }, async (req) => {
    return { account: await store.upgrade(account(req), req.body.email, req.body.password, app.sessionToken(req)) };
  });

  app.post<{ Body: { token: string } }>('/api/account/verify-email', { schema: { body: verifyEmailBody, response: { 200: accountAnswer } } }, async (req) => {
    // The token is the capability (it names its account); no session needed, as for the mailed link.
    return { account: await store.verifyEmail(req.body.token) };
  });

  app.post('/api/account/verify-email/resend', signedIn, async (req, reply) => {
    await store.resendVerification(account(req));
    return reply.code(204).send();
  });

  app.post<{ Body: { payment_method: string } }>('/api/account/card', { ...signedIn, schema: { body: cardBody, response: { 200: accountAnswer } } }, async (req) => {
    return { account: await store.saveCard(account(req), req.body.payment_method, req.ip) };
  });

  app.get('/api/account', { ...signedIn, schema: { response: { 200: accountAnswer } } }, async (req) => {
    return { account: await store.getAccount(account(req)) };
  });

  // The account's usage over the last 30 days (src/accounts/usage/report.ts), with the account for its
  // remaining allowance. Only the signed-in account's rows are ever read.
  app.get('/api/usage', { ...signedIn, schema: { response: { 200: usageAnswer } } }, async (req, reply) => {
    const [acc, usage] = await Promise.all([store.getAccount(account(req)), usageReport(store.db, account(req))]);
    void reply.header('cache-control', 'no-store');
    return { account: acc, usage };
  });

  const kinds: Array<[string, KeyKind]> = [
    ['/api/keys', 'rest'],
    ['/api/mcp-keys', 'mcp'],
  ];
  for (const [path, kind] of kinds) {
    app.post<{ Body: { name: string } }>(path, { ...signedIn, schema: { body: keyNameBody, response: { 201: createdKeyAnswer } } }, async (req, reply) => {
      return reply.code(201).send(await store.createKey(account(req), kind, req.body.name));
    });
    app.get(path, { ...signedIn, schema: { response: { 200: keyListAnswer } } }, async (req) => {
      return { keys: await store.listKeys(account(req), kind) };
    });
    app.delete<{ Params: { id: string } }>(`${path}/:id`, { ...signedIn, schema: { params: keyIdParams } }, async (req, reply) => {
      await store.revokeKey(account(req), kind, req.params.id);
      return reply.code(204).send();
    });
  }
}
