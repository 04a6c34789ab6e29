/**
 * Cards are kept by a payment provider; we only ever hold its token for a payment method (never a
 * card number). A provider saves a card for later off-session use and reports what may be shown.
 */
import { ServiceError } from '../../errors/index.js';

export interface SaveCardInput {
  accountId: string;
  /** The provider's customer for this account, when one was created before. */
  customerId: string | null;
  /** A payment-method token, e.g. `pm_…`. */
  paymentMethod: string;
}

export interface SavedCard {
  customerId: string;
  paymentMethodId: string;
}

/** What the provider says of a payment method before it is used: what may be shown, and which card it is. */
export interface CardDetails {
  brand: string | null;
  last4: string | null;
  /** The same for every token of one card number (Stripe's card.fingerprint); null when unknown. */
  fingerprint: string | null;
}

export interface BillingProvider {
  readonly name: string;
  /** Reads the payment method; throws `invalid_request` for one the provider does not know. */
  inspect(paymentMethod: string): Promise<CardDetails>;
  /**
   * Saves the card for later off-session use. Throws ServiceError `payment_method_declined` when the
   * provider refuses it, with the provider's codes in `cause` (for the log, never the answer).
   */
  saveCard(input: SaveCardInput): Promise<SavedCard>;
}

const TOKEN = /^pm_[A-Za-z0-9_]{1,200}$/;

/**
 * Refuses anything that is not shaped like a payment-method token before it goes anywhere. A string
 * of digits is probably a card number: the detail says so without echoing it.
 */
export function checkPaymentMethodToken(value: string): void {
  if (/\d{12,}/.test(value.replace(/[\s-]/g, ''))) {
    throw new ServiceError('invalid_request', 'payment_method must be a payment-method token from the provider (pm_…), never a card number');
  }
  if (!TOKEN.test(value)) {
    throw new ServiceError('invalid_request', 'payment_method must be a payment-method token (pm_…)');
  }
}
