/**
 * The accounts store: accounts, REST and MCP keys, free-call usage and console sessions, over one
 * Kysely query layer for SQLite and PostgreSQL. It implements AccountsPort for the gateway and the
 * MCP endpoint, plus what the console needs.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { ServiceError } from '../errors/index.js';
import type { AccountsPort, AuthenticatedKey, FreeCallLimits, FreeCalls, KeyKind, Tier } from './api.js';
import type { AccountsTable, ApiKeysTable, Database } from './schema.js';
import type { Dialect } from './db.js';
import { KEY_PREFIX, SESSION_PREFIX, hashesEqual, kindOf, newApiKey, randomSecret, sha256 } from './secrets.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { checkKeyName, checkPassword, normalizeEmail } from './validation.js';
import { checkPaymentMethodToken, type BillingProvider } from './billing/index.js';
import { LoginThrottle, addressKey, addressPrefix, type LoginThrottleOptions } from './login-throttle.js';
import { AttemptWindow } from './attempt-window.js';
import type { Mailer } from './mail/mailer.js';
import { newSigningKey, parseToken, signToken, tokenMatches } from './email-verification.js';

export interface AccountView {
  id: string;
  tier: Tier;
  email: string | null;
  /** False until the email's verification link is followed; the allowance is the anonymous one till then. */
  email_verified: boolean;
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

/** Where a warning goes (a pino logger); the decline codes of refused cards are logged, never answered. */
export interface StoreLog {
  warn(obj: object, msg: string): void;
}

export interface StoreOptions {
  freeCalls: FreeCallLimits;
  signupRateLimit: number;
  /** Email signups per client address per hour. */
  emailSignupRateLimit?: number;
  /** Signups of either kind per IPv6 /48 per hour (FACECOMPUTE_SIGNUP_RATE_LIMIT_PER_48); unset: 4 × signupRateLimit. */
  signupRateLimitPer48?: number;
  login: LoginThrottleOptions;
  billing: BillingProvider;
  /** Sends verification mails; without one, signups with an email cannot be verified (tests of other things). */
  mailer?: Mailer;
  /** The console's public URL, for the verification link. */
  publicConsoleUrl?: string;
  emailVerifyTtlMs?: number;
  card?: { accountsPerFingerprint: number; attemptsPerAccount: number; attemptsPerAddress: number };
  sessionIdleMs?: number;
  log?: StoreLog;
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
const DAY_MS = 24 * HOUR_MS;
/** A session's last_seen_at is written at most this often (idle expiry is hours, not seconds). */
const SESSION_TOUCH_MS = 60_000;
/** Verification mails one account may have sent per hour (each replaces the previous link). */
const VERIFY_MAILS_PER_HOUR = 3;

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
  private readonly attempts: AttemptWindow;
  private readonly sessionIdleMs: number;
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
    this.attempts = new AttemptWindow(db, this.clock);
    this.sessionIdleMs = opts.sessionIdleMs ?? DAY_MS;
  }

  /**
   * The tier whose limits apply: an account whose email is not verified yet has the anonymous
   * allowance and key limits, so that a made-up address buys nothing an agent signup does not.
   */
  private effectiveTier(row: Pick<AccountsTable, 'tier' | 'email_verified_at'>): Tier {
    return row.tier !== 'anonymous' && row.email_verified_at === null ? 'anonymous' : row.tier;
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
      email_verified: row.email !== null && row.email_verified_at !== null,
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
      card_fingerprint: null,
      email_verified_at: null,
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
        await tx.insertInto('usage').values({ account_id: row.id, allowance: this.opts.freeCalls[this.effectiveTier(row)], consumed: 0 }).execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ServiceError('email_taken', 'an account with this email already exists');
      throw err;
    }
    return row;
  }

  /**
   * One call, no email: an active account with the anonymous allowance. Limited per client address
   * per hour, an IPv6 client by its /64 (what one subscriber is routed: rotating addresses inside it
   * must not buy more accounts).
   */
  async signupAnonymous(clientAddress: string): Promise<SessionResult> {
    const limit = this.opts.signupRateLimit;
    await this.attempts.enforce({ bucket: 'signup-anonymous', limit, windowMs: HOUR_MS }, addressKey(clientAddress), 'signup_rate_limited', `at most ${limit} anonymous signups per hour from one address; try again later or sign up with an email`);
    await this.enforceSite(clientAddress);
    const row = await this.insertAccount('anonymous', null, null);
    return { account: await this.view(row), session_token: await this.createSession(row.id) };
  }

  /**
   * Email and password: active at once with the anonymous allowance and key limits, raised to the
   * account allowance when the link mailed to the address is followed (verifyEmail). Limited per
   * client address per hour, like anonymous signups.
   */
  async signup(email: unknown, password: unknown, clientAddress?: string): Promise<SessionResult> {
    const e = normalizeEmail(email);
    const p = checkPassword(password);
    const limit = this.opts.emailSignupRateLimit ?? 5;
    // The console always passes the client's address; a caller without one (an operator's tool) has no per-address budget.
    if (clientAddress !== undefined) {
      await this.attempts.enforce({ bucket: 'signup-email', limit, windowMs: HOUR_MS }, addressKey(clientAddress), 'signup_rate_limited', `at most ${limit} signups per hour from one address; try again later`);
      await this.enforceSite(clientAddress);
    }
    const row = await this.insertAccount('account', e, await hashPassword(p));
    await this.sendVerification(row.id, e);
    return { account: await this.view(row), session_token: await this.createSession(row.id) };
  }

  /**
   * Signups of both kinds per IPv6 /48 per hour, beside the per-/64 ones: one site's /48 holds 65,536
   * /64s. IPv4 addresses are limited whole already.
   */
  private async enforceSite(clientAddress: string): Promise<void> {
    const site = addressPrefix(clientAddress, 48);
    if (!site.endsWith('/48')) return;
    const limit = this.opts.signupRateLimitPer48 ?? 4 * this.opts.signupRateLimit;
    await this.attempts.enforce({ bucket: 'signup-site', limit, windowMs: HOUR_MS }, site, 'signup_rate_limited', `at most ${limit} signups per hour from one IPv6 /48; try again later`);
  }

  // ---- email verification -------------------------------------------------------------------------

  /** A new signing key (earlier links stop working) and the mail with the link. */
  private async sendVerification(accountId: string, email: string): Promise<void> {
    const mailer = this.opts.mailer;
    if (!mailer) return;
    const key = newSigningKey();
    const expiresAt = this.clock() + (this.opts.emailVerifyTtlMs ?? DAY_MS);
    const values = { account_id: accountId, email, signing_key: key, expires_at: new Date(expiresAt).toISOString() };
    await this.db.insertInto('email_verifications').values(values).onConflict((oc) => oc.column('account_id').doUpdateSet({ email, signing_key: key, expires_at: values.expires_at })).execute();
    const link = `${(this.opts.publicConsoleUrl ?? '').replace(/\/+$/, '')}/verify-email?token=${signToken(key, accountId, email, expiresAt)}`;
    const hours = Math.round((this.opts.emailVerifyTtlMs ?? DAY_MS) / HOUR_MS);
    await mailer.send({
      to: email,
      subject: 'Verify your email for facecompute',
      text: `Follow this link to verify ${email} and raise your account to ${this.opts.freeCalls.account} free calls in total:\n\n${link}\n\nThe link works for ${hours} hour${hours === 1 ? '' : 's'}. If you did not sign up for facecompute, ignore this mail.\n`,
    });
  }

  /** Mails a new link (the old ones stop working); at most VERIFY_MAILS_PER_HOUR an hour per account. */
  async resendVerification(accountId: string): Promise<void> {
    const row = await this.row(accountId);
    if (row.email === null) throw new ServiceError('invalid_request', 'the account has no email; add one first');
    if (row.email_verified_at !== null) throw new ServiceError('invalid_request', 'the email is already verified');
    await this.attempts.enforce({ bucket: 'verify-mail', limit: VERIFY_MAILS_PER_HOUR, windowMs: HOUR_MS }, accountId, 'rate_limited', `at most ${VERIFY_MAILS_PER_HOUR} verification mails an hour; use the newest`);
    await this.sendVerification(accountId, row.email);
  }

  /** Follows a verification link: the email is verified and the account allowance applies. */
  async verifyEmail(token: unknown): Promise<AccountView> {
    const invalid = () => new ServiceError('invalid_request', 'the verification link is not valid or has expired; ask for a new one on the account page');
    const t = parseToken(token);
    if (!t) throw invalid();
    const pending = await this.db.selectFrom('email_verifications').selectAll().where('account_id', '=', t.accountId).executeTakeFirst();
    if (!pending || !tokenMatches(t, pending.signing_key, pending.email) || t.expiresAt <= this.clock() || Date.parse(pending.expires_at) <= this.clock()) throw invalid();
    await this.db.transaction().execute(async (tx) => {
      const res = await tx
        .updateTable('accounts')
        .set({ email_verified_at: new Date(this.clock()).toISOString() })
        .where('id', '=', t.accountId)
        .where('email', '=', pending.email)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw invalid();
      await tx.deleteFrom('email_verifications').where('account_id', '=', t.accountId).execute();
      const row = await tx.selectFrom('accounts').select(['tier', 'email_verified_at']).where('id', '=', t.accountId).executeTakeFirstOrThrow();
      await this.raiseAllowance(tx, t.accountId, this.opts.freeCalls[this.effectiveTier(row)]);
    });
    return this.getAccount(t.accountId);
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

  /**
   * Anonymous to real account: email and password added; keys and usage kept. The allowance is raised
   * when the email is verified (the link mailed now). Every other session of the account ends: a
   * session token an agent held before (and may have leaked) must not outlive the new password.
   */
  async upgrade(accountId: string, email: unknown, password: unknown, currentSessionToken: string | null = null): Promise<AccountView> {
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
        let others = tx.deleteFrom('sessions').where('account_id', '=', accountId);
        if (currentSessionToken !== null) others = others.where('token_hash', '!=', sha256(currentSessionToken));
        await others.execute();
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ServiceError('email_taken', 'an account with this email already exists');
      throw err;
    }
    await this.sendVerification(accountId, e);
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

  /**
   * Saves a card and gives the card allowance. A card-testing tool must find nothing here: attempts
   * are limited per account and per client address (accepted or declined alike), every refusal by
   * the provider is the same `payment_method_declined` (its decline code goes to the log only), and
   * one card (the provider's fingerprint, whatever the token) backs the card allowance of at most
   * FACECOMPUTE_CARD_ACCOUNTS_PER_FINGERPRINT accounts.
   */
  async saveCard(accountId: string, paymentMethod: unknown, clientAddress?: string): Promise<AccountView> {
    if (typeof paymentMethod !== 'string') throw new ServiceError('invalid_request', 'payment_method is required');
    checkPaymentMethodToken(paymentMethod);
    const row = await this.row(accountId);
    if (row.tier === 'anonymous') throw new ServiceError('invalid_request', 'add an email and password before saving a card');
    if (row.email_verified_at === null) throw new ServiceError('invalid_request', 'verify your email before saving a card (follow the link we mailed, or send a new one from the account page)');
    const card = this.opts.card ?? { accountsPerFingerprint: 1, attemptsPerAccount: 5, attemptsPerAddress: 10 };
    const tooMany = 'too many attempts to save a card; try again later';
    await this.attempts.enforce({ bucket: 'card-account', limit: card.attemptsPerAccount, windowMs: DAY_MS }, accountId, 'rate_limited', tooMany);
    if (clientAddress !== undefined) await this.attempts.enforce({ bucket: 'card-address', limit: card.attemptsPerAddress, windowMs: DAY_MS }, addressKey(clientAddress), 'rate_limited', tooMany);
    const billing = this.opts.billing;
    try {
      const details = await billing.inspect(paymentMethod);
      const fingerprint = details.fingerprint === null ? null : sha256(`card:${details.fingerprint}`);
      if (fingerprint !== null) {
        const { n } = await this.db
          .selectFrom('accounts')
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .where('card_fingerprint', '=', fingerprint)
          .where('id', '!=', accountId)
          .executeTakeFirstOrThrow();
        if (Number(n) >= card.accountsPerFingerprint) {
          throw new ServiceError('card_in_use', `this card already backs the card allowance of ${card.accountsPerFingerprint === 1 ? 'another account' : `${card.accountsPerFingerprint} other accounts`}; use another card`);
        }
      }
      const saved = await billing.saveCard({ accountId, customerId: row.billing_customer_id, paymentMethod });
      await this.db.transaction().execute(async (tx) => {
        await tx
          .updateTable('accounts')
          .set({ tier: 'card', billing_customer_id: saved.customerId, card_payment_method: saved.paymentMethodId, card_brand: details.brand, card_last4: details.last4, card_fingerprint: fingerprint })
          .where('id', '=', accountId)
          .execute();
        await this.raiseAllowance(tx, accountId, this.opts.freeCalls.card);
      });
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'payment_method_declined') {
        this.opts.log?.warn({ accountId, provider: billing.name, decline: err.cause }, 'card declined');
        throw new ServiceError('payment_method_declined', 'the card was declined');
      }
      throw err;
    }
    return this.getAccount(accountId);
  }

  /**
   * The provider says a card no longer backs an account (a signed webhook: the payment method was
   * detached, or the customer deleted): the account goes back to the account tier and its allowance.
   */
  async cardRemoved(by: { paymentMethod: string } | { customer: string }): Promise<number> {
    const rows = await this.db
      .selectFrom('accounts')
      .select('id')
      .where('tier', '=', 'card')
      .where('paymentMethod' in by ? 'card_payment_method' : 'billing_customer_id', '=', 'paymentMethod' in by ? by.paymentMethod : by.customer)
      .execute();
    for (const { id } of rows) {
      await this.db.transaction().execute(async (tx) => {
        await tx.updateTable('accounts').set({ tier: 'account', card_payment_method: null, card_brand: null, card_last4: null, card_fingerprint: null }).where('id', '=', id).execute();
        await tx.updateTable('usage').set({ allowance: this.opts.freeCalls.account }).where('account_id', '=', id).execute();
      });
    }
    return rows.length;
  }

  /** Operators disable an account; its keys and sessions stop working. */
  async setStatus(accountId: string, status: 'active' | 'disabled'): Promise<void> {
    await this.db.updateTable('accounts').set({ status }).where('id', '=', accountId).execute();
  }

  // ---- sessions -----------------------------------------------------------------------------------

  private async createSession(accountId: string): Promise<string> {
    const token = randomSecret(SESSION_PREFIX);
    const t = this.clock();
    // Expired sessions are useless; dropping them here keeps the table from growing without a cron.
    await this.db.deleteFrom('sessions').where('expires_at', '<=', new Date(t).toISOString()).execute();
    await this.db
      .insertInto('sessions')
      .values({ id: randomUUID(), account_id: accountId, token_hash: sha256(token), created_at: new Date(t).toISOString(), expires_at: new Date(t + this.sessionTtlMs).toISOString(), last_seen_at: new Date(t).toISOString() })
      .execute();
    return token;
  }

  /**
   * The account behind a session token, or null for an unknown, expired, idle or disabled one. A
   * session unused for FACECOMPUTE_SESSION_IDLE_MS ends (and is deleted); a use moves last_seen_at,
   * written at most once a minute.
   */
  async sessionAccount(token: string): Promise<string | null> {
    if (!token.startsWith(SESSION_PREFIX) || token.length > 200) return null;
    const hash = sha256(token);
    const row = await this.db
      .selectFrom('sessions')
      .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
      .select(['sessions.id', 'sessions.account_id', 'sessions.token_hash', 'sessions.expires_at', 'sessions.created_at', 'sessions.last_seen_at', 'accounts.status'])
      .where('sessions.token_hash', '=', hash)
      .executeTakeFirst();
    const t = this.clock();
    if (!row || !hashesEqual(row.token_hash, hash) || Date.parse(row.expires_at) <= t || row.status !== 'active') return null;
    const seen = Date.parse(row.last_seen_at ?? row.created_at);
    if (t - seen >= this.sessionIdleMs) {
      await this.db.deleteFrom('sessions').where('id', '=', row.id).execute();
      return null;
    }
    if (t - seen >= SESSION_TOUCH_MS) await this.db.updateTable('sessions').set({ last_seen_at: new Date(t).toISOString() }).where('id', '=', row.id).execute();
    return row.account_id;
  }

  async logout(token: string): Promise<void> {
    await this.db.deleteFrom('sessions').where('token_hash', '=', sha256(token)).execute();
  }

  // ---- keys ---------------------------------------------------------------------------------------

  async createKey(accountId: string, kind: KeyKind, name: unknown): Promise<CreatedKey> {
    const keyName = checkKeyName(name);
    const row = await this.row(accountId);
    const limit = this.keyLimits[this.effectiveTier(row)];
    const { n } = await this.db
      .selectFrom('api_keys')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('account_id', '=', accountId)
      .where('kind', '=', kind)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(n) >= limit) {
      const hint = row.tier === 'anonymous' ? '; add an email and password to the account for more' : row.email_verified_at === null ? '; verify the account\'s email for more' : '; revoke one first';
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

  private async hintFor(accountId: string): Promise<string> {
    const row = await this.db.selectFrom('accounts').select(['tier', 'email_verified_at']).where('id', '=', accountId).executeTakeFirst();
    if (row && row.tier !== 'anonymous' && row.email_verified_at === null) return `verify the account's email (the link we mailed) for ${this.opts.freeCalls.account} in total`;
    return this.upgradeHint(row?.tier ?? 'anonymous');
  }

  /** What raises this account's allowance, with the configured totals; nothing for the top tier. */
  private upgradeHint(tier: Tier): string {
    const { account, card } = this.opts.freeCalls;
    if (tier === 'anonymous') return `add and verify an email (${account} in total), then a card (${card} in total) in the console`;
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
        `all ${total} free calls of this account are used; ${await this.hintFor(accountId)}`,
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
