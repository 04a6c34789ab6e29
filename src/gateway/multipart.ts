/**
 * multipart/form-data bodies: file parts carry images, text parts the other fields. The parts are
 * turned into the same object a JSON body would be, then validated by the same schema. File bytes are
 * kept beside the body; the body holds a placeholder (UPLOAD_MARK…) that only this request can resolve.
 */
import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { ServiceError } from '../errors/index.js';
import { MULTIPART_FIELD_KIND } from '../vocabulary/schemas.js';
import { UPLOAD_MARK } from '../service/inputs/resolve.js';
import { nonFiniteAtParseError } from '../http/json-body.js';
import type { BufferPool } from '../service/buffer-pool.js';
import { boundaryOf, readMultipart, type PartHead, type PartSink, type ReadPart } from './multipart-reader.js';
import { TargetStream, type StreamPlan } from '../native/compare-stream.js';

/**
 * Decides, from the fields read before a binary `targets` part, whether its rows can be compared as
 * they arrive (src/service/compute-service.ts); null keeps the part in one buffer.
 */
export type PlanStream = (fieldsBefore: Record<string, unknown>) => StreamPlan | null;

export interface MultipartBody {
  body: Record<string, unknown>;
  uploads: Map<string, Buffer>;
  /**
   * The raw bytes of a `targets` file part (application/octet-stream, little-endian float32, N×dims),
   * 4-byte aligned so that the comparison reads them in place. Never part of `body`: the JSON
   * Schema describes JSON values only.
   */
  binaryTargets?: Uint8Array;
  /** The `targets` part compared while it arrived, instead of `binaryTargets`. */
  streamedTargets?: TargetStream;
}

/**
 * The parts as a body; a malformed envelope (no boundary, a body that never reaches its closing
 * boundary, bytes that are not multipart at all) is the caller's `400 invalid_request`, not ours.
 */
export async function parseMultipart(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number, pool?: BufferPool, reader: 'busboy' | 'stream' = 'busboy', planStream?: PlanStream): Promise<MultipartBody> {
  try {
    return await (reader === 'stream' ? streamParts(req, maxImageBytes, maxRequestBytes, pool, planStream) : collectParts(req, maxImageBytes, maxRequestBytes, pool));
  } catch (err) {
    throw malformedMultipart(err);
  }
}

/**
 * What the multipart parser (busboy, under @fastify/multipart) threw, as a contract error. Our own
 * ServiceErrors and the plugin's coded errors (limits, mapped in errors.ts) pass through; busboy's
 * errors are plain Errors, told apart by their messages.
 */
export function malformedMultipart(err: unknown): unknown {
  if (err instanceof ServiceError) return err;
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && e.code.startsWith('FST_') && e.code !== 'FST_MP_PREMATURE_CLOSE') return err;
  const message = typeof e?.message === 'string' ? e.message : '';
  let detail = 'the multipart/form-data body is malformed';
  if (e?.code === 'FST_MP_PREMATURE_CLOSE') detail = 'the connection closed before the multipart/form-data body was complete';
  else if (/boundary not found|boundary required/i.test(message)) detail = 'the multipart/form-data Content-Type has no boundary parameter (multipart/form-data; boundary=...)';
  else if (/needle/i.test(message)) detail = 'the multipart boundary parameter is invalid (1 to 70 characters)';
  else if (/unexpected end|terminated early/i.test(message)) detail = 'the multipart/form-data body ends before its closing boundary (--boundary--): a part is unterminated or the body is not multipart';
  else if (/header/i.test(message)) detail = 'a part of the multipart/form-data body has a malformed header';
  return new ServiceError('invalid_request', detail, { cause: err });
}

/**
 * Which parts are files. RFC 7578 makes the filename optional, and clients that follow the OpenAPI
 * document's `encoding` (an image content type per image part) often send none; busboy's default
 * would read such a part as UTF-8 text and corrupt the image. A part is a file when it has a filename
 * or a content type other than text/* and application/json (busboy reports text/plain where the
 * header is absent; `source` and `targets` may be JSON text parts typed as such).
 */
export function isPartAFile(_name: string | undefined, contentType: string | undefined, filename: string | undefined): boolean {
  if (filename !== undefined) return true;
  const type = (contentType ?? 'text/plain').toLowerCase();
  return !type.startsWith('text/') && type !== 'application/json';
}

/**
 * Turns parts into the body: the same rules whichever reader found them. Checks that need only a
 * part's headers (`headOf`) run before its bytes are read.
 */
class PartCollector {
  readonly body: Record<string, unknown> = {};
  readonly uploads = new Map<string, Buffer>();
  binaryTargets: Uint8Array | undefined;
  streamedTargets: TargetStream | undefined;
  total = 0;

  constructor(
    private readonly maxImageBytes: number,
    private readonly maxRequestBytes: number,
  ) {}

  /** Refuses a part by its name and type alone; says whether it is the binary targets. */
  headOf(name: string, isFile: boolean, mimetype: string): 'targets' | 'file' | 'field' {
    if (name === '__proto__' || name === 'constructor' || name === 'prototype') throw new ServiceError('invalid_request', `field '${name}' is not allowed`);
    if (!isFile) return 'field';
    if (name !== 'targets') return 'file';
    if (this.binaryTargets || this.streamedTargets) throw new ServiceError('invalid_request', "field 'targets' is given more than once");
    if (mimetype !== 'application/octet-stream') {
      throw new ServiceError('invalid_request', `the targets file part must be application/octet-stream (little-endian float32, row-major), not ${JSON.stringify(mimetype.slice(0, 60))}`);
    }
    return 'targets';
  }

  targets(bytes: Uint8Array): void {
    this.headOf('targets', true, 'application/octet-stream');
    this.binaryTargets = bytes;
    this.total += bytes.byteLength;
  }

  streamed(s: TargetStream): void {
    this.headOf('targets', true, 'application/octet-stream');
    this.streamedTargets = s;
    this.total += s.byteLength;
  }

  file(name: string, buf: Buffer): void {
    this.total += buf.length;
    if (this.total > this.maxRequestBytes) throw new ServiceError('request_too_large', 'the request body is larger than the limit');
    const kind = MULTIPART_FIELD_KIND[name];
    if (kind !== 'image' && name !== 'source') throw new ServiceError('invalid_request', `file part '${name}' is not an image field (img, img1, img2 or source) nor the binary targets of /compare`);
    const mark = `${UPLOAD_MARK}${this.uploads.size}`;
    this.uploads.set(mark, buf);
    this.add(name, mark, name === 'img');
  }

  field(name: string, raw: string): void {
    this.total += raw.length;
    if (this.total > this.maxRequestBytes) throw new ServiceError('request_too_large', 'the request body is larger than the limit');
    const kind = MULTIPART_FIELD_KIND[name];
    let value: unknown = raw;
    if (kind === 'number') {
      value = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(raw.trim()) ? Number(raw) : raw;
    } else if (kind === 'bool') {
      if (!['true', 'false', '1', '0'].includes(raw)) throw new ServiceError('invalid_request', `field '${name}' must be true, false, 1 or 0 in a multipart body`);
    } else if (kind === 'json') {
      try {
        value = JSON.parse(raw);
      } catch (err) {
        if (nonFiniteAtParseError(raw, err)) throw new ServiceError('invalid_embedding', `field '${name}' holds NaN or Infinity: every embedding value must be a finite number`);
        throw new ServiceError('invalid_request', `field '${name}' must be valid JSON in a multipart text part (typed text/plain, application/json or untyped)`);
      }
    } else if (kind === 'image' && /^\s*\[/.test(raw)) {
      // an embedding sent as a text part
      try {
        value = JSON.parse(raw);
      } catch (err) {
        if (nonFiniteAtParseError(raw, err)) throw new ServiceError('invalid_embedding', `field '${name}' holds NaN or Infinity: every embedding value must be a finite number`);
        throw new ServiceError('invalid_request', `field '${name}' is not valid JSON`);
      }
    }
    this.add(name, value, name === 'img');
  }

  result(): MultipartBody {
    return {
      body: this.body,
      uploads: this.uploads,
      ...(this.binaryTargets ? { binaryTargets: this.binaryTargets } : {}),
      ...(this.streamedTargets ? { streamedTargets: this.streamedTargets } : {}),
    };
  }

  private add(name: string, value: unknown, repeatable: boolean): void {
    if (name === 'source' && typeof value === 'string' && value.startsWith(UPLOAD_MARK)) value = { img: value };
    if (Object.prototype.hasOwnProperty.call(this.body, name)) {
      if (!repeatable) throw new ServiceError('invalid_request', `field '${name}' is given more than once`);
      const prev = this.body[name];
      this.body[name] = Array.isArray(prev) ? [...prev, value] : [prev, value];
    } else this.body[name] = value;
  }
}

/** Through busboy (@fastify/multipart): /verify and /represent, whose parts are images. */
async function collectParts(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number, pool?: BufferPool): Promise<MultipartBody> {
  const c = new PartCollector(maxImageBytes, maxRequestBytes);
  const declared = Number(req.headers['content-length'] ?? NaN);
  // File parts are counted as they stream (readFilePart), so the busboy cap only has to stay out of
  // the way: the targets part may be as large as the whole request.
  for await (const part of req.parts({ isPartAFile, limits: { fileSize: Math.max(maxImageBytes, maxRequestBytes) + 1, files: 64, fields: 64, parts: 128, fieldSize: maxRequestBytes } })) {
    const name = part.fieldname;
    const kind = c.headOf(name, part.type === 'file', part.type === 'file' ? part.mimetype : '');
    if (kind === 'targets' && part.type === 'file') {
      // The whole request's declared length bounds the part: one allocation, no copy of chunks.
      const hint = Number.isFinite(declared) && declared > 0 ? Math.min(declared, maxRequestBytes - c.total) : 0;
      c.targets(await readFilePart(part.file, maxRequestBytes - c.total, hint, () => new ServiceError('request_too_large', `the request body is larger than the limit of ${maxRequestBytes} bytes`), pool));
      continue;
    }
    if (part.type === 'file') {
      const bytes = await readFilePart(part.file, maxImageBytes, 0, () => new ServiceError('image_too_large', `an uploaded file is larger than the image limit of ${maxImageBytes} bytes`));
      c.file(name, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      continue;
    }
    // @fastify/multipart has already parsed a part typed application/json; the field kinds
    // decide what each field holds, from its text, whatever the part's type.
    c.field(name, typeof part.value === 'string' ? part.value : part.value === undefined ? '' : JSON.stringify(part.value));
  }
  return c.result();
}

/**
 * A text part's value as the busboy path sees it: @fastify/multipart parses a part typed
 * application/json (refusing it when it is not JSON) and the collector re-reads its text.
 */
function jsonTypedText(mimetype: string, raw: string): string {
  if (mimetype !== 'application/json') return raw;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    if (nonFiniteAtParseError(raw, err)) throw new ServiceError('invalid_embedding', 'a multipart text part typed application/json holds NaN or Infinity: every embedding value must be a finite number');
    throw new ServiceError('invalid_request', 'a multipart text part typed application/json does not hold valid JSON');
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Through our own reader (multipart-reader.ts): /compare, whose binary targets part is either
 * compared as it arrives (when `planStream` accepts the fields read before it: no copy at all) or
 * copied once into one buffer (from `pool`, sized from Content-Length) and searched for its end
 * natively.
 */
async function streamParts(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number, pool?: BufferPool, planStream?: PlanStream): Promise<MultipartBody> {
  const c = new PartCollector(maxImageBytes, maxRequestBytes);
  const declared = Number(req.headers['content-length'] ?? NaN);
  const kinds = new Map<PartHead, 'targets' | 'file' | 'field'>();
  const streams = new Map<PartHead, TargetStream>();
  const isFile = (h: PartHead) => isPartAFile(h.name, h.mimetype, h.filename);
  const boundary = boundaryOf(req.headers['content-type']);

  /** A streamed comparison when the text fields before the part say all it needs, else null. */
  const startStream = (earlier: readonly ReadPart[]): TargetStream | null => {
    if (!planStream) return null;
    const before = new PartCollector(maxImageBytes, maxRequestBytes);
    try {
      for (const { head, bytes } of earlier) {
        // An image source needs the model server first; an earlier targets part is an error.
        if (kinds.get(head) !== 'field') return null;
        before.field(head.name, jsonTypedText(head.mimetype, bytes.toString('utf8')));
      }
      const plan = planStream(before.body);
      return plan ? new TargetStream(plan, Buffer.from(`\r\n--${boundary}`)) : null;
    } catch {
      // Whatever is wrong with those fields is reported, as usual, once the body is read.
      return null;
    }
  };

  let parts: ReadPart[];
  try {
    parts = await readMultipart(req.raw, {
      boundary,
      maxBytes: maxRequestBytes,
      isFile,
      alloc: (n) => (pool ? pool.acquire(n) : Buffer.allocUnsafeSlow(n)),
      release: (b) => pool?.release(b),
      onPart(h, earlier): PartSink {
        const kind = c.headOf(h.name, isFile(h), h.mimetype);
        kinds.set(h, kind);
        if (kind === 'targets') {
          const s = startStream(earlier);
          if (s) {
            streams.set(h, s);
            return { kind: 'stream', feed: (chunk) => s.feed(chunk) };
          }
          const tooLarge = () => new ServiceError('request_too_large', `the request body is larger than the limit of ${maxRequestBytes} bytes`);
          return { kind: 'contiguous', limit: maxRequestBytes, sizeHint: Number.isFinite(declared) && declared > 0 ? Math.min(declared, maxRequestBytes) : 0, tooLarge };
        }
        if (kind === 'file') return { kind: 'collect', limit: maxImageBytes, tooLarge: () => new ServiceError('image_too_large', `an uploaded file is larger than the image limit of ${maxImageBytes} bytes`) };
        return { kind: 'collect', limit: maxRequestBytes, tooLarge: () => new ServiceError('request_too_large', 'the request body is larger than the limit') };
      },
    });
  } catch (err) {
    for (const s of streams.values()) s.close();
    throw err;
  }
  try {
    for (const { head, bytes } of parts) {
      const kind = kinds.get(head);
      const s = streams.get(head);
      if (s) c.streamed(s);
      else if (kind === 'targets') c.targets(bytes);
      else if (kind === 'file') c.file(head.name, bytes);
      else c.field(head.name, jsonTypedText(head.mimetype, bytes.toString('utf8')));
    }
  } catch (err) {
    for (const s of streams.values()) s.close();
    for (const p of parts) if (kinds.get(p.head) === 'targets' && !streams.has(p.head)) pool?.release(p.bytes);
    throw err;
  }
  return c.result();
}

/**
 * Reads a file part, refusing it (`tooLarge()`) on the first chunk past `limit`, so that an oversized
 * part is never buffered in full. With a size hint (the request's Content-Length) the bytes land in
 * one preallocated, uninitialised buffer (from `pool`, which the caller refills with `release`);
 * otherwise the chunks are joined once at the end. The result
 * always starts on its own ArrayBuffer (offset 0), so float32 data can be viewed in place. 'data'
 * events, not `for await`: the async iterator costs a promise per chunk, which was most of the time
 * of a 50 MB part.
 */
function readFilePart(stream: Readable, limit: number, hint: number, tooLarge: () => ServiceError, pool?: BufferPool): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const alloc = (n: number) => (pool ? pool.acquire(n) : Buffer.allocUnsafeSlow(n));
    let out: Buffer | null = hint > 0 ? alloc(hint) : null;
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      if (out) pool?.release(out);
      stream.removeAllListeners('data');
      stream.resume();
      reject(err);
    };
    // busboy destroys a part's stream without 'end' or 'error' when the body around it is malformed
    // or the client goes away: without this the read would wait forever.
    const premature = () => Object.assign(new Error('the part closed before its end'), { code: 'FST_MP_PREMATURE_CLOSE' });
    stream.once('close', () => fail(premature()));
    // A small body can be parsed in full before the part reaches us: its error (or destruction)
    // has then already been emitted.
    if (stream.errored) return fail(stream.errored);
    if (stream.destroyed) return fail(premature());
    stream.on('data', (chunk: Buffer) => {
      if (length + chunk.length > limit) return fail(tooLarge());
      if (out && length + chunk.length <= out.length) chunk.copy(out, length);
      else {
        if (out) {
          // The hint was short (it should not be): fall back to collecting chunks.
          chunks.push(out.subarray(0, length));
          out = null;
        }
        chunks.push(chunk);
      }
      length += chunk.length;
    });
    stream.once('error', fail);
    stream.once('end', () => {
      if (settled) return;
      settled = true;
      if (out) return resolve(out.subarray(0, length));
      const joined = alloc(length);
      let at = 0;
      for (const c of chunks) {
        c.copy(joined, at);
        at += c.length;
      }
      resolve(joined);
    });
  });
}
