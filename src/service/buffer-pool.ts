/**
 * A few large buffers kept between requests for binary /compare targets. A fresh 50 MB buffer costs
 * a page fault per 4 KiB on first touch and external-memory pressure that starts V8's full
 * collections: profiled, that was most of a 100,000-target request's time outside the kernel. A
 * buffer goes back to the pool when its response has been sent (the kernel has finished with it by
 * then), so at most `slots` buffers stay resident (the largest seen, up to the /compare body limit
 * each); more concurrent requests allocate as before.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];

  constructor(
    private readonly slots = 2,
    /** Capacities are rounded up to this, so nearby sizes share a buffer. */
    private readonly granule = 1 << 20,
  ) {}

  /** A buffer of exactly `size` bytes on its own ArrayBuffer at offset 0; its contents are undefined. */
  acquire(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const capacity = this.free[i]!.length;
      if (capacity >= size && (best < 0 || capacity < this.free[best]!.length)) best = i;
    }
    const whole = best >= 0 ? this.free.splice(best, 1)[0]! : Buffer.allocUnsafeSlow(Math.ceil(Math.max(size, 1) / this.granule) * this.granule);
    return whole.subarray(0, size);
  }

  /**
   * Returns a buffer from `acquire` (any view of it); the caller must not use it afterwards. When the
   * pool is full, a larger buffer takes the place of the smallest one kept: a large buffer is what
   * costs to make again (a page fault per 4 KiB, and the external-memory growth that starts V8's full
   * collections), a small one is cheap. Without this, a pool filled by two small requests turned away
   * every 100,000-target buffer after it: each such request then allocated 49 MB afresh (measured in
   * bench/suites/compare.ts, which sends 1k and 10k targets first: 244 CPU ms per 100k request).
   */
  release(view: Uint8Array): void {
    if (view.byteOffset !== 0) return;
    const whole = Buffer.from(view.buffer, 0, view.buffer.byteLength);
    if (this.free.some((b) => b.buffer === whole.buffer)) return;
    if (this.free.length < this.slots) {
      this.free.push(whole);
      return;
    }
    let smallest = 0;
    for (let i = 1; i < this.free.length; i++) if (this.free[i]!.length < this.free[smallest]!.length) smallest = i;
    if (this.free.length > 0 && this.free[smallest]!.length < whole.length) this.free[smallest] = whole;
  }

  get pooled(): number {
    return this.free.length;
  }
}
