/** In-memory AccountsPort for tests only. */
import { ServiceError } from '../../src/errors/index.js';
import type { AccountsPort, AuthenticatedKey, FreeCalls, KeyKind, Tier } from '../../src/accounts/api.js';

export interface TestKey {
  key: string;
  accountId: string;
  kind: KeyKind;
  tier?: Tier;
  credits?: number;
  disabled?: boolean;
}

export class MemoryAccounts implements AccountsPort {
  readonly used = new Map<string, number>();
  readonly total = new Map<string, number>();
  readonly disabled = new Set<string>();
  readonly refunds: string[] = [];
  private readonly keys = new Map<string, TestKey>();

  constructor(keys: TestKey[]) {
    for (const k of keys) {
      this.keys.set(k.key, k);
      if (!this.total.has(k.accountId)) this.total.set(k.accountId, k.credits ?? 1_000_000);
      if (k.disabled) this.disabled.add(k.accountId);
    }
  }

  async authenticate(secret: string, expected: KeyKind): Promise<AuthenticatedKey> {
    const k = this.keys.get(secret);
    if (!k) throw new ServiceError('invalid_api_key', 'unknown or revoked API key');
    if (k.kind !== expected) throw new ServiceError('invalid_api_key', `this is not a ${expected === 'rest' ? 'REST' : 'MCP'} key`);
    if (this.disabled.has(k.accountId)) throw new ServiceError('account_inactive', 'the account is disabled');
    return { accountId: k.accountId, keyId: k.key.slice(0, 8), kind: k.kind, tier: k.tier ?? 'account' };
  }

  async consume(accountId: string): Promise<FreeCalls> {
    const total = this.total.get(accountId) ?? 0;
    const used = this.used.get(accountId) ?? 0;
    if (used >= total) throw new ServiceError('insufficient_credits', 'the free calls of this account are used up');
    this.used.set(accountId, used + 1);
    return { total, used: used + 1, remaining: total - used - 1 };
  }

  async refund(accountId: string): Promise<void> {
    this.refunds.push(accountId);
    this.used.set(accountId, Math.max(0, (this.used.get(accountId) ?? 0) - 1));
  }

  async close(): Promise<void> {}
}
