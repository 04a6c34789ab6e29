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

export interface LoginFailuresTable {
  id: Generated<number>;
  email_hash: string;
  created_at: string;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  usage: UsageTable;
  sessions: SessionsTable;
  signup_events: SignupEventsTable;
  login_failures: LoginFailuresTable;
}
