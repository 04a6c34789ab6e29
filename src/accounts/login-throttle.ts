/**
 * Sign-in throttling that nobody can turn against an account's owner. Two budgets, both kept in the
 * accounts database so that every console replica sees the same counts:
 *
 * - per (email, client address): `freeFailures` attempts pass at once, then each further failure
 *   doubles the wait before the next attempt from that address (1 s, 2 s, 4 s, … up to `maxDelayMs`).
 *   A success clears it; a streak left alone for a day is forgotten.
 * - per client address, all emails together: at most `addressFailuresPerHour` failures in an hour
 *   (a fixed window), which stops one address from guessing across many accounts.
 *
 * Nothing is keyed on the email alone, so failures from an attacker's address never delay the owner
 * signing in from another address. Attempts are counted before the password is checked (and given
 * back on success), with compare-and-set updates, so parallel guesses cannot all slip through
 * before the first failure is recorded. Emails and addresses are stored only as SHA-256.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Kysely } from 'kysely';
import { ServiceError } from '../errors/index.js';
import type { Database, LoginThrottleTable } from './schema.js';
import { sha256 } from './secrets.js';

export interface LoginThrottleOptions {
  freeFailures: number;
  maxDelayMs: number;
  addressFailuresPerHour: number;
  now: () => number;
}

const HOUR_MS = 3600_000;
const STREAK_FORGOTTEN_MS = 24 * HOUR_MS;
const FIRST_DELAY_MS = 1000;
// Compare-and-set rounds before giving up on a row that other attempts keep changing.
const CAS_ROUNDS = 64;
const EPOCH = new Date(0).toISOString();

/**
 * The part of a client address that one client controls: an IPv4 address, or an IPv6 /64 (what one
 * subscriber or host is routed; rotating addresses inside it must not buy more guesses).
 */
export function addressKey(ip: string): string {
  return addressPrefix(ip, 64);
}

/**
 * The address's network of `bits` (48 or 64) for IPv6; IPv4 addresses (and IPv4-mapped ones) are
 * whole. A /48 is what one site is commonly routed: it holds 65,536 /64s, so a budget per /64 alone
 * gives one site 65,536 budgets.
 */
export function addressPrefix(ip: string, bits: 48 | 64): string {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return bare.toLowerCase();
  const [head, tail] = bare.toLowerCase().split('::') as [string, string | undefined];
  const h = head === '' ? [] : head.split(':');
  const tl = tail === undefined || tail === '' ? [] : tail.split(':');
  // An embedded IPv4 tail (::a.b.c.d) is two groups; the prefixes need only the first three or four.
  const groups = tail === undefined ? h : [...h, ...Array(Math.max(0, 8 - h.length - tl.length)).fill('0'), ...tl];
  return `${groups.slice(0, bits / 16).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/${bits}`;
}

function secondsUntil(t: number, now: number): number {
  return Math.max(1, Math.ceil((t - now) / 1000));
}

function wait(seconds: number): string {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}

export class LoginThrottle {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly opts: LoginThrottleOptions,
  ) {}

  /** The wait after the `n`th failure in a row: none within the free ones, then doubling to the cap. */
  delayAfter(n: number): number {
    if (n < this.opts.freeFailures) return 0;
    return Math.min(this.opts.maxDelayMs, FIRST_DELAY_MS * 2 ** Math.min(40, n - this.opts.freeFailures));
  }

  private keys(email: string, clientAddress: string): { pair: string; address: string } {
    const addr = addressKey(clientAddress);
    return { pair: sha256(`login-pair:${email}\n${addr}`), address: sha256(`login-address:${addr}`) };
  }

  private async row(key: string): Promise<LoginThrottleTable> {
    const found = await this.db.selectFrom('login_throttle').selectAll().where('key_hash', '=', key).executeTakeFirst();
    if (found) return found;
    await this.db
      .insertInto('login_throttle')
      .values({ key_hash: key, failures: 0, window_started_at: new Date(this.opts.now()).toISOString(), blocked_until: EPOCH, updated_at: new Date(this.opts.now()).toISOString() })
      .onConflict((oc) => oc.column('key_hash').doNothing())
      .execute();
    return this.db.selectFrom('login_throttle').selectAll().where('key_hash', '=', key).executeTakeFirstOrThrow();
  }

  /** Sets `next` on the row if it is still exactly `seen`; false when another attempt changed it first. */
  private async swap(seen: LoginThrottleTable, next: Partial<LoginThrottleTable>): Promise<boolean> {
    const res = await this.db
      .updateTable('login_throttle')
      .set(next)
      .where('key_hash', '=', seen.key_hash)
      .where('failures', '=', seen.failures)
      .where('window_started_at', '=', seen.window_started_at)
      .where('blocked_until', '=', seen.blocked_until)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  private throttled(detail: string, seconds: number): ServiceError {
    return new ServiceError('rate_limited', `${detail}; try again in ${wait(seconds)}`, { headers: { 'retry-after': String(seconds) } });
  }

  /**
   * Counts one attempt for this email from this address, or throws `rate_limited` (with Retry-After)
   * when either budget says wait. Call `succeeded` after a right password.
   */
  async attempt(email: string, clientAddress: string): Promise<void> {
    const { pair, address } = this.keys(email, clientAddress);
    const now = this.opts.now();
    const waiting = await this.db.selectFrom('login_throttle').select('blocked_until').where('key_hash', '=', pair).executeTakeFirst();
    if (waiting && Date.parse(waiting.blocked_until) > now) {
      throw this.throttled('too many failed sign-ins for this account from your address', secondsUntil(Date.parse(waiting.blocked_until), now));
    }
    await this.takeFromAddress(address, now);
    try {
      await this.takeFromPair(pair, now);
    } catch (err) {
      await this.giveBackToAddress(address);
      throw err;
    }
  }

  private async takeFromAddress(key: string, now: number): Promise<void> {
    const limit = this.opts.addressFailuresPerHour;
    for (let round = 0; round < CAS_ROUNDS; round++) {
      const row = await this.row(key);
      const started = Date.parse(row.window_started_at);
      const expired = now - started >= HOUR_MS;
      if (!expired && row.failures >= limit) {
        throw this.throttled(`too many failed sign-ins from your address (at most ${limit} an hour)`, secondsUntil(started + HOUR_MS, now));
      }
      const iso = new Date(now).toISOString();
      const next = expired ? { failures: 1, window_started_at: iso, updated_at: iso } : { failures: row.failures + 1, updated_at: iso };
      if (await this.swap(row, next)) return;
    }
    throw this.throttled('too many sign-ins from your address at once', 1);
  }

  private async takeFromPair(key: string, now: number): Promise<void> {
    for (let round = 0; round < CAS_ROUNDS; round++) {
      const row = await this.row(key);
      const blockedUntil = Date.parse(row.blocked_until);
      if (blockedUntil > now) throw this.throttled('too many failed sign-ins for this account from your address', secondsUntil(blockedUntil, now));
      const streak = now - Date.parse(row.updated_at) >= STREAK_FORGOTTEN_MS ? 0 : row.failures;
      const n = streak + 1;
      const iso = new Date(now).toISOString();
      if (await this.swap(row, { failures: n, blocked_until: new Date(now + this.delayAfter(n)).toISOString(), updated_at: iso })) return;
    }
    throw this.throttled('too many sign-ins for this account from your address at once', 1);
  }

  private async giveBackToAddress(key: string): Promise<void> {
    await this.db
      .updateTable('login_throttle')
      .set((eb) => ({ failures: eb('failures', '-', 1) }))
      .where('key_hash', '=', key)
      .where('failures', '>', 0)
      .execute();
  }

  /** A right password: the pair's streak ends and the attempt is not held against the address. */
  async succeeded(email: string, clientAddress: string): Promise<void> {
    const { pair, address } = this.keys(email, clientAddress);
    await this.db.deleteFrom('login_throttle').where('key_hash', '=', pair).execute();
    await this.giveBackToAddress(address);
  }

  /** Rows nobody has touched for a day count nothing any more; dropping them keeps the table small. */
  async prune(): Promise<void> {
    const before = new Date(this.opts.now() - STREAK_FORGOTTEN_MS).toISOString();
    await this.db.deleteFrom('login_throttle').where('updated_at', '<', before).execute();
  }
}
