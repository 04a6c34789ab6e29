/**
 * Stripe's webhook signatures (https://docs.stripe.com/webhooks#verify-manually): the
 * `Stripe-Signature` header carries `t=<unix seconds>` and one or more `v1=<hex HMAC-SHA256>` of
 * `<t>.<raw body>` under the endpoint's signing secret. An event counts only when one v1 matches
 * (compared in constant time) and its timestamp is within the tolerance, so a captured event cannot
 * be replayed later.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_TOLERANCE_S = 300;

export function signPayload(secret: string, timestamp: number, payload: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
}

/** True when `header` signs `payload` with `secret` within the tolerance of `nowMs`. */
export function verifySignature(secret: string, payload: string, header: unknown, nowMs: number, toleranceS = SIGNATURE_TOLERANCE_S): boolean {
  if (typeof header !== 'string' || header.length > 2048 || secret === '') return false;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.split('=', 2).map((s) => s.trim());
    if (k === 't' && v && /^\d{1,12}$/.test(v)) timestamp = Number(v);
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/.test(v)) signatures.push(v);
  }
  if (timestamp === null || signatures.length === 0 || Math.abs(nowMs / 1000 - timestamp) > toleranceS) return false;
  const expected = Buffer.from(signPayload(secret, timestamp, payload), 'hex');
  return signatures.some((s) => timingSafeEqual(Buffer.from(s, 'hex'), expected));
}
