/** Row types of the accounts database, shared by both dialects (timestamps are ISO-8601 UTC text). */
import type { Generated } from 'kysely';

export interface AccountsTable {
  id: string;
  tier: 'anonymous' | 'account' | 'card';
  email: string | null;
  password_hash: string | null;
  status: 'active' | 'disabled';
  billing_customer_id: string | null;
  card_payment_method: string | null;
  card_brand: string | null;
  card_last4: string | null;
  /** SHA-256 of the provider's card fingerprint: one card gives the card allowance to a bounded number of accounts. */
  card_fingerprint: string | null;
  /** When the email was verified (null: never; the account then has the anonymous allowance). */
  email_verified_at: string | null;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  kind: 'rest' | 'mcp';
  name: string;
  prefix: string;
  secret_hash: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface UsageTable {
  account_id: string;
  allowance: number;
  consumed: number;
}

export interface SessionsTable {
  id: string;
  account_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  /** Last use, written at most once a minute; a session idle for FACECOMPUTE_SESSION_IDLE_MS ends. */
  last_seen_at: string | null;
}

/** One counted attempt in a sliding window (attempt-window.ts): signups, card attempts, verification mails. */
export interface AttemptEventsTable {
  id: Generated<number>;
  bucket: string;
  key_hash: string;
  created_at: string;
}

/** The pending verification of an account's email: the key its link is signed with (email-verification.ts). */
export interface EmailVerificationsTable {
  account_id: string;
  email: string;
  signing_key: string;
  expires_at: string;
}

/** One throttling budget: an (email, address) streak or an address's hourly window (login-throttle.ts). */
export interface LoginThrottleTable {
  key_hash: string;
  failures: number;
  window_started_at: string;
  blocked_until: string;
  updated_at: string;
}

/** Usage outcome of one request: the free call kept, given back, or never taken. */
export type UsageOutcome = 'charged' | 'refunded' | 'not_charged';

/** Requests of one account, UTC day, key, route, outcome and status class ('2xx', '4xx', '5xx'). */
export interface UsageDailyTable {
  account_id: string;
  day: string;
  /** '' for a request without a key of its own (none today: every recorded request has one). */
  key_id: string;
  route: string;
  outcome: UsageOutcome;
  status_class: string;
  calls: number;
}

/** One recent request of an account: what the Usage page lists. Never a body, image or embedding. */
export interface UsageRecentTable {
  id: Generated<number>;
  account_id: string;
  key_id: string | null;
  surface: 'rest' | 'mcp';
  route: string;
  status: number;
  error: string | null;
  outcome: UsageOutcome;
  duration_ms: number;
  request_id: string;
  created_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  sessions: SessionsTable;
  attempt_events: AttemptEventsTable;
  email_verifications: EmailVerificationsTable;
  login_throttle: LoginThrottleTable;
  usage_daily: UsageDailyTable;
  usage_recent: UsageRecentTable;
}
