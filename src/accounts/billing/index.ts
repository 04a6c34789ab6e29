import type { Config } from '../../config/index.js';
import type { BillingProvider } from './provider.js';
import { StripeBillingProvider } from './stripe.js';
import { TestBillingProvider } from './test-provider.js';

export { type BillingProvider, type CardDetails, type SavedCard, type SaveCardInput, checkPaymentMethodToken } from './provider.js';
export { StripeBillingProvider } from './stripe.js';
export { TestBillingProvider, TEST_PAYMENT_METHODS } from './test-provider.js';

export function createBillingProvider(accounts: Config['accounts']): BillingProvider {
  return accounts.billingProvider === 'stripe'
    ? new StripeBillingProvider({ apiBase: accounts.stripeApiBase, secretKey: accounts.stripeSecretKey })
    : new TestBillingProvider();
}
