/**
 * JSON bodies are read into one buffer (src/http/body-collector.ts, issue 24): Fastify's
 * `parseAs: 'buffer'` kept every chunk until the body ended and then copied them all into a second
 * buffer, so a body was held twice (25 MiB of unterminated JSON rose `serve` by 48-85 MiB). Here each
 * chunk is copied into a buffer of the declared length as it arrives and can be collected at once; the
 * test proves it with WeakRefs and a forced GC, through the parser the gateway and MCP install
 * (useJsonBodyParser). The refusals (too large, declared or chunked; a length that differs from
 * Content-Length; a stream error; an empty body) are what they were with Fastify's reader, through the
 * gateway's error mapping.
 */
import t from 'tap';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { useJsonBodyParser } from '../src/http/json-body.js';
import { registerErrorHandling, toServiceError } from '../src/http/error-handler.js';
import { CHUNKED_INITIAL_BYTES, EAGER_MIN_BYTES, POOLED_MIN_BYTES, collectBody, type BodyBuffers } from '../src/http/body-collector.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MIB = 2 ** 20;
const LIMIT = 40 * MIB;

async function app(): Promise<FastifyInstance> {
  const a = Fastify({ bodyLimit: 1024 });
  useJsonBodyParser(a, { maxValues: 1 << 19 });
  registerErrorHandling(a);
  a.post('/x', { bodyLimit: LIMIT }, async (req) => ({ keys: Object.keys(req.body as object), bytes: req.headers['content-length'] ?? null }));
  a.post('/small', async (req) => ({ keys: Object.keys(req.body as object) }));
  await a.ready();
  return a;
}

/** A JSON document of exactly `bytes` bytes: {"s":"aaa…"}. */
function doc(bytes: number): Buffer {
  const b = Buffer.alloc(bytes, 0x61);
  b.write('{"s":"');
  b.write('"}', bytes - 2);
  return b;
}

/** `body` as a stream of `size`-byte chunks, each a fresh Buffer the stream does not keep. */
function chunks(body: Buffer, size: number, opts: { onChunk?: (c: Buffer, i: number) => void; failAt?: number } = {}): Readable {
  let at = 0;
  let i = 0;
  return new Readable({
    read() {
      // One chunk per task, as a socket delivers them (a WeakRef keeps its target alive until the end of
      // the task that made it, so a synchronous pump would keep every chunk).
      setImmediate(() => {
        if (opts.failAt !== undefined && at >= opts.failAt) {
          this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
          return;
        }
        if (at >= body.length) {
          this.push(null);
          return;
        }
        const c = Buffer.from(body.subarray(at, at + size));
        at += size;
        opts.onChunk?.(c, i++);
        this.push(c);
      });
    },
  });
}

t.test('a 32 MiB body: each chunk can be collected once copied, and one buffer of its length is allocated', async (t) => {
  const a = await app();
  t.teardown(() => a.close());
  const body = doc(32 * MIB);
  const refs: Array<WeakRef<Buffer>> = [];
  gc();
  const before = process.memoryUsage().arrayBuffers;
  let peak = 0;
  let aliveAtEnd = -1;
  const stream = chunks(body, 64 * 1024, {
    onChunk: (c, i) => {
      refs.push(new WeakRef(c));
      // Every 64 chunks, and at the last: collect, and measure what the reader holds.
      if (i % 64 === 63 || (i + 1) * 64 * 1024 >= body.length) {
        gc();
        peak = Math.max(peak, process.memoryUsage().arrayBuffers - before);
        if ((i + 1) * 64 * 1024 >= body.length) aliveAtEnd = refs.filter((r) => r.deref() !== undefined).length;
      }
    },
  });
  const res = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, payload: stream });
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), { keys: ['s'], bytes: String(body.length) });
  // The WeakRefs are read in a later task than their chunk's push: at most the last few chunks, still
  // in the stream's own queue, are reachable. Fastify's reader held all 512 until the end.
  t.ok(aliveAtEnd >= 0 && aliveAtEnd <= 4, `chunks still reachable when the last one arrives: ${aliveAtEnd} of ${refs.length}`);
  // Over the test's own copy: one buffer of 32 MiB, a few chunks, and the test process's own few MiB.
  // (When the last chunk arrives Fastify's reader held the same 32 MiB, as chunks; its second copy came
  // after, in Buffer.concat, which the WeakRefs above rule out.) A second copy would be 64 MiB; the
  // bound leaves 16 MiB for other allocations of the process, which reached 8.0 MiB on a loaded machine.
  t.ok(peak <= 32 * MIB + 16 * MIB, `external memory over the test's own copy while reading: ${(peak / MIB).toFixed(1)} MiB`);
});

t.test('an upload that declares 25 MiB and has sent 1 MiB holds about 1 MiB, not its declaration', async (t) => {
  // The body budget's held uploads: a buffer of the declared length allocated at the headers made V8
  // count 25 MiB of external memory each, and serve ran major GCs the old reader never caused.
  const body = doc(25 * MIB);
  let sent = 0;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const stream = new Readable({
    read() {
      setImmediate(() => {
        if (sent >= MIB) {
          void held.then(() => this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
          return;
        }
        this.push(Buffer.from(body.subarray(sent, sent + 64 * 1024)));
        sent += 64 * 1024;
      });
    },
  });
  // Settle what earlier tests left (one collection can leave what a finalizer frees for the next).
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  const before = process.memoryUsage().arrayBuffers;
  const collecting = collectBody(stream, String(body.length), LIMIT).then(() => null, (e: unknown) => e);
  while (sent < MIB) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20));
  gc();
  const holding = process.memoryUsage().arrayBuffers - before;
  t.ok(holding <= 3 * MIB, `held while 1 MiB of 25 has arrived: ${(holding / MIB).toFixed(1)} MiB`);
  release();
  t.match(await collecting, { message: 'aborted', statusCode: 400 });
  t.equal(EAGER_MIN_BYTES, MIB, 'a declared body gets its buffer from 1 MiB or an eighth of it');
});

t.test('a chunked body grows its buffer geometrically and parses as sent', async (t) => {
  const a = await app();
  t.teardown(() => a.close());
  const body = doc(300_000);
  const res = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json' }, payload: chunks(body, 1000) });
  t.equal(res.statusCode, 200, res.body);
  t.same(res.json(), { keys: ['s'], bytes: null }, 'no Content-Length: read to its end');
  // The collector itself: the bytes come back exactly, in a buffer of at most twice their length.
  const got = await collectBody(chunks(body, 777), undefined, LIMIT);
  t.ok(got.equals(body), 'the bytes, in order');
  t.ok(got.buffer.byteLength < 2 * body.length && got.buffer.byteLength >= body.length, `buffer ${got.buffer.byteLength} bytes for ${body.length}`);
  const small = await collectBody(chunks(doc(10), 3), undefined, LIMIT);
  t.equal(small.buffer.byteLength >= CHUNKED_INITIAL_BYTES ? small.length : -1, 10, 'a small chunked body fits the first buffer');
  const capped = await collectBody(chunks(doc(100_000), 1000), undefined, 100_000);
  t.equal(capped.length, 100_000, 'growth stops at the limit: a body of exactly the limit is read');
});

t.test('refusals are those of Fastify reader, through the gateway mapping (unchanged)', async (t) => {
  const a = await app();
  t.teardown(() => a.close());
  const tooLarge = { error: 'request_too_large', detail: 'the request body is larger than the limit' };
  const unparsable = { error: 'invalid_request', detail: 'the request could not be parsed' };

  const declared = await a.inject({ method: 'POST', url: '/small', headers: { 'content-type': 'application/json', 'content-length': '1025' }, payload: chunks(doc(1025), 100) });
  t.equal(declared.statusCode, 413);
  t.same(declared.json(), tooLarge, 'a declared length over the route limit');
  t.equal(declared.headers.connection, 'close', 'the connection is closed after a parser refusal');

  let pulled = 0;
  const unread = await a.inject({ method: 'POST', url: '/small', headers: { 'content-type': 'application/json', 'content-length': String(LIMIT) }, payload: chunks(doc(64 * 1024), 1024, { onChunk: () => pulled++ }) });
  t.equal(unread.statusCode, 413);
  t.ok(pulled <= 16, `refused before its body is read (${pulled} chunks of 64 pulled)`);

  // Refused before anything is allocated for it: a buffer of the declared 1 TiB would throw (500).
  const huge = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json', 'content-length': String(2 ** 40) }, payload: chunks(doc(1024), 1024) });
  t.equal(huge.statusCode, 413);
  t.same(huge.json(), tooLarge, 'a declared 1 TiB');

  const streamed = await a.inject({ method: 'POST', url: '/small', headers: { 'content-type': 'application/json' }, payload: chunks(doc(5000), 100) });
  t.equal(streamed.statusCode, 413);
  t.same(streamed.json(), tooLarge, 'a chunked body past the route limit');

  const routeLimit = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json' }, payload: chunks(doc(LIMIT + 1), 1024 * 1024) });
  t.equal(routeLimit.statusCode, 413, "a chunked body one byte past the route's own (larger) limit");

  const short = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json', 'content-length': '100' }, payload: chunks(doc(50), 10) });
  t.equal(short.statusCode, 400);
  t.same(short.json(), unparsable, 'fewer bytes than Content-Length');
  const long = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json', 'content-length': '50' }, payload: chunks(doc(100), 10) });
  t.equal(long.statusCode, 400);
  t.same(long.json(), unparsable, 'more bytes than Content-Length');

  // An aborted upload is a stream error; inject cannot deliver one to the server, so the collector is
  // called directly and its error mapped as the gateway maps it.
  const abortedErr = await collectBody(chunks(doc(10_000), 1000, { failAt: 5000 }), undefined, LIMIT).then(() => null, (e: unknown) => e);
  t.match(abortedErr, { message: 'aborted', statusCode: 400 }, 'a stream error is refused with status 400');
  t.same(toServiceError(abortedErr as FastifyError).toBody(), unparsable, 'a stream error (an aborted upload)');

  const empty = await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json', 'content-length': '0' }, payload: '' });
  t.equal(empty.statusCode, 400);
  t.same(empty.json(), { error: 'invalid_request', detail: 'the JSON body is empty' });

  const exact = await a.inject({ method: 'POST', url: '/small', headers: { 'content-type': 'application/json' }, payload: doc(1024) });
  t.equal(exact.statusCode, 200, 'a body of exactly the limit is read');
});

/** A pool that records what it lent and got back (src/service/buffer-pool.ts's contract). */
function countingBuffers(): BodyBuffers & { lent: Buffer[]; back: Uint8Array[] } {
  const lent: Buffer[] = [];
  const back: Uint8Array[] = [];
  return {
    lent,
    back,
    acquire(size: number) {
      const b = Buffer.allocUnsafeSlow(size);
      lent.push(b);
      return b;
    },
    release(b: Uint8Array) {
      back.push(b);
    },
  };
}

t.test('a large declared body is read into a lent buffer, given back when refused, kept when read', async (t) => {
  const body = doc(POOLED_MIN_BYTES + 100);
  const ok = countingBuffers();
  const got = await collectBody(chunks(body, 64 * 1024), String(body.length), LIMIT, ok);
  t.equal(ok.lent.length, 1, 'one buffer lent');
  t.equal(got.buffer, ok.lent[0]!.buffer, 'the body is that buffer');
  t.ok(got.equals(body));
  t.equal(ok.back.length, 0, "the caller's to give back once it has parsed it");

  const aborted = countingBuffers();
  await t.rejects(collectBody(chunks(body, 64 * 1024, { failAt: POOLED_MIN_BYTES / 2 + 64 * 1024 }), String(body.length), LIMIT, aborted));
  t.equal(aborted.lent.length, 1);
  t.same(aborted.back.map((b) => b.buffer), [aborted.lent[0]!.buffer], 'an aborted body gives its buffer back');

  const short = countingBuffers();
  await t.rejects(collectBody(chunks(body, 64 * 1024), String(body.length + 10), LIMIT, short), { code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' });
  t.equal(short.back.length, 1, 'a body shorter than declared gives its buffer back');

  // A pooled buffer is taken once EAGER_MIN_BYTES have arrived, not an eighth of the body: the early
  // chunks are what the body adds beyond itself.
  const when = countingBuffers();
  let received = 0;
  let receivedAtAcquire = -1;
  const watched = { ...when, acquire: (n: number) => ((receivedAtAcquire = received), when.acquire(n)) };
  const big = doc(32 * MIB);
  await collectBody(chunks(big, 64 * 1024, { onChunk: (c) => (received += c.length) }), String(big.length), LIMIT, watched);
  t.ok(receivedAtAcquire >= EAGER_MIN_BYTES && receivedAtAcquire <= EAGER_MIN_BYTES + 128 * 1024, `a 32 MiB body took its pooled buffer at ${receivedAtAcquire} bytes (an eighth: ${4 * MIB})`);

  const small = countingBuffers();
  await collectBody(chunks(doc(POOLED_MIN_BYTES - 1), 64 * 1024), String(POOLED_MIN_BYTES - 1), LIMIT, small);
  t.equal(small.lent.length, 0, `bodies under ${POOLED_MIN_BYTES} bytes are not worth a pooled buffer`);
  const chunked = countingBuffers();
  await collectBody(chunks(body, 64 * 1024), undefined, LIMIT, chunked);
  t.equal(chunked.lent.length, 0, 'a chunked body grows its own buffer');
});

t.test('the JSON parser gives a pooled body back once parsed, whatever the outcome', async (t) => {
  const pool = countingBuffers();
  const a = Fastify({ bodyLimit: LIMIT });
  useJsonBodyParser(a, { maxValues: 1 << 19, buffers: pool });
  registerErrorHandling(a);
  a.post('/x', async (req) => ({ keys: Object.keys(req.body as object) }));
  await a.ready();
  t.teardown(() => a.close());
  const good = doc(POOLED_MIN_BYTES + 10);
  t.equal((await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json' }, payload: good })).statusCode, 200);
  const bad = Buffer.from(good);
  bad[bad.length - 1] = 0x20;
  t.equal((await a.inject({ method: 'POST', url: '/x', headers: { 'content-type': 'application/json' }, payload: bad })).statusCode, 400, 'not JSON');
  t.equal(pool.lent.length, 2);
  t.same(pool.back.map((b) => b.buffer), pool.lent.map((b) => b.buffer), 'both given back');
});
