/**
 * Admission by memory: a compute request runs only while the estimated peak bytes of every running
 * request (src/model-client/job-cost.ts) fit in what FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES leaves
 * beside the process's resident memory when it became ready (models, runtimes). A request that
 * could never fit is refused at once (413 request_over_memory_budget); one that does not fit now
 * waits for at most `maxWaitMs` (503 memory_budget_full). A request that fits now runs now, even
 * with larger ones waiting: first come, first served held another tenant's 100 MiB verify behind a
 * waiting 1.6 GiB mtcnn job until its own queue timeout (the adversary suite's largest accepted mtcnn
 * job, twice at once). Waiters are granted in arrival order among those that fit.
 */
import { ServiceError } from '../errors/index.js';

export interface MemoryGateOptions {
  /** The whole process's budget in bytes. */
  budgetBytes: number;
  /** Resident bytes of the idle, warmed process; read once, at the first admission. */
  baselineBytes: () => number;
  /** Longest wait for room, in ms. */
  maxWaitMs: number;
}

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class MemoryGate {
  private baseline: number | null = null;
  private inUse = 0;
  private readonly waiting: Waiter[] = [];

  constructor(private readonly opts: MemoryGateOptions) {}

  /** Bytes jobs may hold at once. */
  capacity(): number {
    this.baseline ??= this.opts.baselineBytes();
    return Math.max(0, this.opts.budgetBytes - this.baseline);
  }

  /** Bytes the running jobs hold by estimate (metrics, tests). */
  held(): number {
    return this.inUse;
  }

  /** Whether `bytes` could ever be admitted. */
  fits(bytes: number): boolean {
    return bytes <= this.capacity();
  }

  /**
   * Waits until `bytes` fit beside the running jobs; returns the release, to call exactly once
   * when the job's buffers are gone.
   */
  async admit(bytes: number): Promise<() => void> {
    const capacity = this.capacity();
    if (bytes > capacity) {
      throw new ServiceError(
        'request_over_memory_budget',
        `this request needs about ${mib(bytes)} MiB of model-server memory; at most ${mib(capacity)} MiB fit within FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES: send smaller images or use another detector`,
      );
    }
    if (this.inUse + bytes <= capacity) return this.take(bytes);
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = { bytes, grant: () => { clearTimeout(timer); resolve(); } };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        this.drain();
        reject(new ServiceError('memory_budget_full', `the model server's memory budget stayed full for ${this.opts.maxWaitMs} ms`, { headers: { 'retry-after': '1' } }));
      }, this.opts.maxWaitMs);
      this.waiting.push(w);
    });
    return this.take(bytes, true);
  }

  private take(bytes: number, granted = false): () => void {
    if (!granted) this.inUse += bytes;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inUse -= bytes;
      this.drain();
    };
  }

  /** Grants, in arrival order, every waiter that fits beside what runs. */
  private drain(): void {
    const capacity = this.capacity();
    for (let i = 0; i < this.waiting.length; ) {
      const w = this.waiting[i]!;
      if (this.inUse + w.bytes > capacity) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      this.inUse += w.bytes;
      w.grant();
    }
  }
}

const mib = (b: number): number => Math.ceil(b / (1024 * 1024));
