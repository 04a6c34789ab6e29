/**
 * Versioned schema migrations, run at start-up by `migrate`. Append new entries; never edit one that
 * has shipped, because databases record which names they already ran.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from './db.js';

function migrations(dialect: Dialect): Record<string, Migration> {
  // SQLite's INTEGER PRIMARY KEY is the rowid alias; PostgreSQL needs an identity column.
  const serial = (c: any) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey().generatedAlwaysAsIdentity());
  return {
    '0001_accounts_keys_usage_sessions': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('accounts')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('tier', 'text', (c) => c.notNull().check(sql`tier in ('anonymous', 'account', 'card')`))
          .addColumn('email', 'text', (c) => c.unique())
          .addColumn('password_hash', 'text')
          .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'disabled')`))
          .addColumn('billing_customer_id', 'text')
          .addColumn('card_payment_method', 'text')
          .addColumn('card_brand', 'text')
          .addColumn('card_last4', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('api_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('rest', 'mcp')`))
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('prefix', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('last_used_at', 'text')
          .addColumn('revoked_at', 'text')
          .execute();
        await db.schema.createIndex('api_keys_account_kind').on('api_keys').columns(['account_id', 'kind']).execute();
        await db.schema
          .createTable('usage')
          .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
          .addColumn('allowance', 'integer', (c) => c.notNull())
          .addColumn('consumed', 'integer', (c) => c.notNull().defaultTo(0).check(sql`consumed >= 0`))
          .execute();
        await db.schema
          .createTable('sessions')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('token_hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('signup_events')
          .addColumn('id', 'integer', serial)
          .addColumn('address_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('signup_events_address').on('signup_events').columns(['address_hash', 'created_at']).execute();
      },
    },
    '0002_login_failures': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('login_failures')
          .addColumn('id', 'integer', serial)
          .addColumn('email_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('login_failures_email').on('login_failures').columns(['email_hash', 'created_at']).execute();
        await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
      },
    },
    // Replaces 0002's lock per email (anyone who knew an email could lock its owner out) with
    // throttling per (email, address) and per address; see login-throttle.ts.
    '0003_login_throttle': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('login_throttle')
          .addColumn('key_hash', 'text', (c) => c.primaryKey())
          .addColumn('failures', 'integer', (c) => c.notNull())
          .addColumn('window_started_at', 'text', (c) => c.notNull())
          .addColumn('blocked_until', 'text', (c) => c.notNull())
          .addColumn('updated_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('login_throttle_updated').on('login_throttle').column('updated_at').execute();
        await db.schema.dropTable('login_failures').execute();
      },
    },
    // Email verification before the account allowance, one card per bounded number of
    // accounts, idle session expiry, and one sliding-window table for every per-address/per-account
    // attempt limit (signups of both kinds, card attempts, verification mails), replacing
    // signup_events. Accounts that had an email before this migration keep their allowance: they
    // count as verified from their creation.
    '0004_verification_cards_attempts': {
      async up(db: Kysely<any>) {
        await db.schema.alterTable('accounts').addColumn('email_verified_at', 'text').execute();
        await db.schema.alterTable('accounts').addColumn('card_fingerprint', 'text').execute();
        await db.updateTable('accounts').set({ email_verified_at: sql`created_at` }).where('email', 'is not', null).execute();
        await db.schema.createIndex('accounts_card_fingerprint').on('accounts').column('card_fingerprint').execute();
        await db.schema.alterTable('sessions').addColumn('last_seen_at', 'text').execute();
        await db.schema
          .createTable('attempt_events')
          .addColumn('id', 'integer', serial)
          .addColumn('bucket', 'text', (c) => c.notNull())
          .addColumn('key_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('attempt_events_key').on('attempt_events').columns(['bucket', 'key_hash', 'created_at']).execute();
        await db.schema
          .createTable('email_verifications')
          .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('signing_key', 'text', (c) => c.notNull())
          .addColumn('expires_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.dropTable('signup_events').execute();
      },
    },
    // Per-request usage for the console's Usage page. Two tables, so that the size is bounded
    // by accounts, days and keys, not by traffic: daily counters (one row per account, UTC day, key,
    // route, outcome and status class, added to by each batch) and each account's most recent
    // requests (the page lists 100; older ones are deleted as new ones arrive). Both are trimmed to
    // FACECOMPUTE_USAGE_RETENTION_DAYS. No request body, image or embedding is ever stored.
    '0005_usage_log': {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('usage_daily')
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('day', 'text', (c) => c.notNull())
          .addColumn('key_id', 'text', (c) => c.notNull())
          .addColumn('route', 'text', (c) => c.notNull())
          .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('charged', 'refunded', 'not_charged')`))
          .addColumn('status_class', 'text', (c) => c.notNull())
          .addColumn('calls', 'integer', (c) => c.notNull().check(sql`calls >= 0`))
          .addPrimaryKeyConstraint('usage_daily_pk', ['account_id', 'day', 'key_id', 'route', 'outcome', 'status_class'])
          .execute();
        await db.schema.createIndex('usage_daily_day').on('usage_daily').column('day').execute();
        await db.schema
          .createTable('usage_recent')
          .addColumn('id', 'integer', serial)
          .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
          .addColumn('key_id', 'text')
          .addColumn('surface', 'text', (c) => c.notNull().check(sql`surface in ('rest', 'mcp')`))
          .addColumn('route', 'text', (c) => c.notNull())
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('error', 'text')
          .addColumn('outcome', 'text', (c) => c.notNull().check(sql`outcome in ('charged', 'refunded', 'not_charged')`))
          .addColumn('duration_ms', 'real', (c) => c.notNull())
          .addColumn('request_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('usage_recent_account').on('usage_recent').columns(['account_id', 'id']).execute();
        await db.schema.createIndex('usage_recent_created').on('usage_recent').column('created_at').execute();
      },
    },
  };
}

class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations(this.dialect);
  }
}

/** Brings the schema up to date; throws (refusing start-up) if any migration fails. */
export async function migrate(db: Kysely<any>, dialect: Dialect): Promise<string[]> {
  // Kysely looks for its bookkeeping tables across all schemas unless told which one; name the
  // connection's current schema so that other schemas in the same database cannot mislead it.
  let migrationTableSchema: string | undefined;
  if (dialect === 'postgres') {
    const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(db);
    migrationTableSchema = rows[0]?.s;
  }
  const run = async (conn: Kysely<any>) => new Migrator({ db: conn, provider: new StaticProvider(dialect), ...(migrationTableSchema ? { migrationTableSchema } : {}) }).migrateToLatest();
  let outcome: Awaited<ReturnType<Migrator['migrateToLatest']>>;
  if (dialect === 'sqlite') {
    // Kysely takes no lock on SQLite (its adapter assumes one process), but the gateway, the console
    // and the MCP endpoint are separate processes that may share one data directory and start
    // together: the loser of that race re-ran a migration ("table ... already exists"). BEGIN
    // IMMEDIATE takes SQLite's write lock for the whole run (busy_timeout waits for it), and SQLite's
    // DDL is transactional, so the second process sees every migration already recorded.
    outcome = await db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const r = await run(conn);
        await sql.raw(r.error ? 'rollback' : 'commit').execute(conn);
        return r;
      } catch (err) {
        await sql`rollback`.execute(conn).catch(() => undefined);
        throw err;
      }
    });
  } else {
    outcome = await run(db); // PostgreSQL: Kysely takes pg_advisory_xact_lock in its transaction, which serialises replicas
  }
  const { error, results } = outcome;
  if (error) throw new Error(`database migration failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

export const MIGRATION_NAMES = Object.keys(migrations('sqlite'));
