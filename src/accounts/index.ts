/**
 * `createAccountsStore(config)`: opens the database named by the configuration, runs pending
 * migrations, and returns the store (AccountsPort plus the console's operations).
 */
import type { Config } from '../config/index.js';
import { createBillingProvider, type BillingProvider } from './billing/index.js';
import { openDb } from './db.js';
import { migrate } from './migrations.js';
import { AccountsStore, type StoreLog } from './store.js';
import { createMailer, type Mailer } from './mail/mailer.js';

export interface StoreOverrides {
  billing?: BillingProvider;
  pgSchema?: string;
  /** The clock of sign-in throttling, attempt windows, sessions and last_used_at (tests move it instead of waiting). */
  now?: () => number;
  mailer?: Mailer;
  log?: StoreLog;
}

export async function createAccountsStore(config: Config, overrides: StoreOverrides = {}): Promise<AccountsStore> {
  const { db, dialect } = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, ...(overrides.pgSchema ? { pgSchema: overrides.pgSchema } : {}) });
  try {
    await migrate(db, dialect);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  const a = config.accounts;
  // Only the console sends mail; the gateway and MCP pods hold no SMTP URL (production.ts).
  const mailer = overrides.mailer ?? (a.mail.mailer === 'smtp' && a.mail.smtpUrl === '' ? undefined : createMailer(config));
  return new AccountsStore(db, dialect, {
    freeCalls: a.freeCalls,
    signupRateLimit: a.signupRateLimit,
    emailSignupRateLimit: a.emailSignupRateLimit,
    signupRateLimitPer48: a.signupRateLimitPer48,
    login: { ...a.login, now: overrides.now ?? Date.now },
    billing: overrides.billing ?? createBillingProvider(a),
    ...(mailer ? { mailer } : {}),
    publicConsoleUrl: a.publicConsoleUrl,
    emailVerifyTtlMs: a.emailVerifyTtlMs,
    card: a.card,
    sessionIdleMs: a.sessionIdleMs,
    ...(overrides.log ? { log: overrides.log } : {}),
    now: overrides.now ?? Date.now,
  });
}

export { AccountsStore, type AccountView, type KeyView, type CreatedKey, type SessionResult, type CardView } from './store.js';
export type { AccountsPort, AuthenticatedKey, FreeCallLimits, FreeCalls, KeyKind, Tier } from './api.js';
