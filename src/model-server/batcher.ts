/**
 * Cross-request micro-batching for one model. Concurrent requests share one ONNX Runtime run:
 * - an idle model runs a request at once (no added latency when the server is quiet);
 * - while a run is in flight, arriving rows queue up and go together in the next run;
 * - under a burst, a request that finds others arriving within `windowMs` waits that long so
 *   that the batch fills (the window never exceeds 2 ms by configuration);
 * - a run never takes more than `maxBatch` rows.
 */
export type RunBatch = (batch: Float32Array, rows: number) => Promise<Float32Array[]>;

interface Pending {
  data: Float32Array;
  rows: number;
  resolve: (out: Float32Array[]) => void;
  reject: (err: unknown) => void;
}

export interface BatcherStats {
  runs: number;
  rows: number;
  maxRowsInRun: number;
}

export class Batcher {
  private queue: Pending[] = [];
  private queuedRows = 0;
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  // -Infinity, not 0: performance.now() counts from process start, so 0 made the first request of a
  // young process look like part of a burst and wait for the window.
  private lastArrival = Number.NEGATIVE_INFINITY;
  readonly stats: BatcherStats = { runs: 0, rows: 0, maxRowsInRun: 0 };

  constructor(
    private readonly run: RunBatch,
    private readonly rowSize: number,
    private readonly maxBatch: number,
    private readonly windowMs: number,
  ) {}

  submit(data: Float32Array, rows: number): Promise<Float32Array[]> {
    if (rows <= 0) return Promise.resolve([]);
    if (data.length !== rows * this.rowSize) return Promise.reject(new RangeError('batch size does not match the model input'));
    // With batching off, every request is its own run (the baseline the benchmark compares with).
    if (this.windowMs <= 0 && this.maxBatch <= 1) return this.run(data, rows);
    return new Promise((resolve, reject) => {
      this.queue.push({ data, rows, resolve, reject });
      this.queuedRows += rows;
      const now = performance.now();
      const burst = now - this.lastArrival < this.windowMs;
      this.lastArrival = now;
      this.schedule(burst);
    });
  }

  private schedule(burst: boolean): void {
    if (this.running) return; // the finishing run picks the queue up
    if (this.queuedRows >= this.maxBatch || !burst || this.windowMs <= 0) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      void this.flush();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.windowMs);
  }

  private async flush(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    const taken: Pending[] = [];
    let rows = 0;
    // Whole requests only: a request's rows never straddle two runs. A single request larger
    // than maxBatch runs alone.
    while (this.queue.length > 0) {
      const next = this.queue[0] as Pending;
      if (taken.length > 0 && rows + next.rows > this.maxBatch) break;
      taken.push(next);
      rows += next.rows;
      this.queue.shift();
    }
    this.queuedRows -= rows;
    try {
      const batch = taken.length === 1 ? (taken[0] as Pending).data : concat(taken, rows * this.rowSize);
      const out = await this.run(batch, rows);
      this.stats.runs++;
      this.stats.rows += rows;
      this.stats.maxRowsInRun = Math.max(this.stats.maxRowsInRun, rows);
      let at = 0;
      for (const p of taken) {
        p.resolve(out.slice(at, at + p.rows));
        at += p.rows;
      }
    } catch (err) {
      for (const p of taken) p.reject(err);
    } finally {
      this.running = false;
      if (this.queue.length > 0) void this.flush();
    }
  }
}

function concat(parts: Pending[], length: number): Float32Array {
  const out = new Float32Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p.data, at);
    at += p.data.length;
  }
  return out;
}
