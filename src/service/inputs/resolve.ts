/**
 * The one normalization step for image inputs (contract §4): an upload, raw base64, a data URI, a
 * remote URL or a `file:` path becomes image bytes; then byte limit → header probe → pixel limit,
 * before anything is forwarded (the model server never sees an oversized or unknown image).
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { isAbsolute, sep } from 'node:path';
import { ServiceError } from '../../errors/index.js';
import { probeImage } from '../../native/image.js';
import type { RemoteFetcher } from './remote-fetch.js';
import type { PixelBudget } from './pixel-budget.js';
import type { FetchMeter } from '../limits/fetch-budget.js';

/** Prefix of the placeholder the multipart parser puts where a file part was; never valid base64. */
export const UPLOAD_MARK = '\u0000upload:';

export interface InputSettings {
  remoteImages: 'off' | 'allowlist' | 'public';
  localImagesRoot: string;
  maxImageBytes: number;
  maxImagePixels: number;
}

export interface InputContext {
  /** File parts of a multipart request, by placeholder. */
  uploads?: Map<string, Buffer>;
  /** Remote URLs are allowed only on authenticated requests. */
  authenticated: boolean;
  /** The caller's budget of remote fetches (src/service/limits/fetch-budget.ts). */
  fetches?: FetchMeter;
}

export type InputMode = 'upload' | 'base64' | 'data_uri' | 'url' | 'file';

export function inputModes(s: InputSettings): InputMode[] {
  const m: InputMode[] = ['upload', 'base64', 'data_uri'];
  if (s.remoteImages !== 'off') m.push('url');
  if (s.localImagesRoot) m.push('file');
  return m;
}

const B64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function decodeBase64(data: string, field: string, maxBytes: number): Buffer {
  const clean = data.replace(/\s+/g, '');
  if (clean.length === 0) throw new ServiceError('invalid_image', `${field} is empty`);
  if (!B64.test(clean)) throw new ServiceError('invalid_image', `${field} is not a supported image input (base64, data URI${''}, URL or file: path)`);
  // Checked before decoding: 4 base64 chars carry 3 bytes.
  if (Math.floor((clean.length * 3) / 4) - 2 > maxBytes) throw new ServiceError('image_too_large', `${field} is larger than ${maxBytes} bytes after base64 decoding`);
  return Buffer.from(clean, clean.includes('-') || clean.includes('_') ? 'base64url' : 'base64');
}

export class ImageResolver {
  constructor(private readonly s: InputSettings, private readonly fetcher: RemoteFetcher | null) {}

  /** The image's bytes, checked; its decoded pixels count against the request's `budget`. */
  async resolve(value: string, field: string, ctx: InputContext, budget?: PixelBudget): Promise<Buffer> {
    const bytes = await this.bytes(value, field, ctx);
    const pixels = this.check(bytes, field);
    budget?.add(pixels, field);
    return bytes;
  }

  /** Byte limit, then the decoded-pixel limit from the header (no pixel buffer is allocated); the pixels. */
  check(bytes: Buffer, field: string): number {
    if (bytes.length > this.s.maxImageBytes) throw new ServiceError('image_too_large', `${field} is larger than ${this.s.maxImageBytes} bytes`);
    let p;
    try {
      p = probeImage(bytes);
    } catch (err) {
      if (err instanceof ServiceError) throw new ServiceError(err.code, `${field}: ${err.detail}`, { cause: err });
      throw err;
    }
    if (p.width * p.height > this.s.maxImagePixels) {
      throw new ServiceError('too_many_pixels', `${field} is ${p.width}x${p.height} pixels, more than the limit of ${this.s.maxImagePixels}`);
    }
    return p.width * p.height;
  }

  private async bytes(value: string, field: string, ctx: InputContext): Promise<Buffer> {
    if (value.startsWith(UPLOAD_MARK)) {
      const b = ctx.uploads?.get(value);
      if (!b) throw new ServiceError('invalid_image', `${field} is not a supported image input`);
      return b;
    }
    if (/^data:/i.test(value)) {
      const m = /^data:image\/[a-z0-9.+-]+;base64,(.*)$/is.exec(value);
      if (!m) throw new ServiceError('invalid_image', `${field}: data URIs must be data:image/<format>;base64,<data>`);
      return decodeBase64(m[1]!, field, this.s.maxImageBytes);
    }
    if (/^https?:\/\//i.test(value)) {
      if (this.s.remoteImages === 'off' || !this.fetcher) throw new ServiceError('input_mode_disabled', `${field}: remote image URLs are disabled on this service`);
      if (!ctx.authenticated) throw new ServiceError('input_mode_disabled', `${field}: remote image URLs need an authenticated request`);
      await ctx.fetches?.admit();
      const received = { bytes: 0 };
      try {
        return (await this.fetcher.fetch(value, received)).bytes;
      } finally {
        await ctx.fetches?.spent(received.bytes);
      }
    }
    if (/^file:/i.test(value)) return this.local(value, field);
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) throw new ServiceError('url_not_allowed', `${field}: only http(s) URLs are supported`);
    return decodeBase64(value, field, this.s.maxImageBytes);
  }

  private async local(value: string, field: string): Promise<Buffer> {
    const root = this.s.localImagesRoot;
    if (!root) throw new ServiceError('input_mode_disabled', `${field}: file: inputs are disabled on this service`);
    let p = value.slice(5);
    if (p.startsWith('//')) {
      // file:///abs/path (empty authority) only
      if (!p.startsWith('///')) throw new ServiceError('url_not_allowed', `${field}: file: URLs with a host are not allowed`);
      p = p.slice(2);
    }
    try {
      p = decodeURIComponent(p);
    } catch {
      throw new ServiceError('invalid_request', `${field}: malformed file: path`);
    }
    if (p.includes('\u0000')) throw new ServiceError('invalid_request', `${field}: malformed file: path`);
    return readLocalImage(root, p, this.s.maxImageBytes, field);
  }
}

/**
 * One refusal for every path that is not served, whatever the reason (missing, outside the root,
 * a symbolic link, a directory, a device, unreadable): a caller cannot tell an existing file outside
 * the root from a missing one (two answers would be an existence oracle).
 */
function notServed(field: string): ServiceError {
  return new ServiceError('url_not_allowed', `${field}: file: paths must name a readable regular file inside the local images root, reached without symbolic links`);
}

/**
 * The components of `p` below `root`: `p` relative to the root, or absolute and inside it as
 * written. `.` and empty components are dropped; `..` is refused (the walk never goes up).
 */
function componentsBelow(root: string, p: string, field: string): string[] {
  let rel = p;
  if (isAbsolute(p)) {
    const prefix = root.endsWith(sep) ? root : root + sep;
    if (!p.startsWith(prefix)) throw notServed(field);
    rel = p.slice(prefix.length);
  }
  const parts = rel.split(sep).filter((c) => c !== '' && c !== '.');
  if (parts.length === 0 || parts.includes('..')) throw notServed(field);
  return parts;
}

const READ_CHUNK = 64 * 1024;

/**
 * Opens `p` under `root` without following any symbolic link, and reads at most `maxBytes` + 1 of it.
 * Node has no openat(2), so the walk goes through /proc/self/fd (Linux): each component is opened
 * relative to the directory opened before it, as /proc/self/fd/<dir fd>/<component>, with O_NOFOLLOW
 * (a symbolic link there fails with ELOOP) and O_DIRECTORY for the directories on the way, so no
 * component can be swapped for a link between a check and the open. The last one is opened with
 * O_NONBLOCK (a FIFO cannot hold the thread pool) and must be a regular file by fstat of the
 * descriptor read from. The root itself is the operator's (FACECOMPUTE_LOCAL_IMAGES_ROOT) and may be
 * a link. Without /proc every path is refused.
 */
export async function readLocalImage(root: string, p: string, maxBytes: number, field: string): Promise<Buffer> {
  const parts = componentsBelow(root, p, field);
  const opened: FileHandle[] = [];
  try {
    let dir = await open(root, constants.O_RDONLY | constants.O_DIRECTORY);
    opened.push(dir);
    for (const [i, part] of parts.entries()) {
      const last = i === parts.length - 1;
      const flags = constants.O_RDONLY | constants.O_NOFOLLOW | (last ? constants.O_NONBLOCK : constants.O_DIRECTORY);
      dir = await open(`/proc/self/fd/${dir.fd}/${part}`, flags);
      opened.push(dir);
    }
    const file = dir;
    if (!(await file.stat()).isFile()) throw notServed(field);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) throw new ServiceError('image_too_large', `${field} is larger than ${maxBytes} bytes`);
    }
    return Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    throw notServed(field);
  } finally {
    for (const h of opened) await h.close().catch(() => undefined);
  }
}
