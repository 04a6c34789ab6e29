/** The console's JSON API under /api/, exactly contract §7's table. */
import type { FastifyInstance } from 'fastify';
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
  verifyEmailBody,
} from '../schemas.js';

interface Credentials {
  email: string;
  password: string;
}

export default async function apiRoutes(app: FastifyInstance, opts: { store: AccountsStore }): Promise<void> {
  const { store } = opts;

  app.post('/api/signup/anonymous', { schema: { body: { ...emptyBody, type: ['object', 'null'] }, response: { 201: sessionAnswer } } }, async (req, reply) => {
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

  app.post('/api/logout', async (req, reply) => {
    await app.requireAccount(req);
    await app.endSession(req, reply);
    return reply.code(204).send();
  });

  app.post<{ Body: Credentials }>('/api/account/upgrade', { schema: { body: credentialsBody, response: { 200: accountAnswer } } }, async (req) => {
    const id = await app.requireAccount(req);
    return { account: await store.upgrade(id, req.body.email, req.body.password, app.sessionToken(req)) };
  });

  app.post<{ Body: { token: string } }>('/api/account/verify-email', { schema: { body: verifyEmailBody, response: { 200: accountAnswer } } }, async (req) => {
    // The token is the capability (it names its account); no session needed, as for the mailed link.
    return { account: await store.verifyEmail(req.body.token) };
  });

  app.post('/api/account/verify-email/resend', async (req, reply) => {
    const id = await app.requireAccount(req);
    await store.resendVerification(id);
    return reply.code(204).send();
  });

  app.post<{ Body: { payment_method: string } }>('/api/account/card', { schema: { body: cardBody, response: { 200: accountAnswer } } }, async (req) => {
    const id = await app.requireAccount(req);
    return { account: await store.saveCard(id, req.body.payment_method, req.ip) };
  });

  app.get('/api/account', { schema: { response: { 200: accountAnswer } } }, async (req) => {
    const id = await app.requireAccount(req);
    return { account: await store.getAccount(id) };
  });

  const kinds: Array<[string, KeyKind]> = [
    ['/api/keys', 'rest'],
    ['/api/mcp-keys', 'mcp'],
  ];
  for (const [path, kind] of kinds) {
    app.post<{ Body: { name: string } }>(path, { schema: { body: keyNameBody, response: { 201: createdKeyAnswer } } }, async (req, reply) => {
      const id = await app.requireAccount(req);
      return reply.code(201).send(await store.createKey(id, kind, req.body.name));
    });
    app.get(path, { schema: { response: { 200: keyListAnswer } } }, async (req) => {
      const id = await app.requireAccount(req);
      return { keys: await store.listKeys(id, kind) };
    });
    app.delete<{ Params: { id: string } }>(`${path}/:id`, { schema: { params: keyIdParams } }, async (req, reply) => {
      const id = await app.requireAccount(req);
      await store.revokeKey(id, kind, req.params.id);
      return reply.code(204).send();
    });
  }
}
