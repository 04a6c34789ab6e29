/**
 * The accounts store: accounts, REST and MCP keys, free-call usage and console sessions, over one
 * Kysely query layer for SQLite and PostgreSQL. It implements AccountsPort for the gateway and the
 * MCP endpoint, plus what the console needs.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { ServiceError } from '../errors/index.js';
import type { AccountsPort, AuthenticatedKey, FreeCallLimits, FreeCalls, KeyKind, Tier } from './ports.js';
import type { AccountsTable, ApiKeysTable, Database } from './schema.js';
import type { Dialect } from './db.js';
import { KEY_PREFIX, SESSION_PREFIX, hashesEqual, kindOf, newApiKey, randomSecret, sha256 } from './secrets.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { checkKeyName, checkPassword, normalizeEmail } from './validation.js';
import { checkPaymentMethodToken, type BillingProvider } from './billing/index.js';
import { LoginThrottle, type LoginThrottleOptions } from './login-throttle.js';

export interface AccountView {
  id: string;
  tier: Tier;
  email: string | null;
  status: 'active' | 'disabled';
  free_calls: FreeCalls;
  created_at: string;
}

export interface KeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CreatedKey {
  id: string;
  name: string;
  prefix: string;
  key: string;
  created_at: string;
}

export interface SessionResult {
  account: AccountView;
  session_token: string;
}

/** The card shown on the account page; the provider holds the card itself. */
export interface CardView {
  brand: string | null;
  last4: string | null;
}

export interface StoreOptions {
  freeCalls: FreeCallLimits;
  signupRateLimit: number;
  login: LoginThrottleOptions;
  billing: BillingProvider;
  /** Active keys of one kind an account may hold, per tier. */
  keyLimits?: Record<Tier, number>;
  sessionTtlMs?: number;
  /** Clock of last_used_at writes, epoch ms (tests move it). */
  now?: () => number;
}

/**
 * A key's last_used_at is written at most once per this interval by one process: it is shown to a
 * minute in the console, and a write on every request made each call, refusals included, pay a
 * database write (and, on PostgreSQL, every concurrent call with one key queue on that row's lock).
 */
export const LAST_USED_RESOLUTION_MS = 60_000;
/** Keys remembered for that throttle; beyond it the stale ones are forgotten first. */
const LAST_USED_TRACKED = 10_000;

const KIND_NAME: Record<KeyKind, string> = { rest: 'REST', mcp: 'MCP' };
const HOUR_MS = 3600_000;

function now(): string {
  return new Date().toISOString();
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint failed/.test(e?.message ?? '');
}

export class AccountsStore implements AccountsPort {
  private readonly keyLimits: Record<Tier, number>;
  private readonly sessionTtlMs: number;
  private readonly throttle: LoginThrottle;
  /** Key id → when this process last wrote its last_used_at (epoch ms). */
  private readonly lastUsedWritten = new Map<string, number>();
  private readonly clock: () => number;

  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: Dialect,
    private readonly opts: StoreOptions,
  ) {
    // Anonymous agents get one key of each kind so that signup cannot be turned into many keys.
    this.keyLimits = opts.keyLimits ?? { anonymous: 1, account: 25, card: 25 };
    this.sessionTtlMs = opts.sessionTtlMs ?? 30 * 24 * HOUR_MS;
    this.throttle = new LoginThrottle(db, opts.login);
    this.clock = opts.now ?? Date.now;
  }

  /** One round trip to the database (readiness probes). */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  // ---- accounts ---------------------------------------------------------------------------------

  private async view(row: AccountsTable): Promise<AccountView> {
    const usage = await this.db.selectFrom('usage').select(['allowance', 'consumed']).where('account_id', '=', row.id).executeTakeFirst();
    const total = Number(usage?.allowance ?? 0);
    const used = Number(usage?.consumed ?? 0);
    return {
      id: row.id,
      tier: row.tier,
      email: row.email,
      status: row.status,
      free_calls: { total, used, remaining: Math.max(0, total - used) },
      created_at: row.created_at,
    };
  }

  private async row(accountId: string): Promise<AccountsTable> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
    if (!row) throw new ServiceError('unauthorized', 'the account no longer exists');
    return row;
  }

  async getAccount(accountId: string): Promise<AccountView> {
    return this.view(await this.row(accountId));
  }

  async getCard(accountId: string): Promise<CardView | null> {
    const row = await this.row(accountId);
    return row.card_payment_method ? { brand: row.card_brand, last4: row.card_last4 } : null;
  }

  private async insertAccount(tier: Tier, email: string | null, passwordHash: string | null): Promise<AccountsTable> {
    const row: AccountsTable = {
      id: randomUUID(),
      tier,
      email,
      password_hash: passwordHash,
      status: 'active',
      billing_customer_id: null,
      card_payment_method: null,
      card_brand: null,
      card_last4: null,
      created_at: now(),
    };
    try {
      await this.db.transaction().execute(async (tx) => {
        await tx.insertInto('accounts').values(row).execute();
        await tx.insertInto('usage').values({ account_id: row.id, allowance: this.opts.freeCalls[tier], consumed: 0 }).execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ServiceError('email_taken', 'an account with this email already exists');
      throw err;
    }
    return row;
  }

  /**
   * One call, no email: an active account with the anonymous allowance. Limited per client address
   * per hour; the attempt is recorded before counting so that parallel attempts cannot all pass.
   */
  async signupAnonymous(clientAddress: string): Promise<SessionResult> {
    const addressHash = sha256(`signup:${clientAddress}`);
    const t = Date.now();
    const since = new Date(t - HOUR_MS).toISOString();
    await this.db.deleteFrom('signup_events').where('created_at', '<', since).execute();
    await this.db.insertInto('signup_events').values({ address_hash: addressHash, created_at: new Date(t).toISOString() }).execute();
    const { n } = await this.db
      .selectFrom('signup_events')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('address_hash', '=', addressHash)
      .where('created_at', '>=', since)
      .executeTakeFirstOrThrow();
    if (Number(n) > this.opts.signupRateLimit) {
      throw new ServiceError('signup_rate_limited', `at most ${this.opts.signupRateLimit} anonymous signups per hour from one address; try again later or sign up with an email`, {
        headers: { 'retry-after': '3600' },
      });
    }
    const row = await this.insertAccount('anonymous', null, null);
    return { account: await this.view(row), session_token: await this.createSession(row.id) };
  }

  async signup(email: unknown, password: unknown): Promise<SessionResult> {
    const e = normalizeEmail(email);
    const p = checkPassword(password);
    const row = await this.insertAccount('account', e, await hashPassword(p));
    return { account: await this.view(row), session_token: await this.createSession(row.id) };
  }

  /**
   * Password guessing is throttled per (email, client address) with a growing delay, and per address
   * (login-throttle.ts); never per email alone, so failures elsewhere cannot keep the owner out.
   * The attempt is counted before the password is checked, so the wait applies to a right one too.
   */
  async login(email: unknown, password: unknown, clientAddress: string): Promise<SessionResult> {
    if (typeof email !== 'string' || typeof password !== 'string') throw new ServiceError('invalid_request', 'email and password are required');
    const normalized = email.trim().toLowerCase();
    await this.throttle.prune();
    await this.throttle.attempt(normalized, clientAddress);
    const row = await this.db.selectFrom('accounts').selectAll().where('email', '=', normalized).executeTakeFirst();
    const ok = await verifyPassword(row?.password_hash ?? null, password);
    if (!row || !ok) throw new ServiceError('invalid_credentials', 'the email or password is wrong');
    await this.throttle.succeeded(normalized, clientAddress);
    if (row.status !== 'active') throw new ServiceError('account_inactive', 'the account is disabled');
    return { account: await this.view(row), session_token: await this.createSession(row.id) };
  }

  /** Anonymous to real account: email and password added; keys and usage kept; allowance raised. */
  async upgrade(accountId: string, email: unknown, password: unknown): Promise<AccountView> {
    const e = normalizeEmail(email);
    const p = checkPassword(password);
    const row = await this.row(accountId);
    if (row.tier !== 'anonymous') throw new ServiceError('invalid_request', 'the account already has an email; only anonymous accounts can be upgraded');
    const hash = await hashPassword(p);
    try {
      await this.db.transaction().execute(async (tx) => {
        const res = await tx
          .updateTable('accounts')
          .set({ tier: 'account', email: e, password_hash: hash })
          .where('id', '=', accountId)
          .where('tier', '=', 'anonymous')
          .executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) throw new ServiceError('invalid_request', 'the account already has an email; only anonymous accounts can be upgraded');
        await this.raiseAllowance(tx, accountId, this.opts.freeCalls.account);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ServiceError('email_taken', 'an account with this email already exists');
      throw err;
    }
    return this.getAccount(accountId);
  }

  // Allowances are totals per tier, so moving up a tier never takes calls away.
  private async raiseAllowance(tx: Kysely<Database>, accountId: string, total: number): Promise<void> {
    await tx
      .updateTable('usage')
      .set((eb) => ({ allowance: eb.fn<number>(this.dialect === 'sqlite' ? 'max' : 'greatest', [eb.ref('allowance'), eb.val(total)]) }))
      .where('account_id', '=', accountId)
      .execute();
  }

  async saveCard(accountId: string, paymentMethod: unknown): Promise<AccountView> {
    if (typeof paymentMethod !== 'string') throw new ServiceError('invalid_request', 'payment_method is required');
    checkPaymentMethodToken(paymentMethod);
    const row = await this.row(accountId);
    if (row.tier === 'anonymous') throw new ServiceError('invalid_request', 'add an email and password before saving a card');
    const saved = await this.opts.billing.saveCard({ accountId, customerId: row.billing_customer_id, paymentMethod });
    await this.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('accounts')
        .set({ tier: 'card', billing_customer_id: saved.customerId, card_payment_method: saved.paymentMethodId, card_brand: saved.brand, card_last4: saved.last4 })
        .where('id', '=', accountId)
        .execute();
      await this.raiseAllowance(tx, accountId, this.opts.freeCalls.card);
    });
    return this.getAccount(accountId);
  }

  /** Operators disable an account; its keys and sessions stop working. */
  async setStatus(accountId: string, status: 'active' | 'disabled'): Promise<void> {
    await this.db.updateTable('accounts').set({ status }).where('id', '=', accountId).execute();
  }

  // ---- sessions -----------------------------------------------------------------------------------

  private async createSession(accountId: string): Promise<string> {
    const token = randomSecret(SESSION_PREFIX);
    const t = Date.now();
    // Expired sessions are useless; dropping them here keeps the table from growing without a cron.
    await this.db.deleteFrom('sessions').where('expires_at', '<=', new Date(t).toISOString()).execute();
    await this.db
      .insertInto('sessions')
      .values({ id: randomUUID(), account_id: accountId, token_hash: sha256(token), created_at: new Date(t).toISOString(), expires_at: new Date(t + this.sessionTtlMs).toISOString() })
      .execute();
    return token;
  }

  /** The account behind a session token, or null for an unknown, expired or disabled one. */
  async sessionAccount(token: string): Promise<string | null> {
    if (!token.startsWith(SESSION_PREFIX) || token.length > 200) return null;
    const hash = sha256(token);
    const row = await this.db
      .selectFrom('sessions')
      .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
      .select(['sessions.account_id', 'sessions.token_hash', 'sessions.expires_at', 'accounts.status'])
      .where('sessions.token_hash', '=', hash)
      .executeTakeFirst();
    if (!row || !hashesEqual(row.token_hash, hash) || row.expires_at <= now() || row.status !== 'active') return null;
    return row.account_id;
  }

  async logout(token: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('token_hash', '=', sha256(token)).execute();
  }

  // ---- keys ---------------------------------------------------------------------------------------

  async createKey(accountId: string, kind: KeyKind, name: unknown): Promise<CreatedKey> {
    const keyName = checkKeyName(name);
    const row = await this.row(accountId);
    const limit = this.keyLimits[row.tier];
    const { n } = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('account_id', '=', accountId)
      .where('kind', '=', kind)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(n) >= limit) {
      const hint = row.tier === 'anonymous' ? '; add an email and password to the account for more' : '; revoke one first';
      throw new ServiceError('key_limit_reached', `this account may hold ${limit} active ${KIND_NAME[kind]} key${limit === 1 ? '' : 's'}${hint}`);
    }
    const { secret, prefix, hash } = newApiKey(kind);
    const key: ApiKeysTable = {
      id: randomUUID(),
      account_id: accountId,
      kind,
      name: keyName,
      prefix,
      secret_hash: hash,
      created_at: now(),
      last_used_at: null,
      revoked_at: null,
    };
    await this.db.insertInto('api_keys').values(key).execute();
    return { id: key.id, name: key.name, prefix: key.prefix, key: secret, created_at: key.created_at };
  }

  async listKeys(accountId: string, kind: KeyKind): Promise<KeyView[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .select(['id', 'name', 'prefix', 'created_at', 'last_used_at', 'revoked_at'])
      .where('account_id', '=', accountId)
      .where('kind', '=', kind)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ ...r }));
  }

  async revokeKey(accountId: string, kind: KeyKind, keyId: string): Promise<void> {
    const row = await this.db
      .selectFrom('api_keys')
      .select(['id', 'revoked_at'])
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .where('kind', '=', kind)
      .executeTakeFirst();
    if (!row) throw new ServiceError('not_found', `no ${KIND_NAME[kind]} key with this id on this account`);
    if (row.revoked_at === null) {
      await this.db.updateTable('api_keys').set({ revoked_at: now() }).where('id', '=', keyId).where('revoked_at', 'is', null).execute();
    }
  }

  // ---- AccountsPort ---------------------------------------------------------------------------------

  async authenticate(secret: string, expected: KeyKind): Promise<AuthenticatedKey> {
    const expects = `this endpoint expects ${expected === 'mcp' ? 'an MCP' : 'a REST'} key (${KEY_PREFIX[expected]}…)`;
    const claimed = typeof secret === 'string' && secret.length <= 200 ? kindOf(secret) : null;
    if (claimed === null) throw new ServiceError('invalid_api_key', `the API key is not valid; ${expects}`);
    const hash = sha256(secret);
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select(['api_keys.id', 'api_keys.account_id', 'api_keys.kind', 'api_keys.secret_hash', 'api_keys.revoked_at', 'accounts.tier', 'accounts.status'])
      .where('api_keys.secret_hash', '=', hash)
      .executeTakeFirst();
    // A revoked key answers exactly as a key that never existed: nothing tells a holder of a leaked
    // key that it was real (the wrong-kind hint below is only for live keys).
    if (!row || !hashesEqual(row.secret_hash, hash) || row.revoked_at !== null) throw new ServiceError('invalid_api_key', 'the API key is not valid');
    if (row.kind !== expected) {
      throw new ServiceError('invalid_api_key', `this is ${row.kind === 'mcp' ? 'an MCP' : 'a REST'} key; ${expects}`);
    }
    if (row.status !== 'active') throw new ServiceError('account_inactive', 'the account is disabled');
    await this.touch(row.id);
    return { accountId: row.account_id, keyId: row.id, kind: row.kind, tier: row.tier };
  }

  /** Records a key's use, at most once per LAST_USED_RESOLUTION_MS per key in this process. */
  private async touch(keyId: string): Promise<void> {
    const t = this.clock();
    const last = this.lastUsedWritten.get(keyId);
    if (last !== undefined && t - last < LAST_USED_RESOLUTION_MS) return;
    if (this.lastUsedWritten.size >= LAST_USED_TRACKED) {
      for (const [id, at] of this.lastUsedWritten) if (t - at >= LAST_USED_RESOLUTION_MS) this.lastUsedWritten.delete(id);
      if (this.lastUsedWritten.size >= LAST_USED_TRACKED) this.lastUsedWritten.clear();
    }
    this.lastUsedWritten.set(keyId, t);
    await this.db.updateTable('api_keys').set({ last_used_at: new Date(t).toISOString() }).where('id', '=', keyId).execute();
  }

  private async tierOf(accountId: string): Promise<Tier> {
    const row = await this.db.selectFrom('accounts').select('tier').where('id', '=', accountId).executeTakeFirst();
    return row?.tier ?? 'anonymous';
  }

  /** What raises this account's allowance, with the configured totals; nothing for the top tier. */
  private upgradeHint(tier: Tier): string {
    const { account, card } = this.opts.freeCalls;
    if (tier === 'anonymous') return `add an email and password (${account} in total) or then a card (${card} in total) in the console`;
    if (tier === 'account') return `save a card in the console (${card} in total)`;
    return 'ask the operator for more';
  }

  /**
   * One conditional UPDATE: the database row lock serialises concurrent calls (PostgreSQL re-checks
   * the WHERE clause after waiting; SQLite has a single writer), so N parallel consumes against M
   * remaining succeed exactly min(N, M) times.
   */
  async consume(accountId: string): Promise<FreeCalls> {
    const row = await this.db
      .updateTable('usage')
      .set((eb) => ({ consumed: eb('consumed', '+', 1) }))
      .where('account_id', '=', accountId)
      .whereRef('consumed', '<', 'allowance')
      .returning(['allowance', 'consumed'])
      .executeTakeFirst();
    if (!row) {
      const usage = await this.db.selectFrom('usage').select(['allowance', 'consumed']).where('account_id', '=', accountId).executeTakeFirst();
      const total = Number(usage?.allowance ?? 0);
      throw new ServiceError(
        'insufficient_credits',
        `all ${total} free calls of this account are used; ${this.upgradeHint(await this.tierOf(accountId))}`,
      );
    }
    const total = Number(row.allowance);
    const used = Number(row.consumed);
    return { total, used, remaining: Math.max(0, total - used) };
  }

  async refund(accountId: string): Promise<void> {
    await this.db
      .updateTable('usage')
      .set((eb) => ({ consumed: eb('consumed', '-', 1) }))
      .where('account_id', '=', accountId)
      .where('consumed', '>', 0)
      .execute();
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}
