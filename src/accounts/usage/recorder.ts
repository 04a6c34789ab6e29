/**
 * Per-request usage, written off the request path. `record()` only appends to an in-memory buffer (a
 * few microseconds); a timer writes the buffer every FACECOMPUTE_USAGE_FLUSH_MS (1 s), or as soon as
 * BATCH_SIZE records wait, in transactions of WRITE_CHUNK records. A write adds them to the daily counters (summed in
 * memory first, one upsert per distinct row) and inserts the recent requests; then the flush keeps only
 * the newest RECENT_PER_ACCOUNT of each account it wrote to. Once an hour rows older than the retention
 * are deleted. So the tables grow with accounts, keys and days, never with traffic.
 *
 * What a crash loses: the records still in the buffer, at most FACECOMPUTE_USAGE_FLUSH_MS of answered
 * requests (and at most MAX_BUFFERED of them). A write that fails (the database is down) keeps its
 * records for the next try, so nothing is counted twice or lost while the buffer has room; past
 * MAX_BUFFERED new records are dropped and counted, never allowed to grow memory. The free calls
 * themselves are not counted here: they are consumed and refunded synchronously (AccountsPort), and the
 * usage records say afterwards what each request did.
 */
import type { Kysely } from 'kysely';
import type { Database, UsageOutcome } from '../schema.js';

/** One answered request of an account. Holds no body, image, embedding or key secret. */
export interface UsageEvent {
  accountId: string;
  keyId: string | null;
  surface: 'rest' | 'mcp';
  /** The REST route ('/verify') or the MCP tool ('verify_faces'). */
  route: string;
  status: number;
  /** The error code of an error answer, else null. */
  error: string | null;
  outcome: UsageOutcome;
  durationMs: number;
  requestId: string;
  /** Epoch ms when the request was answered. */
  at: number;
}

/** What a gateway or MCP endpoint needs: somewhere to put an answered request. */
export interface UsageSink {
  record(e: UsageEvent): void;
}

export interface UsageRecorderOptions {
  /** Days of usage kept (FACECOMPUTE_USAGE_RETENTION_DAYS, at least 1 here). */
  retentionDays: number;
  /** Interval of the batched writes (FACECOMPUTE_USAGE_FLUSH_MS). */
  flushMs: number;
  /** The clock (tests move it). */
  now?: () => number;
  /** Where a failed write is reported (a pino logger). */
  log?: { warn(obj: object, msg: string): void };
}

/** The Usage page lists an account's last 100 requests; older ones are deleted as new ones are written. */
export const RECENT_PER_ACCOUNT = 100;
/** A write starts early once this many records wait. */
export const BATCH_SIZE = 500;
/**
 * Records per transaction. better-sqlite3 runs each statement on the JS thread, so a write holds the
 * event loop: about 40 us of CPU per record (bench/gateway/usage-cost.ts), about 4 ms for 100. Larger
 * transactions stalled every request behind them (500 records: 68 ms median on a loaded 2-core machine).
 */
export const WRITE_CHUNK = 100;
/** Accounts trimmed per transaction. */
const TRIM_CHUNK = 50;
/** Records held while the database cannot be written; past it new records are dropped (and counted). */
export const MAX_BUFFERED = 10_000;
const PRUNE_EVERY_MS = 3600_000;
const DAY_MS = 86_400_000;

export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export class UsageRecorder implements UsageSink {
  private buffer: UsageEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private lastPrune = 0;
  private closed = false;
  /** Records dropped because the buffer was full (the database was down for long). */
  dropped = 0;
  /** Records written so far by this process. */
  written = 0;
  private readonly now: () => number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: UsageRecorderOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  record(e: UsageEvent): void {
    if (this.closed) return;
    if (this.buffer.length >= MAX_BUFFERED) {
      this.dropped++;
      return;
    }
    this.buffer.push(e);
    if (this.buffer.length >= BATCH_SIZE) this.schedule(0);
    else if (this.timer === null) this.schedule(this.opts.flushMs);
  }

  /** Records waiting to be written. */
  get pending(): number {
    return this.buffer.length;
  }

  private schedule(ms: number): void {
    if (this.timer !== null) {
      if (ms > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, ms);
    this.timer.unref();
  }

  /** Writes what is buffered (and waits for a write in progress). Never throws. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.buffer.length === 0) return;
    this.writing = this.drain().finally(() => {
      this.writing = null;
    });
    await this.writing;
    if (this.buffer.length > 0 && !this.closed) this.schedule(this.buffer.length >= BATCH_SIZE ? 0 : this.opts.flushMs);
  }

  /**
   * Writes the buffer WRITE_CHUNK records per transaction, yielding to I/O between transactions, so
   * that requests are answered between them. Stops at the first failure, the failed chunk back in front.
   */
  private async drain(): Promise<void> {
    const touched = new Set<string>();
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, WRITE_CHUNK);
      try {
        await this.write(batch);
        this.written += batch.length;
        for (const e of batch) touched.add(e.accountId);
      } catch (err) {
        // Nothing of the chunk was written (one transaction): put it back in front, within the bound.
        const room = Math.max(0, MAX_BUFFERED - this.buffer.length);
        this.dropped += Math.max(0, batch.length - room);
        this.buffer = batch.slice(0, room).concat(this.buffer);
        this.opts.log?.warn({ err, pending: this.buffer.length, dropped: this.dropped }, 'usage records not written; retrying');
        if (!this.closed) this.schedule(this.opts.flushMs);
        return;
      }
      await new Promise((r) => setImmediate(r));
    }
    await this.trim([...touched].sort());
  }

  /**
   * Keeps the newest RECENT_PER_ACCOUNT requests of each account written to, once per flush (not per
   * chunk: a trim is one index walk of about 100 entries per account, the larger part of a write's
   * cost), TRIM_CHUNK accounts per transaction; and deletes what is older than the retention, hourly.
   * A failure is logged and left: the account is trimmed again on its next write, the prune next time.
   */
  private async trim(accounts: string[]): Promise<void> {
    const prune = this.now() - this.lastPrune >= PRUNE_EVERY_MS;
    try {
      for (let i = 0; i < accounts.length; i += TRIM_CHUNK) {
        await this.db.transaction().execute(async (tx) => {
          for (const account of accounts.slice(i, i + TRIM_CHUNK)) {
            // The index (account_id, id) serves both sides.
            await tx
              .deleteFrom('usage_recent')
              .where('account_id', '=', account)
              .where('id', '<', (eb) =>
                eb
                  .selectFrom((sub) => sub.selectFrom('usage_recent').select('id').where('account_id', '=', account).orderBy('id', 'desc').limit(RECENT_PER_ACCOUNT).as('newest'))
                  .select((s) => s.fn.min<number>('newest.id').as('m')),
              )
              .execute();
          }
        });
        await new Promise((r) => setImmediate(r));
      }
      if (prune) {
        await this.db.transaction().execute((tx) => this.pruneIn(tx));
        this.lastPrune = this.now();
      }
    } catch (err) {
      this.opts.log?.warn({ err }, 'usage records not trimmed; trimmed on the next write');
    }
  }

  /** Writes what is left and stops. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush();
    this.closed = true;
  }

  private async write(batch: UsageEvent[]): Promise<void> {
    // The daily counters, summed here so that each row is upserted once; in key order, so that two
    // processes writing the same rows at once (PostgreSQL) take their row locks in the same order.
    const daily = new Map<string, { account_id: string; day: string; key_id: string; route: string; outcome: UsageOutcome; status_class: string; calls: number }>();
    for (const e of batch) {
      const row = { account_id: e.accountId, day: utcDay(e.at), key_id: e.keyId ?? '', route: e.route, outcome: e.outcome, status_class: statusClass(e.status), calls: 0 };
      const k = [row.account_id, row.day, row.key_id, row.route, row.outcome, row.status_class].join('\u0000');
      (daily.get(k) ?? daily.set(k, row).get(k)!).calls++;
    }
    const dailyRows = [...daily.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
    const recentRows = batch.map((e) => ({
      account_id: e.accountId,
      key_id: e.keyId,
      surface: e.surface,
      route: e.route,
      status: e.status,
      error: e.error,
      outcome: e.outcome,
      duration_ms: Math.round(e.durationMs * 10) / 10,
      request_id: e.requestId,
      created_at: new Date(e.at).toISOString(),
    }));
    await this.db.transaction().execute(async (tx) => {
      // At most a few hundred rows per statement: SQLite binds at most 32,766 parameters.
      for (let i = 0; i < dailyRows.length; i += 200) {
        await tx
          .insertInto('usage_daily')
          .values(dailyRows.slice(i, i + 200))
          .onConflict((oc) =>
            oc.columns(['account_id', 'day', 'key_id', 'route', 'outcome', 'status_class']).doUpdateSet((eb) => ({ calls: eb('usage_daily.calls', '+', eb.ref('excluded.calls')) })),
          )
          .execute();
      }
      for (let i = 0; i < recentRows.length; i += 200) await tx.insertInto('usage_recent').values(recentRows.slice(i, i + 200)).execute();
    });
  }

  private async pruneIn(tx: Kysely<Database>): Promise<void> {
    const cutoff = this.now() - this.opts.retentionDays * DAY_MS;
    await tx.deleteFrom('usage_daily').where('day', '<', utcDay(cutoff)).execute();
    await tx.deleteFrom('usage_recent').where('created_at', '<', new Date(cutoff).toISOString()).execute();
  }
}

/** The recorder the configuration asks for, or null when FACECOMPUTE_USAGE_RETENTION_DAYS is 0. */
export function createUsageRecorder(store: { db: Kysely<Database> }, o: UsageRecorderOptions): UsageRecorder | null {
  if (o.retentionDays <= 0) return null;
  return new UsageRecorder(store.db, o);
}
