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
import type { CompareTargets } from '../service/compare-targets.js';
import type { TargetStream } from '../native/compare-stream.js';
import { boundaryOf, readMultipart, type PartHead, type PartSink, type ReadPart } from './multipart-reader.js';

export interface MultipartBody {
  body: Record<string, unknown>;
  uploads: Map<string, Buffer>;
}

/**
 * The body of /verify or /represent, whose parts are images and fields, read through busboy
 * (@fastify/multipart). A binary `targets` part is read (and counted against the limit) but refused:
 * only /compare takes one. A malformed envelope (no boundary, a body that never reaches its closing
 * boundary, bytes that are not multipart at all) is the caller's `400 invalid_request`, not ours.
 */
export async function readImageMultipart(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number): Promise<MultipartBody> {
  try {
    return await collectParts(req, maxImageBytes, maxRequestBytes);
  } catch (err) {
    throw malformedMultipart(err);
  }
}

/**
 * The body of /compare, read by our own reader (multipart-reader.ts): its binary `targets` part,
 * most of the body, goes to `targets` (src/service/compare-targets.ts), which owns it from then on,
 * whether the body turns out well or not. Errors as readImageMultipart's.
 */
export async function readCompareMultipart(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number, targets: CompareTargets): Promise<MultipartBody> {
  try {
    return await streamParts(req, maxImageBytes, maxRequestBytes, targets);
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
  /** A binary `targets` part was taken (its bytes are the CompareTargets' or refused). */
  hasTargets = false;
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
    if (this.hasTargets) throw new ServiceError('invalid_request', "field 'targets' is given more than once");
    if (mimetype !== 'application/octet-stream') {
      throw new ServiceError('invalid_request', `the targets file part must be application/octet-stream (little-endian float32, row-major), not ${JSON.stringify(mimetype.slice(0, 60))}`);
    }
    return 'targets';
  }

  /** A binary `targets` part of `byteLength` bytes (kept in a buffer, or compared as it arrived). */
  targets(byteLength: number): void {
    this.headOf('targets', true, 'application/octet-stream');
    this.hasTargets = true;
    this.total += byteLength;
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
    return { body: this.body, uploads: this.uploads };
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
async function collectParts(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number): Promise<MultipartBody> {
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
      c.targets((await readFilePart(part.file, maxRequestBytes - c.total, hint, () => new ServiceError('request_too_large', `the request body is larger than the limit of ${maxRequestBytes} bytes`))).byteLength);
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
  if (c.hasTargets) throw new ServiceError('invalid_request', "a binary 'targets' part is only accepted by /compare");
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
 * compared as it arrives (when `targets` plans a stream from the fields read before it: no copy at
 * all) or copied once into one buffer (from `targets`' pool, sized from Content-Length) and searched
 * for its end natively.
 */
async function streamParts(req: FastifyRequest, maxImageBytes: number, maxRequestBytes: number, targets: CompareTargets): Promise<MultipartBody> {
  const c = new PartCollector(maxImageBytes, maxRequestBytes);
  const declared = Number(req.headers['content-length'] ?? NaN);
  const kinds = new Map<PartHead, 'targets' | 'file' | 'field'>();
  const streamed = new Map<PartHead, TargetStream>();
  const isFile = (h: PartHead) => isPartAFile(h.name, h.mimetype, h.filename);
  const boundary = boundaryOf(req.headers['content-type']);

  /** The text fields before the part, as a body, or null when an earlier part is not a field. */
  const fieldsBefore = (earlier: readonly ReadPart[]): Record<string, unknown> | null => {
    const before = new PartCollector(maxImageBytes, maxRequestBytes);
    try {
      for (const { head, bytes } of earlier) {
        // An image source needs the model server first; an earlier targets part is an error.
        if (kinds.get(head) !== 'field') return null;
        before.field(head.name, jsonTypedText(head.mimetype, bytes.toString('utf8')));
      }
      return before.body;
    } catch {
      // Whatever is wrong with those fields is reported, as usual, once the body is read.
      return null;
    }
  };

  const parts = await readMultipart(req.raw, {
    boundary,
    maxBytes: maxRequestBytes,
    isFile,
    alloc: (n) => targets.alloc(n),
    release: (b) => targets.discard(b),
    onPart(h, earlier): PartSink {
      const kind = c.headOf(h.name, isFile(h), h.mimetype);
      kinds.set(h, kind);
      if (kind === 'targets') {
        const fields = fieldsBefore(earlier);
        // The stream is `targets`' from here: it frees it however the body ends.
        const s = fields ? targets.openStream(fields, Buffer.from(`\r\n--${boundary}`)) : null;
        if (s) {
          streamed.set(h, s);
          return { kind: 'stream', feed: (chunk) => s.feed(chunk) };
        }
        const tooLarge = () => new ServiceError('request_too_large', `the request body is larger than the limit of ${maxRequestBytes} bytes`);
        return { kind: 'contiguous', limit: maxRequestBytes, sizeHint: Number.isFinite(declared) && declared > 0 ? Math.min(declared, maxRequestBytes) : 0, tooLarge };
      }
      if (kind === 'file') return { kind: 'collect', limit: maxImageBytes, tooLarge: () => new ServiceError('image_too_large', `an uploaded file is larger than the image limit of ${maxImageBytes} bytes`) };
      return { kind: 'collect', limit: maxRequestBytes, tooLarge: () => new ServiceError('request_too_large', 'the request body is larger than the limit') };
    },
  });
  // Every contiguous targets part is `targets`' before any check can refuse the body.
  for (const p of parts) if (kinds.get(p.head) === 'targets' && !streamed.has(p.head)) targets.adopt(p.bytes);
  for (const { head, bytes } of parts) {
    const kind = kinds.get(head);
    if (kind === 'targets') c.targets(streamed.get(head)?.byteLength ?? bytes.byteLength);
    else if (kind === 'file') c.file(head.name, bytes);
    else c.field(head.name, jsonTypedText(head.mimetype, bytes.toString('utf8')));
  }
  return c.result();
}

/**
 * Reads a file part, refusing it (`tooLarge()`) on the first chunk past `limit`, so that an oversized
 * part is never buffered in full. With a size hint (the request's Content-Length) the bytes land in
 * one preallocated, uninitialised buffer; otherwise the chunks are joined once at the end. The result
 * always starts on its own ArrayBuffer (offset 0), so float32 data can be viewed in place. 'data'
 * events, not `for await`: the async iterator costs a promise per chunk, which was most of the time
 * of a 50 MB part.
 */
function readFilePart(stream: Readable, limit: number, hint: number, tooLarge: () => ServiceError): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const alloc = (n: number) => Buffer.allocUnsafeSlow(n);
    let out: Buffer | null = hint > 0 ? alloc(hint) : null;
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
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
