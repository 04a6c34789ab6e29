/**
 * Bounded compute queue: at most `slots` jobs run, at most `capacity` wait, each at most `timeoutMs`.
 * With `deadline` admission (the default) a request whose estimated wait would pass its deadline is
 * refused at once (503 queue_full, Retry-After) instead of timing out later, and a waiter that can no
 * longer start in time is shed; `capacity` keeps only the bound on waiters. Admission is taken from the
 * headers, before the body is read (`admit()`). How the wait is estimated and calibrated:
 * docs/operations.md, "Deadline-aware admission".
 */
import { ServiceError } from '../errors/index.js';

export type AdmissionPolicy = 'deadline' | 'capacity';

export interface QueueStats {
  running: number;
  waiting: number;
  /** Admitted from headers, not yet queued (reading the body, resolving inputs). */
  reserved: number;
  /** Moving average of a job's slot time, ms; null before the first job finished. */
  serviceMs: number | null;
  /** Calibration of the estimate: moving mean + 2 SD of actual ÷ estimated waits (1 until known). */
  waitFactor: number;
  /** Waiters shed so far because they could no longer start before their deadline. */
  shed: number;
}

/** A place held from admission until the request's job is queued (or the request ends). */
export interface AdmissionTicket {
  /** Gives the place back; no-op once used or released. */
  release(): void;
}

export interface ComputeQueue {
  run<T>(job: () => Promise<T>, onWait?: (ms: number) => void, ticket?: AdmissionTicket): Promise<T>;
  stats(): QueueStats;
  /** Admission from the headers: throws queue_full, or reserves a place (release it if unused). */
  admit(): AdmissionTicket;
  /** Estimated wait of a request arriving now, ms (0 when a slot is free; null without history). */
  estimateWaitMs(): number | null;
}

/** Weight of the newest sample in the moving averages (≈ the last 10 samples matter). */
const ALPHA = 0.2;
/** Standard deviations of the wait ratio added to its mean: admitted requests start in time ~97% of the time when the ratio is stable. */
const Z = 2;
const FACTOR_MIN = 0.5;
const FACTOR_MAX = 5;

/** Exponentially weighted mean and variance (West's update); `mean` is null before the first sample. */
class Moving {
  mean: number | null;
  variance = 0;
  constructor(initial: number | null = null) {
    this.mean = initial;
  }
  add(x: number): void {
    if (this.mean === null) {
      this.mean = x;
      return;
    }
    const diff = x - this.mean;
    this.mean += ALPHA * diff;
    this.variance = (1 - ALPHA) * (this.variance + ALPHA * diff * diff);
  }
  get sd(): number {
    return Math.sqrt(this.variance);
  }
}

interface Waiter {
  /** Hands the slot over, with the job's start time. */
  resolve: (started: number) => void;
  reject: (e: ServiceError) => void;
  timer: NodeJS.Timeout;
  since: number;
  /** The uncalibrated estimate it entered with, ms (null without service history). */
  estimate: number | null;
  /** Its estimate was at least the service time it entered with: its ratio is worth learning. */
  teaches: boolean;
}

export function createQueue(
  slots: number,
  capacity: number,
  timeoutMs: number,
  admission: AdmissionPolicy = 'deadline',
  /** Clock of the service-time measurements, ms (tests drive it). */
  now: () => number = () => performance.now(),
  /** Fraction of `timeoutMs` kept free at admission for the estimate's error (0 ≤ headroom < 1). */
  headroom = 0,
): ComputeQueue {
  /** The longest estimated wait admitted. */
  const admitMs = timeoutMs * (1 - Math.min(0.95, Math.max(0, headroom)));
  let running = 0;
  /** Start times of the running jobs (their expected ends are start + S). */
  const starts: number[] = [];
  let reserved = 0;
  const service = new Moving();
  /** Actual ÷ estimated wait of the requests that waited. */
  const ratio = new Moving(1);
  const waiters: Waiter[] = [];
  let shedCount = 0;
  const timeoutRetryAfter = String(Math.max(1, Math.min(30, Math.ceil(timeoutMs / 1000))));

  /**
   * Only waits estimated at one service time or more teach the ratio: below that, the estimate is a
   * fraction of S (one departure is S / slots) and the actual wait is when the next slot happens to
   * free, so the ratio is noise that can reach 20 (a 0.2 s estimate met after 4 s). In the overload
   * bench such samples lifted the ratio's mean several-fold at once and shed whole queues that had
   * seconds to spare.
   */
  function learn(w: Waiter, waitedMs: number): void {
    if (w.teaches && w.estimate !== null) ratio.add(Math.min(20, waitedMs / w.estimate));
  }

  function next(): void {
    const w = waiters.shift();
    if (w) {
      clearTimeout(w.timer);
      const t = now();
      learn(w, t - w.since);
      // Its start is recorded at the hand-over, so that the re-estimate below sees the slot taken.
      starts.push(t);
      w.resolve(t);
    } else running--;
    shed();
  }

  /**
   * Re-estimates every waiter's start, in queue order, on the slots' schedule (as rawWait, with the
   * waiters kept so far ahead of each) scaled by the expected ratio, and sheds those that can no
   * longer start before their deadline. The fluid estimate (one departure per S / slots) is the
   * floor, as at admission.
   */
  function shed(): void {
    const S = service.mean;
    if (admission !== 'deadline' || waiters.length === 0 || S === null) return;
    const t = now();
    const f = expectedFactor();
    const free: number[] = [];
    for (let i = 0; i < slots; i++) free.push(i < starts.length ? Math.max(t, starts[i]! + S) : t);
    let kept = 0;
    for (let i = 0; i < waiters.length; ) {
      const w = waiters[i]!;
      let k = 0;
      for (let j = 1; j < slots; j++) if (free[j]! < free[k]!) k = j;
      const startIn = Math.max(((kept + 1) * S) / slots, free[k]! - t) * f;
      const left = w.since + timeoutMs - t;
      if (startIn > left) {
        waiters.splice(i, 1);
        clearTimeout(w.timer);
        shedCount++;
        w.reject(
          full(
            `the compute queue slowed down: this request could no longer start within ${timeoutMs} ms of its arrival (estimated start in ${Math.round(startIn)} ms, ${Math.max(0, Math.round(left))} ms left); retry later`,
            (startIn - left) / 1000,
          ),
        );
        continue;
      }
      free[k] = free[k]! + S;
      kept++;
      i++;
    }
  }

  /** Uncalibrated estimate: `ahead` jobs hold or are owed a slot before the newcomer. */
  function rawWait(ahead: number): number | null {
    const departures = ahead - slots + 1;
    if (departures <= 0) return 0;
    const S = service.mean;
    if (S === null) return null;
    const fluid = (departures * S) / slots;
    // The slots' schedule: when each frees (a free slot now, a running job at its start + S, or
    // now if it has overrun: the fluid estimate covers that case), then the jobs ahead in turn.
    const t = now();
    const free: number[] = [];
    for (let i = 0; i < slots; i++) free.push(i < starts.length ? Math.max(t, starts[i]! + S) : t);
    for (let queued = Math.max(0, ahead - starts.length); queued > 0; queued--) {
      let k = 0;
      for (let i = 1; i < slots; i++) if (free[i]! < free[k]!) k = i;
      free[k] = free[k]! + S;
    }
    return Math.max(fluid, Math.min(...free) - t);
  }

  /**
   * The calibration factor. The head of the queue is also a live sample: having waited longer than
   * its estimate already, its ratio is at least age ÷ estimate, known now rather than once it runs,
   * so a sudden loss of capacity tightens admission at once (when its estimate was meaningful).
   */
  function factor(): number {
    let f = (ratio.mean ?? 1) + Z * ratio.sd;
    const head = waiters[0];
    if (head && head.teaches && head.estimate !== null) f = Math.max(f, (now() - head.since) / head.estimate);
    return Math.min(FACTOR_MAX, Math.max(FACTOR_MIN, f));
  }

  /**
   * The factor a waiter's start is re-estimated with: the moving mean of the ratio (what waits have
   * been, on average, against their estimates), without the SD margin and the head's live overrun
   * that admission adds. Shedding follows the estimate, not its pessimistic bound: the head's
   * overrun is one sample, and one whose estimate was short (a single departure ahead, S / slots)
   * overruns it several times over whenever departures bunch, which shed whole queues in the
   * overload bench that went on to start in time.
   */
  function expectedFactor(): number {
    return Math.min(FACTOR_MAX, Math.max(FACTOR_MIN, ratio.mean ?? 1));
  }

  /** Calibrated estimate of the wait, ms. */
  function waitFor(ahead: number): number | null {
    const raw = rawWait(ahead);
    return raw === null ? null : raw * factor();
  }

  function full(detail: string, retryAfterS: number): ServiceError {
    return new ServiceError('queue_full', detail, { headers: { 'retry-after': String(Math.max(1, Math.ceil(retryAfterS))) } });
  }

  /** Throws queue_full when a request with `ahead` jobs before it may not enter. */
  function check(ahead: number): void {
    if (ahead >= slots + capacity) {
      // One place frees when one job finishes: S / slots on average.
      throw full('the compute queue is full; retry later', service.mean === null ? 1 : service.mean / slots / 1000);
    }
    if (admission !== 'deadline') return;
    const est = waitFor(ahead);
    if (est !== null && est > admitMs) {
      throw full(
        admitMs < timeoutMs
          ? `the compute queue is too long to start this request within ${timeoutMs} ms with the headroom kept for the estimate's error (estimated wait ${Math.round(est)} ms, admitted up to ${Math.round(admitMs)} ms); retry later`
          : `the compute queue is too long to start this request within ${timeoutMs} ms (estimated wait ${Math.round(est)} ms); retry later`,
        (est - admitMs) / 1000,
      );
    }
  }

  return {
    async run<T>(job: () => Promise<T>, onWait?: (ms: number) => void, ticket?: AdmissionTicket): Promise<T> {
      ticket?.release();
      const t0 = Date.now();
      let started: number;
      if (running < slots) {
        running++;
        started = now();
        starts.push(started);
      } else {
        // FIFO: the requests already waiting are ahead; those still reading their bodies are not.
        check(running + waiters.length);
        const estimate = rawWait(running + waiters.length);
        started = await new Promise<number>((resolve, reject) => {
          const entry: Waiter = {
            resolve,
            reject,
            since: now(),
            estimate,
            teaches: estimate !== null && service.mean !== null && estimate > 0 && estimate >= service.mean,
            timer: setTimeout(() => {
              const i = waiters.indexOf(entry);
              if (i >= 0) waiters.splice(i, 1);
              // It waited at least this long: a lower bound of its ratio, still worth learning.
              learn(entry, timeoutMs);
              reject(new ServiceError('queue_timeout', `no compute slot became free within ${timeoutMs} ms; retry later`, { headers: { 'retry-after': timeoutRetryAfter } }));
            }, timeoutMs),
          };
          waiters.push(entry);
        });
        // the slot was handed over by next(), which recorded its start: running stays the same
      }
      onWait?.(Date.now() - t0);
      try {
        return await job();
      } finally {
        starts.splice(starts.indexOf(started), 1);
        service.add(now() - started);
        next();
      }
    },
    stats: () => ({ running, waiting: waiters.length, reserved, serviceMs: service.mean, waitFactor: factor(), shed: shedCount }),
    admit() {
      check(running + waiters.length + reserved);
      reserved++;
      let held = true;
      return {
        release() {
          if (!held) return;
          held = false;
          reserved--;
        },
      };
    },
    estimateWaitMs: () => waitFor(running + waiters.length + reserved),
  };
}
