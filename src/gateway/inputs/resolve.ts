/**
 * The one normalization step for image inputs (contract §4): an upload, raw base64, a data URI, a
 * remote URL or a `file:` path becomes image bytes; then byte limit → header probe → pixel limit,
 * before anything is forwarded (the model server never sees an oversized or unknown image).
 */
import { realpath, stat, readFile } from 'node:fs/promises';
import { isAbsolute, resolve, sep } from 'node:path';
import { ServiceError } from '../../errors/index.js';
import { probeImage } from '../../core/image.js';
import type { RemoteFetcher } from './remote-fetch.js';
import type { PixelBudget } from './pixel-budget.js';

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
      return (await this.fetcher.fetch(value)).bytes;
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
    const rootReal = await realpath(root).catch(() => root);
    const candidate = isAbsolute(p) ? p : resolve(rootReal, p);
    let real: string;
    try {
      real = await realpath(candidate);
    } catch {
      throw new ServiceError('invalid_image', `${field}: no such file under the local images root`);
    }
    if (real !== rootReal && !real.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep)) {
      throw new ServiceError('url_not_allowed', `${field}: the path is outside the local images root`);
    }
    const st = await stat(real);
    if (!st.isFile()) throw new ServiceError('invalid_image', `${field}: not a regular file`);
    if (st.size > this.s.maxImageBytes) throw new ServiceError('image_too_large', `${field} is larger than ${this.s.maxImageBytes} bytes`);
    return readFile(real);
  }
}
