/**
 * Reads a request body into ONE buffer. Fastify's `parseAs: 'buffer'` keeps every chunk and then
 * Buffer.concat's them, so a body is held twice at its end (25 MiB of unterminated JSON rose `serve`'s
 * RSS by 48-85 MiB, 64 MiB on /compare by 174-186 MiB in the adversary suite). Here a body with a
 * Content-Length (already held to the route's limit and reserved in the body budget before it is
 * read) gets one buffer of exactly that length, allocated before the first byte and filled as chunks
 * arrive; a chunked body grows its buffer geometrically, never past the limit.
 *
 * The refusals are Fastify's own errors, raised where Fastify's rawBody raises them, so the error
 * handlers map them exactly as before: a declared or received length over the limit is
 * FST_ERR_CTP_BODY_TOO_LARGE (413), a body whose length differs from its Content-Length
 * FST_ERR_CTP_INVALID_CONTENT_LENGTH (400), a stream error (an aborted request) that error with
 * status 400 unless it carries a 4xx/5xx of its own.
 */
import type { Readable } from 'node:stream';
import { errorCodes } from 'fastify';

/** The first buffer of a body sent without Content-Length; it doubles from here, up to the limit. */
export const CHUNKED_INITIAL_BYTES = 64 * 1024;

/** A declared body's one buffer is allocated once this much of it, or an eighth of it, has arrived. */
export const EAGER_MIN_BYTES = 1024 * 1024;

const EMPTY = Buffer.alloc(0);

/**
 * Where a large declared body's buffer comes from, and goes back to (src/service/buffer-pool.ts): a
 * fresh 64 MiB buffer costs a page fault per 4 KiB as chunks are copied in, and V8 counts it as
 * external memory, which starts full collections on the event loop (a 64 MiB /compare body
 * stalled serve's loop 170-340 ms). A resident one costs neither.
 */
export interface BodyBuffers {
  /** A buffer of exactly `size` bytes; its contents are undefined. */
  acquire(size: number): Buffer;
  /** Gives back a buffer from `acquire` (any view of it). */
  release(buf: Uint8Array): void;
}

/** Declared bodies from this size on take their buffer from `BodyBuffers`, when given. */
export const POOLED_MIN_BYTES = 8 * 1024 * 1024;

/** Reads each chunk as it arrives; an error it returns refuses the body there (json-array-watch.ts). */
export interface BodyWatch {
  feed(chunk: Buffer): Error | null;
}

/**
 * Collects `payload` (the request stream Fastify hands a content-type parser) into one Buffer of
 * exactly the body's length. `contentLength` is the request's Content-Length header, if any; `limit`
 * the route's body limit. With `buffers`, a declared body of POOLED_MIN_BYTES or more is read into
 * one of theirs: the caller gives it back (`buffers.release`) once done with it; a refused body's
 * is given back here. With `watch`, each chunk is shown to it first, and its refusal stops the reading.
 */
export function collectBody(payload: Readable & { receivedEncodedLength?: number }, contentLength: string | undefined, limit: number, buffers?: BodyBuffers, watch?: BodyWatch): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = Number(contentLength);
    if (declared > limit) {
      reject(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
      return;
    }
    const known = Number.isInteger(declared) && declared >= 0;
    // A declared body's buffer is allocated once an eighth of it (at least 1 MiB) has arrived; until
    // then its chunks are kept as they came. Allocated at the headers, the uploads that declare 25 MiB
    // and send 1 MiB (held open within the body budget) made V8 count 25 MiB each of external memory,
    // and serve ran major GCs (12-31 ms) that the old reader never caused.
    // A pooled buffer adds no external memory, so it is taken at EAGER_MIN_BYTES: its early chunks,
    // held until then and freed only by a later GC, are what a 64 MiB body adds to RSS beyond itself.
    const pooledBody = buffers !== undefined && known && declared >= POOLED_MIN_BYTES;
    const eagerAt = known ? Math.min(declared, pooledBody ? EAGER_MIN_BYTES : Math.max(EAGER_MIN_BYTES, Math.ceil(declared / 8))) : 0;
    let early: Buffer[] | null = known ? [] : null;
    // Uninitialised memory is never handed out: the buffer is returned only when exactly its length
    // has been written into it (a shorter body is refused below).
    let buf: Buffer = known ? EMPTY : Buffer.allocUnsafe(Math.min(CHUNKED_INITIAL_BYTES, limit));
    let received = 0;
    let pooled = false;

    const stop = (): void => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    const refuse = (err: Error): void => {
      if (pooled) buffers!.release(buf);
      pooled = false;
      buf = EMPTY;
      reject(err);
    };

    function onData(data: Buffer | string): void {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      const at = received;
      received += chunk.length;
      // The resulting body must not exceed the limit (see Fastify's "zip bomb" note: a preParsing
      // stream may report a larger encoded length).
      if (received > limit || (payload.receivedEncodedLength ?? 0) > limit) {
        stop();
        early = null;
        refuse(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
        return;
      }
      const refusal = watch?.feed(chunk);
      if (refusal) {
        stop();
        early = null;
        refuse(refusal);
        return;
      }
      if (known) {
        // A declared body that runs past its length is refused at its end (Content-Length mismatch);
        // its excess is counted, not kept.
        if (received > declared) return;
        if (early) {
          early.push(chunk);
          if (received < eagerAt) return;
          pooled = pooledBody;
          buf = pooled ? buffers!.acquire(declared) : Buffer.allocUnsafe(declared);
          let o = 0;
          for (const c of early) o += c.copy(buf, o);
          early = null;
          return;
        }
      } else if (received > buf.length) {
        const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(received, buf.length * 2)));
        buf.copy(grown, 0, 0, at);
        buf = grown;
      }
      chunk.copy(buf, at);
    }

    function onEnd(err?: Error & { statusCode?: number }): void {
      stop();
      if (err != null) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        refuse(err);
        return;
      }
      if (!Number.isNaN(declared) && (payload.receivedEncodedLength || received) !== declared) {
        refuse(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
        return;
      }
      // A chunked body keeps its last buffer's spare room (less than half of it): copying it out would
      // hold the body twice, the cost this module exists to avoid.
      resolve(received === buf.length ? buf : buf.subarray(0, received));
    }

    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  });
}
