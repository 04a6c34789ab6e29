/**
 * A streaming multipart/form-data reader for /compare, whose body is mostly one large binary part
 * (the `targets`, raw float32). busboy (under @fastify/multipart) finds the boundary with a
 * JavaScript Boyer-Moore-Horspool over every byte and hands each part's bytes on as a stream of
 * chunks; profiled on a 100,000 × 128 request (49 MB), its search and stream plumbing were most of the
 * gateway's own time beyond reading the socket. Here each chunk of the `targets` part is either
 * handed to a sink that consumes it as it comes and finds the delimiter itself (the streaming
 * comparison, src/native/compare-stream.ts: nothing is kept), or copied once, straight into one buffer
 * sized from Content-Length (bounded by the limit), with the delimiter searched for only in the bytes
 * just copied, plus the few before them that a delimiter split across chunks may start in: one
 * native call per chunk either way (SIMD memmem). Other parts (text fields, an image `source`) are
 * small, collected as chunks and searched with Buffer.indexOf.
 *
 * Grammar (RFC 2046 §5.1.1, RFC 7578): an optional preamble, `--boundary`, then parts, each
 * `CRLF headers CRLF CRLF body` followed by `CRLF--boundary`; the last delimiter is followed by `--`
 * and an epilogue, both ignored. Transport padding (spaces, tabs) may follow a delimiter. A part
 * without `Content-Disposition: form-data` is skipped, as busboy does.
 *
 * Errors are contract errors: a malformed envelope or a body that ends before its closing delimiter
 * is `400 invalid_request`, the request limit `413 request_too_large` on the first byte past it.
 */
import type { IncomingMessage } from 'node:http';
import { ServiceError } from '../errors/index.js';
import { appendAndFind } from '../native/delimit.js';

export interface PartHead {
  name: string;
  filename: string | undefined;
  /** The part's media type, lowercased, without parameters; `text/plain` when the header is absent. */
  mimetype: string;
}

/** What to do with a part's bytes, decided from its headers (which may refuse it by throwing). */
export type PartSink =
  /** Into one contiguous buffer from `alloc`, at most `limit` bytes (then `tooLarge()`). */
  | { kind: 'contiguous'; limit: number; sizeHint: number; tooLarge: () => ServiceError }
  /** Collected as chunks, at most `limit` bytes (then `tooLarge()`). */
  | { kind: 'collect'; limit: number; tooLarge: () => ServiceError }
  /**
   * Handed on chunk by chunk and never kept: `feed` consumes the bytes of the part and of its
   * delimiter, which it finds itself, and returns the index in the chunk just past the delimiter, or
   * -1 while the part goes on. The part is then read as empty bytes; the caller owns what `feed`
   * made of them (and frees it when the body fails).
   */
  | { kind: 'stream'; feed: (chunk: Buffer) => number };

export interface ReadPart {
  head: PartHead;
  bytes: Buffer;
}

export interface ReaderOptions {
  boundary: string;
  /** The whole body's limit: the first byte past it is `413 request_too_large`. */
  maxBytes: number;
  /** Decides from the part's headers and the parts read before it. */
  onPart(head: PartHead, earlier: readonly ReadPart[]): PartSink;
  /** Whether a part is a file (counted against maxFiles) rather than a field (maxFields). */
  isFile(head: PartHead): boolean;
  /** Buffers for contiguous parts: exactly `size` bytes on their own ArrayBuffer at offset 0. */
  alloc(size: number): Buffer;
  /** Gives back a buffer from `alloc` that is not returned (an error, or a grown buffer). */
  release(buf: Buffer): void;
  maxParts?: number;
  maxFiles?: number;
  maxFields?: number;
}

/** Header block limit per part (busboy's too). */
const MAX_HEADER_BYTES = 80 * 1024;
/** Transport padding after a delimiter, before its CRLF. */
const MAX_PADDING = 1024;
const CRLF = Buffer.from('\r\n');
const CRLFCRLF = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);

const malformed = (detail: string) => new ServiceError('invalid_request', detail);
export const UNTERMINATED = 'the multipart/form-data body ends before its closing boundary (--boundary--): a part is unterminated or the body is not multipart';
export const PREMATURE = 'the connection closed before the multipart/form-data body was complete';

/**
 * The boundary of a `multipart/form-data` Content-Type, or a 400 naming what is wrong with it.
 * RFC 2046: 1 to 70 characters, quoted or a token.
 */
export function boundaryOf(contentType: string | undefined): string {
  const m = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]*))/i.exec(contentType ?? '');
  const b = m ? (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!) : undefined;
  if (b === undefined || b === '') throw malformed('the multipart/form-data Content-Type has no boundary parameter (multipart/form-data; boundary=...)');
  if (b.length > 70) throw malformed('the multipart boundary parameter is invalid (1 to 70 characters)');
  return b;
}

/** `form-data; name="x"; filename="y"` → its type and parameters (quoted strings unescaped). */
function parseDisposition(value: string): { type: string; params: Map<string, string> } {
  const semi = value.indexOf(';');
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
  const params = new Map<string, string>();
  const re = /;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = m[1]!.toLowerCase();
    if (!params.has(key)) params.set(key, m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!.trim());
  }
  return { type, params };
}

/** RFC 5987 `utf-8''name%20x` (the `filename*` form). */
function extValue(v: string): string {
  const m = /^([^']*)'[^']*'(.*)$/.exec(v);
  if (!m) return v;
  try {
    return decodeURIComponent(m[2]!);
  } catch {
    return m[2]!;
  }
}

/** A part's header block (without the blank line) → its head, or null for a part to skip. */
function parseHeaders(block: Buffer): PartHead | null {
  const lines: string[] = [];
  for (const line of block.toString('utf8').split('\r\n')) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && lines.length > 0) lines[lines.length - 1] += ` ${line.trim()}`;
    else lines.push(line);
  }
  let disposition: string | undefined;
  let contentType: string | undefined;
  for (const line of lines) {
    if (line === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw malformed('a part of the multipart/form-data body has a malformed header');
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-disposition' && disposition === undefined) disposition = value;
    else if (key === 'content-type' && contentType === undefined) contentType = value;
  }
  if (disposition === undefined) return null;
  const d = parseDisposition(disposition);
  if (d.type !== 'form-data') return null;
  const name = d.params.get('name');
  if (name === undefined) throw malformed('a part of the multipart/form-data body has no name (Content-Disposition: form-data; name="...")');
  const star = d.params.get('filename*');
  const filename = star !== undefined ? extValue(star) : d.params.get('filename');
  const mimetype = contentType === undefined ? 'text/plain' : contentType.split(';')[0]!.trim().toLowerCase() || 'text/plain';
  return { name, filename, mimetype };
}

const enum State {
  Preamble,
  AfterDelimiter,
  Headers,
  Body,
  Epilogue,
}

/**
 * Reads the request's multipart body to its end: every part kept, in order, with its bytes. Rejects
 * with a ServiceError on the first problem and stops reading (the caller answers, and the error
 * handler closes or drains the connection).
 */
export function readMultipart(req: IncomingMessage, o: ReaderOptions): Promise<ReadPart[]> {
  const delimiter = Buffer.from(`\r\n--${o.boundary}`);
  const dl = delimiter.length;
  const maxParts = o.maxParts ?? 128;
  const maxFiles = o.maxFiles ?? 64;
  const maxFields = o.maxFields ?? 64;

  return new Promise<ReadPart[]>((resolve, reject) => {
    const parts: ReadPart[] = [];
    let files = 0;
    let fields = 0;
    let state = State.Preamble;
    // Bytes not yet consumed, from an earlier chunk: the stream is read as if it began with CRLF, so
    // that a first delimiter at the very start is found like every other.
    let carry: Buffer | null = Buffer.from(CRLF);
    let total = 0;
    let settled = false;

    // The part being read.
    let head: PartHead | null = null;
    let sink: PartSink | null = null;
    let skipping = false;
    let chunks: Buffer[] = [];
    let size = 0;
    // Contiguous parts: bytes [0, written) of `dest` hold the part so far, possibly followed by
    // the start of its delimiter.
    let dest: Buffer | null = null;
    let written = 0;
    /** Finished contiguous parts, given back if the body fails after them. */
    const owned: Buffer[] = [];

    const cleanup = () => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
      req.removeListener('aborted', onAborted);
      req.removeListener('close', onClose);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      if (dest) o.release(dest);
      dest = null;
      for (const b of owned) o.release(b);
      // The stream stays in flowing mode without a listener: whatever else the client sends is
      // dropped as it arrives (and a 413 closes the connection).
      reject(err);
    };

    const endPart = (bytes: Buffer) => {
      if (head && !skipping) parts.push({ head, bytes });
      head = null;
      sink = null;
      skipping = false;
      chunks = [];
      size = 0;
      dest = null;
      written = 0;
    };

    const startPart = (h: PartHead | null) => {
      if (h === null) {
        skipping = true;
        return;
      }
      if (parts.length + 1 > maxParts) throw new ServiceError('request_too_large', 'the multipart body has too many parts');
      const file = o.isFile(h);
      if (file && ++files > maxFiles) throw new ServiceError('request_too_large', 'the multipart body has too many parts');
      if (!file && ++fields > maxFields) throw new ServiceError('request_too_large', 'the multipart body has too many parts');
      head = h;
      sink = o.onPart(h, parts);
      if (sink.kind === 'contiguous') {
        dest = o.alloc(Math.max(1, Math.min(sink.sizeHint > 0 ? sink.sizeHint : 1 << 20, o.maxBytes + dl)));
        written = 0;
      }
    };

    /** Appends to a collected part, within its limit. */
    const collect = (buf: Buffer, from: number, to: number) => {
      if (to <= from || skipping) return;
      size += to - from;
      if (sink && sink.kind !== 'stream' && size > sink.limit) throw sink.tooLarge();
      // A view is enough when the chunk is not reused: chunks from the socket never are; the carry
      // is a fresh buffer each time.
      chunks.push(buf.subarray(from, to));
    };

    /**
     * Makes room for `n` more bytes in the contiguous part. The buffer grows only when
     * Content-Length was absent or short: the whole body is bounded by maxBytes (onData), so the
     * part is too.
     */
    const reserve = (n: number) => {
      if (written + n <= dest!.length) return;
      const grown = o.alloc(Math.max(written + n, Math.min(o.maxBytes + dl, dest!.length * 2)));
      dest!.copy(grown, 0, 0, written);
      o.release(dest!);
      dest = grown;
    };

    /** Runs the state machine over `buf` from `pos`; what it cannot decide yet becomes the carry. */
    const consume = (buf: Buffer, pos: number): void => {
      while (pos < buf.length || state === State.Epilogue) {
        switch (state) {
          case State.Preamble: {
            const at = buf.indexOf(delimiter, pos);
            if (at < 0) {
              carry = Buffer.from(buf.subarray(Math.max(pos, buf.length - (dl - 1))));
              return;
            }
            pos = at + dl;
            state = State.AfterDelimiter;
            break;
          }
          case State.AfterDelimiter: {
            if (buf.length - pos < 2) {
              carry = Buffer.from(buf.subarray(pos));
              return;
            }
            if (buf[pos] === 0x2d && buf[pos + 1] === 0x2d) {
              state = State.Epilogue;
              return;
            }
            const eol = buf.indexOf(CRLF, pos);
            // Without a CRLF yet, a CR at the very end may be the start of one.
            const end = eol >= 0 ? eol : buf[buf.length - 1] === 0x0d ? buf.length - 1 : buf.length;
            for (let i = pos; i < end; i++) {
              if (buf[i] !== 0x20 && buf[i] !== 0x09) throw malformed('a multipart boundary line is followed by something other than CRLF or --');
            }
            if (eol < 0) {
              if (buf.length - pos > MAX_PADDING) throw malformed('a multipart boundary line is followed by something other than CRLF or --');
              carry = Buffer.from(buf.subarray(pos));
              return;
            }
            pos = eol + 2;
            state = State.Headers;
            break;
          }
          case State.Headers: {
            // No headers at all: the blank line comes first.
            let blockEnd: number;
            let next: number;
            if (buf.length - pos >= 2 && buf[pos] === 0x0d && buf[pos + 1] === 0x0a) {
              blockEnd = pos;
              next = pos + 2;
            } else {
              const at = buf.indexOf(CRLFCRLF, pos);
              if (at < 0) {
                if (buf.length - pos > MAX_HEADER_BYTES) throw malformed('a part of the multipart/form-data body has a malformed header');
                carry = Buffer.from(buf.subarray(pos));
                return;
              }
              blockEnd = at;
              next = at + 4;
            }
            if (blockEnd - pos > MAX_HEADER_BYTES) throw malformed('a part of the multipart/form-data body has a malformed header');
            startPart(parseHeaders(buf.subarray(pos, blockEnd)));
            pos = next;
            state = State.Body;
            break;
          }
          case State.Body: {
            if (sink?.kind === 'stream') {
              const piece = pos === 0 ? buf : buf.subarray(pos);
              const past = sink.feed(piece);
              if (past < 0) return;
              endPart(EMPTY);
              state = State.AfterDelimiter;
              buf = piece;
              pos = past;
              break;
            }
            if (dest) {
              // Copied, then searched from where a delimiter that ends in these bytes can start.
              const n = buf.length - pos;
              reserve(n);
              const searchFrom = Math.max(0, written - (dl - 1));
              const end = appendAndFind(dest, written, pos === 0 ? buf : buf.subarray(pos), delimiter, searchFrom);
              written += n;
              if (end < 0) return;
              // What followed the delimiter in this chunk is read on as the next part.
              const rest = Buffer.from(dest.subarray(end + dl, written));
              const s = sink as Extract<PartSink, { kind: 'contiguous' }>;
              if (end > s.limit) throw s.tooLarge();
              const bytes = dest.subarray(0, end);
              owned.push(bytes);
              endPart(bytes);
              state = State.AfterDelimiter;
              buf = rest;
              pos = 0;
              break;
            }
            const at = buf.indexOf(delimiter, pos);
            if (at < 0) {
              const keep = Math.max(pos, buf.length - (dl - 1));
              collect(buf, pos, keep);
              carry = Buffer.from(buf.subarray(keep));
              return;
            }
            collect(buf, pos, at);
            endPart(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
            pos = at + dl;
            state = State.AfterDelimiter;
            break;
          }
          case State.Epilogue:
            return;
        }
      }
    };

    const onData = (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > o.maxBytes) return fail(new ServiceError('request_too_large', `the request body is larger than the limit of ${o.maxBytes} bytes`, { headers: { connection: 'close' } }));
      if (state === State.Epilogue) return;
      try {
        let buf = chunk;
        if (carry && carry.length > 0) buf = Buffer.concat([carry, chunk]);
        carry = null;
        consume(buf, 0);
      } catch (err) {
        fail(err);
      }
    };
    const onEnd = () => {
      if (settled) return;
      if (state !== State.Epilogue) return fail(malformed(UNTERMINATED));
      settled = true;
      cleanup();
      resolve(parts);
    };
    const onError = (err: Error) => fail(Object.assign(new ServiceError('invalid_request', PREMATURE), { cause: err }));
    const onAborted = () => fail(new ServiceError('invalid_request', PREMATURE));
    const onClose = () => {
      if (!req.complete) onAborted();
    };
    if (req.destroyed || req.readableAborted) return fail(new ServiceError('invalid_request', PREMATURE));
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('aborted', onAborted);
    req.once('close', onClose);
  });
}
