/**
 * POST /api/stripe/webhook: Stripe's events about cards that back the card allowance. Only signed
 * events count (billing/stripe-webhook.ts); the body is read as text because the signature covers
 * its exact bytes. A detached payment method or a deleted customer takes the account back to the
 * account tier and allowance. Other events are acknowledged and ignored.
 */
import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../errors/index.js';
import type { AccountsStore } from '../../accounts/index.js';
import { verifySignature } from '../../accounts/billing/stripe-webhook.js';

export interface StripeWebhookOptions {
  store: AccountsStore;
  secret: string;
  now?: () => number;
}

export default async function stripeWebhookRoutes(app: FastifyInstance, opts: StripeWebhookOptions): Promise<void> {
  const now = opts.now ?? Date.now;
  // This plugin's own JSON parser keeps the raw text (the console's parses it).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.post('/api/stripe/webhook', async (req, reply) => {
    const payload = typeof req.body === 'string' ? req.body : '';
    if (!verifySignature(opts.secret, payload, req.headers['stripe-signature'], now())) {
      throw new ServiceError('invalid_request', 'the webhook signature is not valid');
    }
    let event: { type?: unknown; data?: { object?: { id?: unknown } } };
    try {
      event = JSON.parse(payload) as typeof event;
    } catch {
      throw new ServiceError('invalid_request', 'the body is not valid JSON');
    }
    const id = event.data?.object?.id;
    if (typeof id === 'string') {
      if (event.type === 'payment_method.detached') await opts.store.cardRemoved({ paymentMethod: id });
      else if (event.type === 'customer.deleted') await opts.store.cardRemoved({ customer: id });
    }
    return reply.code(200).send({ received: true });
  });
}
