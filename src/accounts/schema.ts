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
}

export interface SignupEventsTable {
  id: Generated<number>;
  address_hash: string;
  created_at: string;
}

/** One throttling budget: an (email, address) streak or an address's hourly window (login-throttle.ts). */
export interface LoginThrottleTable {
  key_hash: string;
  failures: number;
  window_started_at: string;
  blocked_until: string;
  updated_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  sessions: SessionsTable;
  signup_events: SignupEventsTable;
  login_throttle: LoginThrottleTable;
}
