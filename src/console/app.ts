/**
 * `buildConsole(deps)`: the console as a Fastify instance (not listening), so tests can inject
 * requests or listen on an ephemeral port.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import type { AccountsStore } from '../accounts/index.js';
import type { Logger } from '../logging/logger.js';
import { ServiceError } from '../errors/index.js';
import { registerTransportGuards, transportOptions } from '../http/transport-guards.js';
import { registerContractHeaders, requestIdOptions } from '../http/contract-headers.js';
import { CLOSING_OPTIONS, registerClosingRefusal } from '../http/closing.js';
import errors, { consoleNotFound } from './plugins/errors.js';
import { registerRouteGuard } from '../http/route-guard.js';
import session from './plugins/session.js';
import flash from './plugins/flash.js';
import apiRoutes from './routes/api.js';
import pageRoutes from './routes/pages.js';
import docsRoutes from './routes/docs.js';
import tryRoutes from './routes/try.js';
import referenceRoutes from './routes/reference.js';
import stripeWebhookRoutes from './routes/stripe-webhook.js';
import { PACKAGE_ROOT, PACKAGE_VERSION } from '../package-root.js';
import { registerProbes } from '../http/probes.js';

export interface ConsoleDeps {
  config: Config;
  store: AccountsStore;
  logger?: Logger;
  /** Where /openapi.json is read from; defaults to openapi.json at the repository root. */
  openapiPath?: string;
  /** The docs/ pages /docs/ renders; defaults to docs/ at the repository root. */
  docsDir?: string;
}

const MAX_BODY_BYTES = 64 * 1024;

function repoRoot(): string {
  return PACKAGE_ROOT;
}

/**
 * Secure cookies exactly when browsers reach the console over https: its public URL says so, whatever
 * the address it binds (behind a TLS-terminating proxy it binds plain HTTP, often on loopback).
 */
export function secureCookies(config: Config): boolean {
  const v = config.accounts.cookieSecure;
  return v === 'auto' ? config.accounts.publicConsoleUrl.startsWith('https://') : v === 'true';
}

export async function buildConsole(deps: ConsoleDeps): Promise<FastifyInstance> {
  const { config, store } = deps;
  const app: FastifyInstance = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger as unknown as FastifyBaseLogger } : { logger: false }),
    bodyLimit: MAX_BODY_BYTES,
    // The signup limit is per client address; behind a proxy that is X-Forwarded-For, believed only
    // from the proxies named in the configuration.
    trustProxy: config.accounts.trustedProxies.length > 0 ? config.accounts.trustedProxies : false,
    ...requestIdOptions(),
    ...CLOSING_OPTIONS,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    ...transportOptions(config.capacity.requestReceiveTimeoutMs),
  });

  registerContractHeaders(app);
  registerTransportGuards(app);
  registerClosingRefusal(app, 'console');
  registerRouteGuard(app, { notFound: consoleNotFound });

  app.addHook('onRequest', async (_req, reply) => {
    void reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer').header('x-frame-options', 'DENY');
    void reply.header('cache-control', 'no-store');
  });

  // Agents may POST /api/signup/anonymous with no body at all, with or without a JSON content type.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new ServiceError('invalid_request', 'the body is not valid JSON'), undefined);
    }
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (req, body, done) => {
    // Web forms only; the JSON API stays JSON so that cross-site form posts cannot reach it.
    if (req.url.startsWith('/api/')) return done(new ServiceError('invalid_request', 'Content-Type must be application/json'), undefined);
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });

  // First: a route takes the error handler set when it is registered.
  await app.register(errors);
  // Probes (Kubernetes): the console is nothing without its database.
  registerProbes(app, PACKAGE_VERSION, [{ error: 'database_unavailable', run: () => store.ping() }]);

  await app.register(cookie);
  await app.register(session, { store, secureCookies: secureCookies(config) });
  await app.register(flash, { secureCookies: secureCookies(config) });
  await app.register(apiRoutes, { store, publicConsoleUrl: config.accounts.publicConsoleUrl });
  // Only with Stripe: the test provider has no events (production.ts requires the secret with Stripe).
  if (config.accounts.billingProvider === 'stripe') await app.register(stripeWebhookRoutes, { store, secret: config.accounts.stripeWebhookSecret });
  await app.register(pageRoutes, {
    store,
    freeCalls: config.accounts.freeCalls,
    publicBaseUrl: config.accounts.publicBaseUrl,
    publicMcpUrl: config.accounts.publicMcpUrl,
  });
  await app.register(tryRoutes, { publicBaseUrl: config.accounts.publicBaseUrl });
  await app.register(docsRoutes, {
    freeCalls: config.accounts.freeCalls,
    publicBaseUrl: config.accounts.publicBaseUrl,
    publicMcpUrl: config.accounts.publicMcpUrl,
    openapiPath: deps.openapiPath ?? resolve(repoRoot(), 'openapi.json'),
    docsDir: deps.docsDir ?? resolve(repoRoot(), 'docs'),
  });
  await app.register(referenceRoutes, { docsDir: deps.docsDir ?? resolve(repoRoot(), 'docs') });
  return app;
}
