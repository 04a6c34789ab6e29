/**
 * Opens the accounts database: PostgreSQL when the URL says so, otherwise a SQLite file in the data
 * directory. Both go through the same Kysely query layer.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface DbOptions {
  databaseUrl: string;
  dataDir: string;
  /** PostgreSQL only: a schema to use instead of `public` (tests isolate themselves this way). */
  pgSchema?: string;
}

export interface OpenDb {
  db: Kysely<Database>;
  dialect: Dialect;
}

export function sqlitePath(dataDir: string): string {
  return resolve(dataDir, 'facecompute.sqlite');
}

export function openDb(opts: DbOptions): OpenDb {
  const url = opts.databaseUrl;
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const pool = new pg.Pool({
      connectionString: url,
      max: 10,
      ...(opts.pgSchema ? { options: `-c search_path=${opts.pgSchema}` } : {}),
    });
    // An idle pooled connection that drops (server restart, network) emits 'error' on the pool; unheard,
    // it would crash the process. The pool replaces the connection and the next query reports failures.
    pool.on('error', () => undefined);
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), dialect: 'postgres' };
  }
  if (url !== '') {
    throw new Error('FACECOMPUTE_DATABASE_URL must be a postgres:// URL (leave it unset for SQLite in the data directory)');
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const database = new SqliteDatabase(sqlitePath(opts.dataDir));
  // WAL lets the console and the gateway read while one of them writes; busy_timeout waits out a
  // concurrent writer instead of failing with SQLITE_BUSY.
  database.pragma('journal_mode = WAL');
  database.pragma('busy_timeout = 5000');
  database.pragma('foreign_keys = ON');
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), dialect: 'sqlite' };
}
