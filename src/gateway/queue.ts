/**
 * Bounded compute queue: at most `slots` jobs run at once (the cap on in-flight upstream requests);
 * at most `capacity` wait, each at most `timeoutMs` (queue_full / queue_timeout, 503 + Retry-After).
 */
import { ServiceError } from '../errors/index.js';

export interface QueueStats {
  running: number;
  waiting: number;
}

export interface ComputeQueue {
  run<T>(job: () => Promise<T>, onWait?: (ms: number) => void): Promise<T>;
  stats(): QueueStats;
  /** Throws queue_full when a new job could neither run nor wait (cheap early refusal). */
  assertRoom(): void;
}

export function createQueue(slots: number, capacity: number, timeoutMs: number): ComputeQueue {
  let running = 0;
  const waiters: Array<{ resolve: () => void; timer: NodeJS.Timeout }> = [];
  const retryAfter = String(Math.max(1, Math.min(30, Math.ceil(timeoutMs / 1000))));
  function next(): void {
    const w = waiters.shift();
    if (w) {
      clearTimeout(w.timer);
      w.resolve();
    } else running--;
  }
  return {
    async run<T>(job: () => Promise<T>, onWait?: (ms: number) => void): Promise<T> {
      const t0 = Date.now();
      if (running < slots) running++;
      else {
        if (waiters.length >= capacity) throw new ServiceError('queue_full', 'the compute queue is full; retry later', { headers: { 'retry-after': '1' } });
        await new Promise<void>((resolve, reject) => {
          const entry = {
            resolve,
            timer: setTimeout(() => {
              const i = waiters.indexOf(entry);
              if (i >= 0) waiters.splice(i, 1);
              reject(new ServiceError('queue_timeout', `no compute slot became free within ${timeoutMs} ms; retry later`, { headers: { 'retry-after': retryAfter } }));
            }, timeoutMs),
          };
          waiters.push(entry);
        });
        // the slot was handed over by next(): running stays the same
      }
      onWait?.(Date.now() - t0);
      try {
        return await job();
      } finally {
        next();
      }
    },
    stats: () => ({ running, waiting: waiters.length }),
    assertRoom() {
      if (running >= slots && waiters.length >= capacity) throw new ServiceError('queue_full', 'the compute queue is full; retry later', { headers: { 'retry-after': '1' } });
    },
  };
}
