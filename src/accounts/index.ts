/**
 * `createAccountsStore(config)`: opens the database named by the configuration, runs pending
 * migrations, and returns the store (AccountsPort plus the console's operations).
 */
import type { Config } from '../config/index.js';
import { createBillingProvider, type BillingProvider } from './billing/index.js';
import { openDb } from './db.js';
import { migrate } from './migrations.js';
import { AccountsStore } from './store.js';

export interface StoreOverrides {
  billing?: BillingProvider;
  pgSchema?: string;
  /** The clock of sign-in throttling and of last_used_at writes (tests move it instead of waiting). */
  now?: () => number;
}

export async function createAccountsStore(config: Config, overrides: StoreOverrides = {}): Promise<AccountsStore> {
  const { db, dialect } = openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, ...(overrides.pgSchema ? { pgSchema: overrides.pgSchema } : {}) });
  try {
    await migrate(db, dialect);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return new AccountsStore(db, dialect, {
    freeCalls: config.accounts.freeCalls,
    signupRateLimit: config.accounts.signupRateLimit,
    login: { ...config.accounts.login, now: overrides.now ?? Date.now },
    billing: overrides.billing ?? createBillingProvider(config.accounts),
    now: overrides.now ?? Date.now,
  });
}

export { AccountsStore, type AccountView, type KeyView, type CreatedKey, type SessionResult, type CardView } from './store.js';
export type { AccountsPort, AuthenticatedKey, FreeCallLimits, FreeCalls, KeyKind, Tier } from './ports.js';
