/**
 * When to send a request again, and after how long. Retried: 429 and the 503s the contract marks
 * retryable (queue_full, queue_timeout, service_warming, gateway_draining, or any 503 carrying
 * Retry-After), and connections refused before the request was sent. Never another 4xx. The wait
 * honours Retry-After (seconds or an HTTP date), never less; without it, exponential backoff with
 * jitter. A Retry-After longer than `maxRetryWait` is not slept through: the error is thrown at once.
 */
export const RETRYABLE_503 = new Set(['queue_full', 'queue_timeout', 'service_warming', 'gateway_draining']);

export interface RetryPolicy {
  maxRetries: number;
  /** First backoff in seconds; doubles per attempt. */
  backoff: number;
  maxBackoff: number;
  maxRetryWait: number;
}

export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v);
  const when = Date.parse(v);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

export function isRetryable(status: number, code: string, retryAfter: number | undefined): boolean {
  if (status === 429) return true;
  if (status === 503) return RETRYABLE_503.has(code) || retryAfter !== undefined;
  return false;
}

/** "Equal jitter": half the backoff fixed, half random. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const base = Math.min(policy.maxBackoff, policy.backoff * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

/** Seconds to wait before the next attempt, or undefined to give up. */
export function delayFor(policy: RetryPolicy, attempt: number, status: number, code: string, retryAfter: number | undefined): number | undefined {
  if (attempt >= policy.maxRetries || !isRetryable(status, code, retryAfter)) return undefined;
  if (retryAfter !== undefined) return retryAfter <= policy.maxRetryWait ? retryAfter : undefined;
  return backoffDelay(policy, attempt);
}

export const sleep = (seconds: number): Promise<void> => new Promise((r) => setTimeout(r, seconds * 1000));
