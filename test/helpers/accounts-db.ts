/**
 * Runs a suite against every accounts database: SQLite in a temporary directory, and PostgreSQL at
 * FACECOMPUTE_TEST_DATABASE_URL in a throwaway schema. A missing PostgreSQL fails the 'postgres'
 * subtest, naming it and the command that starts it (test/helpers/services.ts), with CI set or not.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createAccountsStore, type AccountsStore, type StoreOverrides } from '../../src/accounts/index.js';
import type { BillingProvider } from '../../src/accounts/billing/index.js';
import { requireService } from './services.js';

export interface TestDb {
  name: 'sqlite' | 'postgres';
  config: Config;
  open(billing?: BillingProvider, extra?: Omit<StoreOverrides, 'billing' | 'pgSchema'>): Promise<AccountsStore>;
  cleanup(): Promise<void>;
}

export function testEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { FACECOMPUTE_LOG_LEVEL: 'silent', ...extra };
}

function sqliteDb(env: Record<string, string>): TestDb {
  const dir = mkdtempSync(join(tmpdir(), 'fc-accounts-'));
  const config = loadConfig(testEnv({ ...env, FACECOMPUTE_DATA_DIR: dir }));
  return {
    name: 'sqlite',
    config,
    open: (billing, extra = {}) => createAccountsStore(config, { ...extra, ...(billing ? { billing } : {}) }),
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresDb(url: string, env: Record<string, string>): TestDb {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const config = loadConfig(testEnv({ ...env, FACECOMPUTE_DATABASE_URL: url }));
  let created = false;
  return {
    name: 'postgres',
    config,
    async open(billing, extra = {}) {
      if (!created) {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        await c.query(`CREATE SCHEMA ${schema}`);
        await c.end();
        created = true;
      }
      return createAccountsStore(config, { ...extra, pgSchema: schema, ...(billing ? { billing } : {}) });
    },
    async cleanup() {
      if (!created) return;
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

/** Calls `suite` once per database, each in its own subtest. */
export function eachDatabase(t: Test, suite: (t: Test, db: TestDb) => Promise<void>, env: Record<string, string> = {}): void {
  t.test('sqlite', async (t) => {
    const db = sqliteDb(env);
    t.teardown(() => db.cleanup());
    await suite(t, db);
  });
  t.test('postgres', async (t) => {
    const url = await requireService(t, 'PostgreSQL');
    if (!url) return;
    const db = postgresDb(url, env);
    t.teardown(() => db.cleanup());
    await suite(t, db);
  });
}
