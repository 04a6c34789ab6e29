/**
 * What the gateway and the MCP endpoint need from the accounts store, and nothing more. The real
 * store (SQLite or PostgreSQL) implements it; tests may use an in-memory implementation.
 */
export type KeyKind = 'rest' | 'mcp';
export type Tier = 'anonymous' | 'account' | 'card';

export interface AuthenticatedKey {
  accountId: string;
  keyId: string;
  kind: KeyKind;
  tier: Tier;
}

export interface KeyAuthenticator {
  /**
   * Resolves a presented secret to its key. Throws ServiceError `invalid_api_key` for an unknown or
   * revoked key (the same detail for both) or a live key of the other kind (the detail names the kind
   * expected here), and `account_inactive` for a disabled account. Updates the key's last_used_at.
   */
  authenticate(secret: string, expected: KeyKind): Promise<AuthenticatedKey>;
}

/** The free calls in total of each tier, as configured (FACECOMPUTE_FREE_CALLS_*). */
export type FreeCallLimits = Record<Tier, number>;

export interface FreeCalls {
  total: number;
  used: number;
  remaining: number;
}

export interface Allowance {
  /** Consumes one free call atomically; throws ServiceError `insufficient_credits` when none is left. */
  consume(accountId: string): Promise<FreeCalls>;
  /** Gives back a call consumed by a request that then failed on our side (5xx). */
  refund(accountId: string): Promise<void>;
}

export interface AccountsPort extends KeyAuthenticator, Allowance {
  close(): Promise<void>;
  /** Throws when the database cannot be reached (readiness); in-memory test stores have none. */
  ping?(): Promise<void>;
}
