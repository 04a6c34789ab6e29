/**
 * Sliding-window attempt limits kept in the accounts database, so that every console replica counts
 * the same attempts: anonymous and email signups per client address, card attempts per account and
 * per address, verification mails per account. The attempt is recorded before it is counted, so
 * parallel attempts cannot all pass; keys are stored only as SHA-256.
 */
import type { Kysely } from 'kysely';
import { ServiceError } from '../errors/index.js';
import type { Database } from './schema.js';
import { sha256 } from './secrets.js';

export interface WindowLimit {
  /** A name for the kind of attempt, e.g. `signup-email`. */
  bucket: string;
  limit: number;
  windowMs: number;
}

export class AttemptWindow {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts one attempt for `key`; returns the seconds to wait when this one is over the limit, else 0.
   * Rows older than the window are dropped as they pass.
   */
  async take(w: WindowLimit, key: string): Promise<number> {
    const t = this.now();
    const since = new Date(t - w.windowMs).toISOString();
    const keyHash = sha256(`${w.bucket}:${key}`);
    await this.db.deleteFrom('attempt_events').where('bucket', '=', w.bucket).where('created_at', '<', since).execute();
    await this.db.insertInto('attempt_events').values({ bucket: w.bucket, key_hash: keyHash, created_at: new Date(t).toISOString() }).execute();
    const rows = await this.db
      .selectFrom('attempt_events')
      .select('created_at')
      .where('bucket', '=', w.bucket)
      .where('key_hash', '=', keyHash)
      .where('created_at', '>=', since)
      .orderBy('created_at')
      .execute();
    if (rows.length <= w.limit) return 0;
    // The window frees a slot when the oldest attempt that still counts leaves it.
    const oldest = Date.parse(rows[rows.length - 1 - w.limit]!.created_at);
    return Math.max(1, Math.ceil((oldest + w.windowMs - t) / 1000));
  }

  /** `take`, throwing `code` (429) with Retry-After when over the limit. */
  async enforce(w: WindowLimit, key: string, code: 'rate_limited' | 'signup_rate_limited', detail: string): Promise<void> {
    const wait = await this.take(w, key);
    if (wait > 0) throw new ServiceError(code, detail, { headers: { 'retry-after': String(wait) } });
  }
}
