/** The pool that binary /compare targets land in: reuse, exact views, bounded retention. */
import t from 'tap';
import { BufferPool } from '../src/service/buffer-pool.js';

t.test('a released buffer is reused for a request that fits, at offset 0', async (t) => {
  const pool = new BufferPool(2, 1024);
  const a = pool.acquire(1000);
  t.equal(a.length, 1000);
  t.equal(a.byteOffset, 0, 'float32 views need an aligned start');
  pool.release(a);
  t.equal(pool.pooled, 1);
  const b = pool.acquire(900);
  t.equal(b.buffer, a.buffer, 'same memory, no new allocation');
  t.equal(b.length, 900);
  t.equal(pool.pooled, 0, 'taken out while in use');
  const c = pool.acquire(2000);
  t.not(c.buffer, a.buffer, 'too small buffers are not handed out');
  t.equal(c.buffer.byteLength, 2048, 'capacity rounded up to the granule');
});

t.test('retention is bounded and double releases are ignored', async (t) => {
  const pool = new BufferPool(2, 1024);
  const bufs = [pool.acquire(10), pool.acquire(10), pool.acquire(10)];
  for (const b of bufs) pool.release(b);
  t.equal(pool.pooled, 2, 'at most `slots` buffers are kept');
  pool.release(bufs[0]!);
  pool.release(bufs[0]!);
  t.equal(pool.pooled, 2);
  pool.release(Buffer.from(bufs[2]!.buffer, 8, 16));
  t.equal(pool.pooled, 2, 'a view that does not start the buffer is not taken back');
  const small = pool.acquire(5);
  const big = pool.acquire(1000);
  t.not(small.buffer, big.buffer, 'the smallest fitting buffer serves each request');
});

t.test('a full pool keeps the larger buffers: small requests never crowd out the big ones', async (t) => {
  const pool = new BufferPool(2, 1024);
  const small = [pool.acquire(500), pool.acquire(3000)];
  for (const b of small) pool.release(b);
  const big = pool.acquire(50_000);
  t.equal(big.buffer.byteLength, 50_176, 'neither small buffer fits: a new one');
  pool.release(big);
  t.equal(pool.pooled, 2);
  const again = pool.acquire(49_000);
  t.equal(again.buffer, big.buffer, 'the large buffer was kept, in place of the smallest');
  pool.release(again);
  const mid = pool.acquire(2000);
  t.equal(mid.buffer, small[1]!.buffer, 'the 3 KiB one stays for what it fits');
  pool.release(mid);
  pool.release(Buffer.allocUnsafeSlow(100));
  t.equal(pool.pooled, 2, 'a buffer smaller than every kept one is dropped');
  t.equal(pool.acquire(40_000).buffer, big.buffer);
});
