/**
 * When to send a request again, and after how long. Retried, as the service's error catalog says: 429,
 * the 503s it marks retryable (queue_full, queue_timeout, service_warming, gateway_draining, or any 503
 * carrying Retry-After), 500 internal_error, 502 upstream_failed, 504 upstream_timeout, and connections
 * refused or reset before the request was sent. Never another 4xx, nor 502 upstream_lost. The wait
 * honours Retry-After (seconds or an HTTP date), never less; without it, exponential backoff with
 * jitter. A Retry-After longer than `maxRetryWait` is not slept through: the error is thrown at once.
 */
export const RETRYABLE_503 = new Set(['queue_full', 'queue_timeout', 'service_warming', 'gateway_draining']);
/** The catalog's "retry with backoff" server errors, by status. */
export const RETRYABLE_5XX: Record<number, ReadonlySet<string>> = { 500: new Set(['internal_error']), 502: new Set(['upstream_failed']), 504: new Set(['upstream_timeout']) };

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
  return RETRYABLE_5XX[status]?.has(code) ?? false;
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

/** Waits `seconds`; rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, seconds * 1000);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
