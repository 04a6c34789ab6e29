/**
 * src/service/compare-targets.ts: the one owner of a /compare's targets frees what it holds (a pooled
 * buffer, a streamed comparison's native state) exactly once, whichever way the request ends: answered,
 * refused by the compare, refused before it (never consumed), or the client gone, while the body is
 * read or while the compare runs (the buffer then goes back only once the kernel is done with it).
 * First the owner alone with a pool that counts, then the same paths through the gateway on a loopback
 * socket, counting every pooled buffer taken and given back. About 2 s.
 */
import t from 'tap';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BufferPool } from '../src/service/buffer-pool.js';
import { CompareTargets } from '../src/service/compare-targets.js';
import { TargetStream, type StreamPlan } from '../src/native/compare-stream.js';
import { ServiceError } from '../src/errors/index.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { seededMatrix } from './helpers/vectors.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { makePng } from './helpers/images.js';

const DIMS = 128;

/** A pool that counts, per underlying buffer, how often it was handed out and given back. */
class CountingPool extends BufferPool {
  readonly given = new Map<ArrayBufferLike, number>();
  readonly back = new Map<ArrayBufferLike, number>();
  override acquire(size: number): Buffer {
    const b = super.acquire(size);
    this.given.set(b.buffer, (this.given.get(b.buffer) ?? 0) + 1);
    return b;
  }
  override release(view: Uint8Array): void {
    this.back.set(view.buffer, (this.back.get(view.buffer) ?? 0) + 1);
    super.release(view);
  }
  releasesOf(b: Uint8Array): number {
    return this.back.get(b.buffer) ?? 0;
  }
}

/** An owner holding one pooled binary part of `rows` rows, as the multipart reader leaves it. */
function withPart(rows = 3): { pool: CountingPool; owner: CompareTargets; bytes: Buffer } {
  const pool = new CountingPool();
  const owner = new CompareTargets(pool);
  const bytes = owner.alloc(rows * DIMS * 4);
  owner.adopt(bytes);
  return { pool, owner, bytes };
}

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
};

t.test('answered: the buffer goes back once, when the compare ends; the response closing after is a no-op', async (t) => {
  const { pool, owner, bytes } = withPart();
  const r = await owner.consume(async () => {
    t.equal(pool.releasesOf(bytes), 0, 'held while the compare runs');
    return 'answer';
  });
  t.equal(r, 'answer');
  t.equal(pool.releasesOf(bytes), 1, 'given back when the compare ended');
  owner.release();
  owner.release();
  t.equal(pool.releasesOf(bytes), 1, 'exactly once');
  t.equal(CompareTargets.held, 0);
});

t.test('refused by the compare: given back once', async (t) => {
  const { pool, owner, bytes } = withPart();
  await t.rejects(owner.consume(async () => { throw new ServiceError('embedding_dimension_mismatch', 'x'); }), { code: 'embedding_dimension_mismatch' });
  t.equal(pool.releasesOf(bytes), 1);
  owner.release();
  t.equal(pool.releasesOf(bytes), 1, 'exactly once');
  t.equal(CompareTargets.held, 0);
});

t.test('refused before the compare (never consumed): given back once, at release', async (t) => {
  const { pool, owner, bytes } = withPart();
  t.equal(pool.releasesOf(bytes), 0);
  owner.release();
  t.equal(pool.releasesOf(bytes), 1);
  owner.release();
  t.equal(pool.releasesOf(bytes), 1, 'a second release is a no-op');
  t.equal(CompareTargets.held, 0);
  // A part adopted after the request ended (its body finished as the client left) goes back at once.
  const late = owner.alloc(DIMS * 4);
  const before = pool.releasesOf(late); // the pool hands the same memory out again
  owner.adopt(late);
  t.equal(pool.releasesOf(late) - before, 1);
  t.equal(CompareTargets.held, 0);
});

t.test('the client gone while the compare runs: the buffer stays until the kernel is done, then goes back once', async (t) => {
  const { pool, owner, bytes } = withPart();
  const kernel = deferred<void>();
  const running = owner.consume(async () => {
    await kernel.promise;
    // The kernel reads the pooled bytes in place: they must still be ours here.
    t.equal(pool.releasesOf(bytes), 0, 'not given back under the kernel');
    return 'late answer';
  });
  owner.release();
  t.equal(pool.releasesOf(bytes), 0, 'release waits for the running compare');
  kernel.resolve();
  t.equal(await running, 'late answer');
  t.equal(pool.releasesOf(bytes), 1, 'given back once the compare ended');
  owner.release();
  t.equal(pool.releasesOf(bytes), 1, 'exactly once');
  t.equal(CompareTargets.held, 0);
});

t.test('consumed once only', async (t) => {
  const { owner } = withPart();
  await owner.consume(async () => 1);
  await t.rejects(owner.consume(async () => 2), { code: 'internal_error' });
  t.equal(CompareTargets.held, 0);
});

t.test('a streamed part: its native state is closed exactly once, on every path', async (t) => {
  const closes = new Map<TargetStream, number>();
  const close = TargetStream.prototype.close;
  TargetStream.prototype.close = function (this: TargetStream) {
    closes.set(this, (closes.get(this) ?? 0) + 1);
    close.call(this);
  };
  t.teardown(() => {
    TargetStream.prototype.close = close;
  });
  const plan: StreamPlan = { sources: seededMatrix(1, DIMS, 1), dims: DIMS, metric: 'cosine', topK: 2, maxRows: 100 };
  const open = () => {
    const owner = new CompareTargets(new CountingPool(), () => plan);
    const s = owner.openStream({}, Buffer.from('\r\n--b'));
    if (!s) throw new Error('no stream planned');
    return { owner, s };
  };
  for (const path of ['answered', 'refused', 'never consumed', 'gone mid-compare'] as const) {
    const { owner, s } = open();
    t.equal(TargetStream.live, 1, `${path}: held`);
    if (path === 'answered') await owner.consume(async () => 'ok');
    if (path === 'refused') await owner.consume(async () => { throw new Error('refused'); }).catch(() => undefined);
    if (path === 'gone mid-compare') {
      const kernel = deferred<void>();
      const running = owner.consume(() => kernel.promise);
      owner.release();
      t.equal(closes.get(s) ?? 0, 0, `${path}: not closed under the compare`);
      kernel.resolve();
      await running;
    }
    owner.release();
    owner.release();
    t.equal(closes.get(s), 1, `${path}: closed exactly once`);
    t.equal(TargetStream.live, 0, `${path}: no native state left`);
  }
  t.equal(new CompareTargets(null, () => null).openStream({}, Buffer.from('\r\n--b')), null, 'no plan, no stream');
  t.equal(CompareTargets.held, 0);
});

// ---- through the gateway ----

const B = 'targets-owner-boundary';
let gw: Gateway;
let port = 0;
/** The stub model server's embed waits on this when set (a compare still running). */
let embedGate: Promise<void> | null = null;
let embedCalled: (() => void) | null = null;
const given = new Map<ArrayBufferLike, number>();
const back = new Map<ArrayBufferLike, number>();

t.before(async () => {
  // Every pooled buffer, whichever pool: counted by the prototype, as the gateway's pool is private.
  const acquire = BufferPool.prototype.acquire;
  const release = BufferPool.prototype.release;
  BufferPool.prototype.acquire = function (this: BufferPool, size: number) {
    const b = acquire.call(this, size);
    if (!(this instanceof CountingPool)) given.set(b.buffer, (given.get(b.buffer) ?? 0) + 1);
    return b;
  };
  BufferPool.prototype.release = function (this: BufferPool, view: Uint8Array) {
    if (!(this instanceof CountingPool)) back.set(view.buffer, (back.get(view.buffer) ?? 0) + 1);
    release.call(this, view);
  };
  t.teardown(() => {
    BufferPool.prototype.acquire = acquire;
    BufferPool.prototype.release = release;
  });
  const upstream = stubUpstream({
    async embed() {
      embedCalled?.();
      if (embedGate) await embedGate;
      return { embedding: Array.from(seededMatrix(1, DIMS, 7)), facial_area: { x: 0, y: 0, w: 4, h: 4, left_eye: null, right_eye: null, detector: 'opencv' }, face_confidence: 0.9, model: 'Facenet' };
    },
  });
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MAX_TARGETS: '100', FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1000' });
  gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  port = (gw.app.server.address() as AddressInfo).port;
});
t.teardown(() => gw?.close(10));

type Part = [name: string, value: string | Buffer, type?: string];
function body(parts: Part[]): Buffer {
  const out: Buffer[] = [];
  for (const [name, value, type] of parts) {
    const head = typeof value === 'string' ? `Content-Disposition: form-data; name="${name}"` : `Content-Disposition: form-data; name="${name}"; filename="f"\r\nContent-Type: ${type ?? 'application/octet-stream'}`;
    out.push(Buffer.from(`--${B}\r\n${head}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${B}--\r\n`));
  return Buffer.concat(out);
}

/** Posts `raw`; with `cut`, sends only that many bytes, or waits for `cut` to resolve, then goes away. */
function post(raw: Buffer, cut?: number | Promise<void>): Promise<{ status: number; json: any } | 'gone'> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/compare', method: 'POST', headers: { authorization: 'Bearer k', 'content-type': `multipart/form-data; boundary=${B}`, 'content-length': String(raw.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', () => resolve('gone'));
    if (typeof cut === 'number') req.write(raw.subarray(0, cut), () => setTimeout(() => req.destroy(), 50));
    else if (cut) {
      req.end(raw);
      void cut.then(() => req.destroy());
    } else req.end(raw);
  });
}

/** Waits until every pooled buffer handed out was given back, or ~1 s; then the counts must match. */
async function settled(): Promise<void> {
  const balanced = () => [...given].every(([b, n]) => back.get(b) === n) && CompareTargets.held === 0;
  for (let i = 0; i < 100 && !balanced(); i++) await new Promise((r) => setTimeout(r, 10));
}

/** Asserts each pooled buffer went back exactly as often as it was handed out, and nothing is held. */
function exactlyOnce(t: Tap.Test, what: string): void {
  const off = [...new Set([...given.keys(), ...back.keys()])].filter((b) => (given.get(b) ?? 0) !== (back.get(b) ?? 0)).map((b) => `${given.get(b) ?? 0} out, ${back.get(b) ?? 0} back`);
  t.same(off, [], `${what}: every pooled buffer given back exactly once`);
  t.equal(CompareTargets.held, 0, `${what}: the owner holds nothing`);
  t.equal(TargetStream.live, 0, `${what}: no native stream left`);
}

const targets = seededMatrix(3, DIMS, 3);
const targetBytes = Buffer.from(targets.buffer, targets.byteOffset, targets.byteLength);
const source = JSON.stringify({ embedding: Array.from(targets.subarray(DIMS, 2 * DIMS)) });

t.test('through the gateway: each way a request ends gives its buffer back once', async (t) => {
  // The targets part first: kept in one pooled buffer (the contiguous path).
  const answered = await post(body([['targets', targetBytes], ['source', source], ['top_k', '1']]));
  t.equal(answered !== 'gone' && answered.status, 200);
  t.same(answered !== 'gone' && answered.json.results.map((r: { index: number }) => r.index), [1]);
  await settled();
  t.ok(given.size > 0, 'the part was read into a pooled buffer');
  exactlyOnce(t, 'answered');

  const refused = await post(body([['targets', targetBytes.subarray(0, 2 * DIMS * 4 + 100)], ['source', source]]));
  t.equal(refused !== 'gone' && refused.json.error, 'embedding_dimension_mismatch');
  await settled();
  exactlyOnce(t, 'refused by the compare');

  const invalid = await post(body([['targets', targetBytes], ['source', source], ['top_k', '0']]));
  t.equal(invalid !== 'gone' && invalid.status, 400, 'refused by the schema: the handler never runs');
  await settled();
  exactlyOnce(t, 'refused before the compare');

  const streamed = await post(body([['source', source], ['model_name', 'Facenet'], ['distance_metric', 'cosine'], ['targets', targetBytes]]));
  t.equal(streamed !== 'gone' && streamed.status, 200);
  await settled();
  exactlyOnce(t, 'streamed and answered');

  const raw = body([['targets', Buffer.concat(Array(30).fill(targetBytes))], ['source', source]]);
  t.equal(await post(raw, raw.length >> 1), 'gone');
  await settled();
  exactlyOnce(t, 'the client gone mid-body');

  // An image source: the compare waits on the model server while the client goes away.
  const gate = deferred<void>();
  const called = deferred<void>();
  embedGate = gate.promise;
  embedCalled = () => called.resolve();
  const pending = post(body([['targets', targetBytes], ['source', makePng(4, 4), 'image/png']]), called.promise);
  t.equal(await pending, 'gone');
  await new Promise((r) => setTimeout(r, 50));
  const held = [...given].filter(([b, n]) => (back.get(b) ?? 0) < n).length;
  t.equal(held, 1, 'the client is gone, but the compare still holds its buffer');
  gate.resolve();
  embedGate = null;
  await settled();
  exactlyOnce(t, 'the client gone while the compare ran');
});
