/**
 * What each component checks of the configuration before it starts, beyond what `loadConfig` checks
 * for every component: the secrets only that component holds (the console's Stripe key, webhook
 * secret and SMTP URL), and, with FACECOMPUTE_PRODUCTION, what is unsafe on the open internet.
 * A component with problems refuses to start with all of them in one message (ConfigError).
 */
import { ConfigError, type Config } from './config.js';

export type Surface = 'gateway' | 'mcp' | 'console' | 'model-server';

const PUBLIC_URLS = [
  ['FACECOMPUTE_PUBLIC_BASE_URL', (c: Config) => c.accounts.publicBaseUrl],
  ['FACECOMPUTE_PUBLIC_MCP_URL', (c: Config) => c.accounts.publicMcpUrl],
  ['FACECOMPUTE_PUBLIC_CONSOLE_URL', (c: Config) => c.accounts.publicConsoleUrl],
] as const;

const SMTP_URL = /^smtps?:\/\/[^/\s]+$/;

/** Every reason `surface` must not start with `cfg`; empty when it may. */
export function startupProblems(cfg: Config, surface: Surface): string[] {
  const problems: string[] = [];
  const a = cfg.accounts;
  if (surface === 'console') {
    if (a.billingProvider === 'stripe') {
      if (a.stripeSecretKey === '') problems.push('FACECOMPUTE_STRIPE_SECRET_KEY is required when FACECOMPUTE_BILLING_PROVIDER=stripe');
      // A saved card raises the allowance; only Stripe's signed events say when it stops backing the account.
      if (!/^whsec_\S{8,}$/.test(a.stripeWebhookSecret)) problems.push('FACECOMPUTE_STRIPE_WEBHOOK_SECRET (whsec_…, the signing secret of the webhook endpoint /api/stripe/webhook) is required when FACECOMPUTE_BILLING_PROVIDER=stripe: the card allowance depends on the card staying attached, which only signed webhook events report');
    }
    if (a.mail.mailer === 'smtp' && !SMTP_URL.test(a.mail.smtpUrl.replace(/\/$/, ''))) {
      problems.push('FACECOMPUTE_MAILER=smtp needs FACECOMPUTE_SMTP_URL (smtps://user:password@host:465 or smtp://user:password@host:587)');
    }
  }
  if (!cfg.production) return problems;

  if (cfg.models.testWeights) problems.push('FACECOMPUTE_TEST_WEIGHTS=true serves models built from random weights; never in production');
  if (surface === 'model-server') return problems;

  const https = PUBLIC_URLS.filter(([, get]) => get(cfg).startsWith('https://'));
  for (const [name, get] of PUBLIC_URLS) {
    if (!get(cfg).startsWith('https://')) problems.push(`${name} must be https in production (got ${JSON.stringify(get(cfg))}): keys, session tokens and images travel in these requests`);
  }
  // The service serves plain HTTP only: an https public URL means a proxy terminates TLS in front of
  // it, and without trusting it every client has the proxy's address, so one client's failed
  // sign-ins, signups and card attempts use up everyone's budgets.
  if (https.length > 0 && a.trustedProxies.length === 0) {
    problems.push('FACECOMPUTE_TRUSTED_PROXIES is required behind a TLS-terminating proxy (an https public URL): name the proxies (the Ingress controller\'s pods, e.g. 10.0.0.0/8) whose X-Forwarded-For gives the client address; without it every client has the proxy\'s address and one client can lock everyone out of sign-in');
  }
  if (surface === 'console') {
    if (a.billingProvider !== 'stripe') problems.push('FACECOMPUTE_BILLING_PROVIDER must be stripe in production: the test provider accepts Stripe\'s published test card ids, so anyone would get the card allowance');
    if (a.mail.mailer !== 'smtp') problems.push('FACECOMPUTE_MAILER must be smtp in production: the file mailer keeps verification mails on the server, so nobody could verify an email');
  }
  return problems;
}

/** Throws ConfigError naming every problem (startupProblems) when there is any. */
export function assertStartupConfig(cfg: Config, surface: Surface): void {
  const problems = startupProblems(cfg, surface);
  if (problems.length > 0) throw new ConfigError(`facecompute ${surface} refuses this configuration:\n- ${problems.join('\n- ')}`);
}
