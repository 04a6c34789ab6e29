/**
 * Stripe: a Customer per account and a confirmed off-session SetupIntent for the payment method,
 * over Stripe's form-encoded HTTP API. Stripe's own error messages stay in logs; callers get a
 * stable code.
 */
import { request } from 'undici';
import { ServiceError } from '../../errors/index.js';
import type { BillingProvider, SaveCardInput, SavedCard } from './provider.js';

export interface StripeOptions {
  apiBase: string;
  secretKey: string;
  timeoutMs?: number;
}

interface StripeError {
  error?: { type?: string; code?: string; decline_code?: string; message?: string };
}

export class StripeBillingProvider implements BillingProvider {
  readonly name = 'stripe';
  private readonly base: string;

  constructor(private readonly opts: StripeOptions) {
    this.base = opts.apiBase.replace(/\/+$/, '');
  }

  private async call(method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<any> {
    let res;
    try {
      res = await request(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.opts.secretKey}`,
          'content-type': 'application/x-www-form-urlencoded',
          'stripe-version': '2024-06-20',
        },
        ...(form ? { body: new URLSearchParams(form).toString() } : {}),
        headersTimeout: this.opts.timeoutMs ?? 15000,
        bodyTimeout: this.opts.timeoutMs ?? 15000,
      });
    } catch (err) {
      throw new ServiceError('upstream_failed', 'the payment provider could not be reached', { cause: err });
    }
    const text = await res.body.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch (err) {
      throw new ServiceError('upstream_failed', 'the payment provider sent an unreadable answer', { cause: err });
    }
    if (res.statusCode >= 400) {
      const e = (body as StripeError).error ?? {};
      if (e.type === 'card_error' || res.statusCode === 402) {
        throw new ServiceError('payment_method_declined', `the card was declined${e.decline_code ? ` (${e.decline_code})` : ''}`, { cause: e.message });
      }
      if (e.code === 'resource_missing') {
        throw new ServiceError('invalid_request', 'payment_method is not a payment method the provider knows', { cause: e.message });
      }
      throw new ServiceError('upstream_failed', 'the payment provider refused the request', { cause: `${res.statusCode} ${e.type ?? ''} ${e.message ?? ''}` });
    }
    return body;
  }

  async saveCard(input: SaveCardInput): Promise<SavedCard> {
    const customerId =
      input.customerId ?? String((await this.call('POST', '/v1/customers', { 'metadata[facecompute_account]': input.accountId })).id);
    const intent = await this.call('POST', '/v1/setup_intents', {
      customer: customerId,
      payment_method: input.paymentMethod,
      confirm: 'true',
      usage: 'off_session',
      'payment_method_types[0]': 'card',
    });
    // Only a succeeded SetupIntent means the card can be charged later; anything else (requires_action
    // for 3-D Secure, requires_payment_method after a failure) is not a usable card for an API account.
    if (intent.status !== 'succeeded') {
      throw new ServiceError('payment_method_declined', `the card could not be set up for later payments (${String(intent.status)})`);
    }
    const pm = await this.call('GET', `/v1/payment_methods/${encodeURIComponent(input.paymentMethod)}`);
    return {
      customerId,
      paymentMethodId: String(pm.id ?? input.paymentMethod),
      brand: typeof pm.card?.brand === 'string' ? pm.card.brand : null,
      last4: typeof pm.card?.last4 === 'string' ? pm.card.last4 : null,
    };
  }
}
