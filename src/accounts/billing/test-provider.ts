/**
 * The development default: no network, and Stripe's documented test payment methods behave as they
 * do in Stripe's test mode (https://docs.stripe.com/testing#cards). Any other token is declined.
 */
import { randomBytes } from 'node:crypto';
import { ServiceError } from '../../errors/index.js';
import type { BillingProvider, CardDetails, SaveCardInput, SavedCard } from './provider.js';

const ACCEPTED: Record<string, { brand: string; last4: string }> = {
  pm_card_visa: { brand: 'visa', last4: '4242' },
  pm_card_visa_debit: { brand: 'visa', last4: '5556' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444' },
  pm_card_mastercard_debit: { brand: 'mastercard', last4: '8210' },
  pm_card_mastercard_prepaid: { brand: 'mastercard', last4: '5100' },
  pm_card_amex: { brand: 'amex', last4: '8431' },
  pm_card_discover: { brand: 'discover', last4: '1117' },
  pm_card_diners: { brand: 'diners', last4: '0004' },
  pm_card_jcb: { brand: 'jcb', last4: '0505' },
  pm_card_unionpay: { brand: 'unionpay', last4: '0005' },
};

export const TEST_PAYMENT_METHODS = Object.keys(ACCEPTED);

export class TestBillingProvider implements BillingProvider {
  readonly name = 'test';

  /** Each test card is one card: its fingerprint is its brand and last four digits. */
  async inspect(paymentMethod: string): Promise<CardDetails> {
    const card = ACCEPTED[paymentMethod];
    return card ? { ...card, fingerprint: `test_${card.brand}_${card.last4}` } : { brand: null, last4: null, fingerprint: null };
  }

  async saveCard(input: SaveCardInput): Promise<SavedCard> {
    if (!ACCEPTED[input.paymentMethod]) {
      throw new ServiceError('payment_method_declined', 'the card was declined; in test mode use one of Stripe\'s test payment methods such as pm_card_visa', { cause: { code: 'card_declined', decline_code: 'test_mode_unknown_card' } });
    }
    return { customerId: input.customerId ?? `cus_test_${randomBytes(9).toString('base64url')}`, paymentMethodId: input.paymentMethod };
  }
}
