/**
 * Stripe: a Customer per account and a confirmed off-session SetupIntent for the payment method,
 * over Stripe's form-encoded HTTP API (https only: config.ts refuses another base but loopback).
 * Stripe's own messages and decline codes stay in `cause` (the log); callers get one stable code.
 * Every POST carries an Idempotency-Key, so a retried or concurrent request never makes a second
 * Customer or SetupIntent.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { ServiceError } from '../../errors/index.js';
import type { BillingProvider, CardDetails, SaveCardInput, SavedCard } from './provider.js';

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

  private async call(method: 'GET' | 'POST', path: string, form?: Record<string, string>, idempotencyKey?: string): Promise<any> {
    let res;
    try {
      res = await request(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.opts.secretKey}`,
          'content-type': 'application/x-www-form-urlencoded',
          'stripe-version': '2024-06-20',
          ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
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
        // One answer for every decline: which check failed (decline_code: insufficient_funds,
        // incorrect_cvc, ...) is what a card-testing tool wants to learn. The codes go to the log.
        throw new ServiceError('payment_method_declined', 'the card was declined', { cause: { code: e.code, decline_code: e.decline_code, message: e.message } });
      }
      if (e.code === 'resource_missing') {
        throw new ServiceError('invalid_request', 'payment_method is not a payment method the provider knows', { cause: e.message });
      }
      throw new ServiceError('upstream_failed', 'the payment provider refused the request', { cause: `${res.statusCode} ${e.type ?? ''} ${e.message ?? ''}` });
    }
    return body;
  }

  async inspect(paymentMethod: string): Promise<CardDetails> {
    const pm = await this.call('GET', `/v1/payment_methods/${encodeURIComponent(paymentMethod)}`);
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
    return { brand: str(pm.card?.brand), last4: str(pm.card?.last4), fingerprint: str(pm.card?.fingerprint) };
  }

  async saveCard(input: SaveCardInput): Promise<SavedCard> {
    // One Customer per account, however many attempts; one SetupIntent per (account, payment method).
    const customerId =
      input.customerId ?? String((await this.call('POST', '/v1/customers', { 'metadata[facecompute_account]': input.accountId }, `fc-customer-${input.accountId}`)).id);
    const setupKey = `fc-setup-${createHash('sha256').update(`${input.accountId}\n${customerId}\n${input.paymentMethod}`).digest('hex').slice(0, 40)}`;
    const intent = await this.call(
      'POST',
      '/v1/setup_intents',
      { customer: customerId, payment_method: input.paymentMethod, confirm: 'true', usage: 'off_session', 'payment_method_types[0]': 'card' },
      setupKey,
    );
    // Only a succeeded SetupIntent means the card can be charged later; anything else (requires_action
    // for 3-D Secure, requires_payment_method after a failure) is not a usable card for an API account.
    if (intent.status !== 'succeeded') {
      throw new ServiceError('payment_method_declined', 'the card was declined', { cause: { setup_intent_status: String(intent.status) } });
    }
    return { customerId, paymentMethodId: String(intent.payment_method ?? input.paymentMethod) };
  }
}
