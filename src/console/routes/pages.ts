/**
 * The server-rendered web pages. Forms post here (urlencoded) and are CSRF-checked. A form that
 * changed something answers 303 to its page (post/redirect/get), so a reload never submits it again;
 * what that page must show once (a notice, a new key) travels in the sealed flash cookie
 * (plugins/flash.ts). A refused form is answered with the page again, its message and its status.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ServiceError, isServiceError } from '../../errors/index.js';
import type { AccountsStore, CreatedKey, FreeCallLimits, KeyKind } from '../../accounts/index.js';
import { layout, pageCsp } from '../views/layout.js';
import type { Html } from '../views/html.js';
import { accountPage, keysPage, mcpPage, signinPage, signupPage, verifyPage, type Notice } from '../views/pages.js';
import type { Flash } from '../plugins/flash.js';
import { KEY_PREFIX } from '../../accounts/secrets.js';
import { usageReport } from '../../accounts/usage/report.js';
import { usagePage } from '../views/usage.js';
import { AGENT_KEY_NAME, agentSignupPage, type AgentUrls } from '../views/agent.js';
import { html } from '../views/html.js';

export interface PagesOptions {
  store: AccountsStore;
  freeCalls: FreeCallLimits;
  publicBaseUrl: string;
  publicMcpUrl: string;
}

type Form = Record<string, string | undefined>;

function field(body: unknown, name: string): string {
  const v = (body as Form | undefined)?.[name];
  return typeof v === 'string' ? v : '';
}

export default async function pageRoutes(app: FastifyInstance, opts: PagesOptions): Promise<void> {
  const { store } = opts;

  function send(req: FastifyRequest, reply: FastifyReply, title: string, current: string, signedIn: boolean, body: (csrf: string) => Html, status = 200) {
    const nonce = randomBytes(16).toString('base64');
    const csrf = app.csrfToken(req, reply);
    return reply
      .code(status)
      .header('content-security-policy', pageCsp(nonce))
      .type('text/html; charset=utf-8')
      .send(layout({ title, nonce, csrf, current, signedIn, body: body(csrf) }).value);
  }

  /** The error as a notice on the page; its headers (Retry-After) go on the page's response too. */
  function errorNotice(err: unknown, reply?: FastifyReply): Notice {
    if (isServiceError(err) && err.code !== 'internal_error') {
      if (reply) void reply.headers(err.headers);
      return { kind: 'error', text: err.detail };
    }
    throw err;
  }

  /** The signed-in account for a page, or a redirect to sign-in. */
  async function pageAccount(req: FastifyRequest, reply: FastifyReply): Promise<string | null> {
    const id = await app.optionalAccount(req);
    if (id === null) void reply.redirect('/signin', 303);
    return id;
  }

  app.get('/', async (req, reply) => reply.redirect((await app.optionalAccount(req)) ? '/account' : '/signin', 303));

  // ---- sign up / sign in / sign out --------------------------------------------------------------

  /** The addresses an agent is told: the console as it reached it, the configured gateway and MCP. */
  const agentUrls = (req: FastifyRequest): AgentUrls => ({ console: `${req.protocol}://${req.host}`, base: opts.publicBaseUrl.replace(/\/+$/, ''), mcp: opts.publicMcpUrl });
  const forAgent = (req: FastifyRequest) => (req.query as { agent?: string } | undefined)?.agent === '1';
  const agentSignup = (req: FastifyRequest, reply: FastifyReply, n?: Notice, status = 200) =>
    send(req, reply, 'Sign up as an AI agent', '/signup', false, (csrf) => agentSignupPage(csrf, opts.freeCalls, agentUrls(req), n ? html`<div class="alert error" role="alert">${n.text}</div>` : ''), status);

  app.get('/signup', async (req, reply) => (forAgent(req) ? agentSignup(req, reply) : send(req, reply, 'Sign up', '/signup', false, (csrf) => signupPage(csrf, opts.freeCalls, ''))));
  app.post('/signup', async (req, reply) => {
    const email = field(req.body, 'email');
    try {
      app.checkCsrf(req, field(req.body, '_csrf'));
      const { session_token } = await store.signup(email, field(req.body, 'password'), req.ip);
      app.startSession(reply, session_token);
      return reply.redirect('/account', 303);
    } catch (err) {
      const n = errorNotice(err);
      return send(req, reply, 'Sign up', '/signup', false, (csrf) => signupPage(csrf, opts.freeCalls, email, n), isServiceError(err) ? err.status : 400);
    }
  });

  app.post('/signup/anonymous', async (req, reply) => {
    // From /signup?agent=1: the account and its REST key in one click, then the key page in agent mode.
    const agent = field(req.body, 'agent') === '1';
    try {
      app.checkCsrf(req, field(req.body, '_csrf'));
      const { session_token, account } = await store.signupAnonymous(req.ip);
      app.startSession(reply, session_token);
      if (agent) {
        app.setFlash(req, reply, { created: await store.createKey(account.id, 'rest', AGENT_KEY_NAME) }, session_token);
        return reply.redirect('/keys?agent=1', 303);
      }
      return reply.redirect('/keys', 303);
    } catch (err) {
      const n = errorNotice(err);
      if (agent) return agentSignup(req, reply, n, isServiceError(err) ? err.status : 400);
      return send(req, reply, 'Sign up', '/signup', false, (csrf) => signupPage(csrf, opts.freeCalls, '', n), isServiceError(err) ? err.status : 400);
    }
  });

  app.get('/signin', async (req, reply) => send(req, reply, 'Sign in', '/signin', false, (csrf) => signinPage(csrf, '')));
  app.post('/signin', async (req, reply) => {
    const email = field(req.body, 'email');
    try {
      app.checkCsrf(req, field(req.body, '_csrf'));
      const { session_token } = await store.login(email, field(req.body, 'password'), req.ip);
      app.startSession(reply, session_token);
      return reply.redirect('/account', 303);
    } catch (err) {
      const n = errorNotice(err, reply);
      return send(req, reply, 'Sign in', '/signin', false, (csrf) => signinPage(csrf, email, n), isServiceError(err) ? err.status : 400);
    }
  });

  app.post('/signout', async (req, reply) => {
    app.checkCsrf(req, field(req.body, '_csrf'));
    await app.endSession(req, reply);
    return reply.redirect('/signin', 303);
  });

  // ---- account ------------------------------------------------------------------------------------

  async function renderAccount(req: FastifyRequest, reply: FastifyReply, id: string, n?: Notice, status = 200) {
    const [account, card] = await Promise.all([store.getAccount(id), store.getCard(id)]);
    return send(req, reply, 'Account', '/account', true, (csrf) => accountPage(csrf, account, card, opts.freeCalls, n), status);
  }

  app.get('/account', async (req, reply) => {
    const id = await pageAccount(req, reply);
    return id === null ? reply : renderAccount(req, reply, id, app.takeFlash(req, reply)?.notice);
  });

  app.get('/usage', async (req, reply) => {
    const id = await pageAccount(req, reply);
    if (id === null) return reply;
    const [account, report] = await Promise.all([store.getAccount(id), usageReport(store.db, id)]);
    reply.header('cache-control', 'no-store');
    return send(req, reply, 'Usage', '/usage', true, () => usagePage(account, report, opts.freeCalls));
  });

  /** After a form succeeded: its notice for the page, and a redirect to it. */
  function done(req: FastifyRequest, reply: FastifyReply, page: string, flash: Flash) {
    app.setFlash(req, reply, flash);
    return reply.redirect(page, 303);
  }

  app.post('/account/upgrade', async (req, reply) => {
    const id = await pageAccount(req, reply);
    if (id === null) return reply;
    try {
      await store.upgrade(id, field(req.body, 'email'), field(req.body, 'password'), app.sessionToken(req));
      return done(req, reply, '/account', { notice: { kind: 'success', text: 'Your account now has an email and password; your keys and usage are kept. Follow the link we mailed to verify the email and raise your free calls.' } });
    } catch (err) {
      return renderAccount(req, reply, id, errorNotice(err), (err as ServiceError).status);
    }
  });

  app.post('/account/card', async (req, reply) => {
    const id = await pageAccount(req, reply);
    if (id === null) return reply;
    try {
      await store.saveCard(id, field(req.body, 'payment_method'), req.ip);
      return done(req, reply, '/account', { notice: { kind: 'success', text: 'Card saved.' } });
    } catch (err) {
      return renderAccount(req, reply, id, errorNotice(err), (err as ServiceError).status);
    }
  });

  // The link of the verification mail: verifies whoever follows it (the token is the capability).
  app.get<{ Querystring: { token?: string } }>('/verify-email', async (req, reply) => {
    const signedIn = (await app.optionalAccount(req)) !== null;
    try {
      const account = await store.verifyEmail(req.query.token);
      return send(req, reply, 'Email verified', '', signedIn, () => verifyPage({ kind: 'success', text: `${account.email ?? 'The email'} is verified: the account now has ${account.free_calls.total} free calls in total.` }));
    } catch (err) {
      return send(req, reply, 'Email not verified', '', signedIn, () => verifyPage(errorNotice(err)), isServiceError(err) ? err.status : 400);
    }
  });

  app.post('/account/verify-email/resend', async (req, reply) => {
    const id = await pageAccount(req, reply);
    if (id === null) return reply;
    try {
      await store.resendVerification(id);
      return done(req, reply, '/account', { notice: { kind: 'success', text: 'A new verification link is on its way; earlier links no longer work.' } });
    } catch (err) {
      return renderAccount(req, reply, id, errorNotice(err, reply), (err as ServiceError).status);
    }
  });

  // ---- keys (REST on /keys, MCP on /mcp) ------------------------------------------------------------

  const sections: Array<{ kind: KeyKind; page: string; base: string; title: string }> = [
    { kind: 'rest', page: '/keys', base: '/keys', title: 'API keys' },
    { kind: 'mcp', page: '/mcp', base: '/mcp/keys', title: 'MCP' },
  ];
  for (const s of sections) {
    const render = async (req: FastifyRequest, reply: FastifyReply, id: string, extra: { created?: CreatedKey; notice?: Notice }, status = 200) => {
      const keys = await store.listKeys(id, s.kind);
      const view = s.kind === 'rest' ? keysPage : mcpPage;
      reply.header('cache-control', 'no-store');
      const agent = forAgent(req) || field(req.body, 'agent') === '1' ? { agent: agentUrls(req) } : {};
      return send(req, reply, s.title, s.page, true, (csrf) => view({ csrf, kind: s.kind, keys, mcpUrl: opts.publicMcpUrl, baseUrl: opts.publicBaseUrl, ...agent, ...extra }), status);
    };

    app.get(s.page, async (req, reply) => {
      const id = await pageAccount(req, reply);
      if (id === null) return reply;
      const flash = app.takeFlash(req, reply);
      // A flash from the other key page (say, a tab left open) belongs there, not here.
      const created = flash?.created && flash.created.key.startsWith(KEY_PREFIX[s.kind]) ? flash.created : undefined;
      return render(req, reply, id, { ...(created ? { created } : {}), ...(flash?.notice ? { notice: flash.notice } : {}) });
    });

    app.post(s.base, async (req, reply) => {
      const id = await pageAccount(req, reply);
      if (id === null) return reply;
      try {
        const created = await store.createKey(id, s.kind, field(req.body, 'name'));
        return done(req, reply, field(req.body, 'agent') === '1' ? `${s.page}?agent=1` : s.page, { created });
      } catch (err) {
        return render(req, reply, id, { notice: errorNotice(err) }, (err as ServiceError).status);
      }
    });

    app.post<{ Params: { id: string } }>(`${s.base}/:id/revoke`, async (req, reply) => {
      const id = await pageAccount(req, reply);
      if (id === null) return reply;
      try {
        await store.revokeKey(id, s.kind, req.params.id);
        return reply.redirect(s.page, 303);
      } catch (err) {
        return render(req, reply, id, { notice: errorNotice(err) }, (err as ServiceError).status);
      }
    });
  }
}
