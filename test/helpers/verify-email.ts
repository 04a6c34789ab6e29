/**
 * Follows an account's pending verification link without a mailbox: the token is signed with the key
 * the store keeps for it, as the mailed link is (src/accounts/email-verification.ts). Tests about other
 * things use it to reach the account allowance; test/email-verification.test.ts reads the real mail.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AccountsStore, AccountView } from '../../src/accounts/index.js';
import { signToken } from '../../src/accounts/email-verification.js';

export async function verifyEmailOf(store: AccountsStore, accountId: string): Promise<AccountView> {
  const pending = await store.db.selectFrom('email_verifications').selectAll().where('account_id', '=', accountId).executeTakeFirstOrThrow();
  return store.verifyEmail(signToken(pending.signing_key, accountId, pending.email, Date.parse(pending.expires_at)));
}

/** The verification token in the newest mail the file mailer wrote to `to` (DATA_DIR/outbox), or null. */
export function mailedToken(dataDir: string, to: string): string | null {
  const dir = join(dataDir, 'outbox');
  if (!existsSync(dir)) return null;
  const mails = readdirSync(dir).filter((f) => f.endsWith('.eml')).sort().reverse();
  for (const f of mails) {
    const text = readFileSync(join(dir, f), 'utf8');
    if (!text.includes(`\r\nTo: ${to}\r\n`)) continue;
    const m = /\/verify-email\?token=([A-Za-z0-9._-]+)/.exec(text);
    if (m) return m[1]!;
  }
  return null;
}
