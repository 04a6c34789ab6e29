/**
 * A few large buffers kept between requests for binary /compare targets. A fresh 50 MB buffer costs
 * a page fault per 4 KiB on first touch and external-memory pressure that starts V8's full
 * collections: profiled, that was most of a 100,000-target request's time outside the kernel. A
 * buffer goes back to the pool when its response has been sent (the kernel has finished with it by
 * then), so at most `slots` buffers stay resident; more concurrent requests allocate as before.
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

  /** Returns a buffer from `acquire` (any view of it); the caller must not use it afterwards. */
  release(view: Uint8Array): void {
    if (view.byteOffset !== 0) return;
    const whole = Buffer.from(view.buffer, 0, view.buffer.byteLength);
    if (this.free.length < this.slots && !this.free.some((b) => b.buffer === whole.buffer)) this.free.push(whole);
  }

  get pooled(): number {
    return this.free.length;
  }
}
