/**
 * What a caller passes as an image, an embedding or targets, turned into what goes on the wire.
 *
 * An image is either bytes for a multipart file part (a path, a Buffer or Uint8Array, an ArrayBuffer,
 * a Blob) or a string the service reads itself (a data: URI, raw base64, `file:<path>`). A URL
 * (an http(s) string or a URL object) is fetched by the client (`remoteImages: 'fetch'`, the default:
 * the service refuses URLs unless its operator enabled remote images) or passed on as a string
 * (`'service'`).
 */
// No node: import at the top: the package loads in a browser. node:fs/promises is imported only when a
// string input may be a path (isFile / readPath), which is Node-only anyway.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';

export type ImageInput = string | URL | Uint8Array | ArrayBuffer | Blob;
export type EmbeddingInput = number[] | Float32Array | Float64Array;
export type TargetsInput = Float32Array | number[][] | ArrayBuffer | Uint8Array;

export interface FileImage {
  kind: 'file';
  data: Blob;
  filename: string;
}
export interface TextImage {
  kind: 'text';
  value: string;
}
export interface RemoteImage {
  kind: 'remote';
  url: string;
}
export interface Embedding {
  kind: 'embedding';
  values: number[];
}
export type Image = FileImage | TextImage | RemoteImage;

const BASE64 = /^[A-Za-z0-9+/\s]+={0,2}\s*$/;

export function isEmbedding(v: unknown): v is EmbeddingInput {
  if (v instanceof Float32Array || v instanceof Float64Array) return true;
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number');
}

export function embedding(v: EmbeddingInput): Embedding {
  return { kind: 'embedding', values: Array.from(v) };
}

export function sniffType(b: Uint8Array): string {
  const at = (i: number) => b[i] ?? -1;
  if (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return 'image/jpeg';
  if (at(0) === 0x89 && at(1) === 0x50 && at(2) === 0x4e && at(3) === 0x47) return 'image/png';
  const ascii = (s: number, e: number) => String.fromCharCode(...b.subarray(s, e));
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  if (ascii(0, 4) === 'GIF8') return 'image/gif';
  if (ascii(0, 2) === 'BM') return 'image/bmp';
  return 'application/octet-stream';
}

const EXT: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp', 'image/gif': 'gif', 'image/bmp': 'bmp' };

export function fileImage(bytes: Uint8Array, name: string): FileImage {
  const type = sniffType(bytes);
  return { kind: 'file', data: new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), filename: `${name}.${EXT[type] ?? 'bin'}` };
}

export function looksLikeBase64(s: string): boolean {
  return s.length >= 16 && BASE64.test(s) && s.replace(/\s/g, '').length % 4 === 0;
}

async function isFile(p: string): Promise<boolean> {
  if (!inNode) return false;
  try {
    const { stat } = await import('node:fs/promises');
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

async function readPath(p: string): Promise<Uint8Array> {
  const { readFile } = await import('node:fs/promises');
  return readFile(p);
}

/** Base64 of bytes, without Buffer (absent in browsers). */
export function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The chunks as one Uint8Array, without Buffer. */
export function concatBytes(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** One image input, as the service should get it; `name` is its field (img, img1, ...). */
export async function image(value: ImageInput, name: string): Promise<Image> {
  if (value instanceof URL) return { kind: 'remote', url: value.href };
  if (value instanceof Uint8Array) return fileImage(value, name);
  if (value instanceof ArrayBuffer) return fileImage(new Uint8Array(value), name);
  if (typeof Blob !== 'undefined' && value instanceof Blob) {
    const type = value.type || sniffType(new Uint8Array(await value.slice(0, 16).arrayBuffer()));
    const filename = 'name' in value && typeof value.name === 'string' && value.name ? value.name : `${name}.${EXT[type] ?? 'bin'}`;
    return { kind: 'file', data: value.type ? value : new Blob([value], { type }), filename };
  }
  if (typeof value === 'string') {
    if (value.startsWith('data:') || value.startsWith('file:')) return { kind: 'text', value };
    if (/^https?:\/\//i.test(value)) return { kind: 'remote', url: value };
    if (await isFile(value)) return fileImage(await readPath(value), name);
    if (looksLikeBase64(value)) return { kind: 'text', value: value.replace(/\s/g, '') };
    throw new TypeError(`${name}: ${JSON.stringify(value.slice(0, 200))} is not an existing file, an http(s) URL, a data: URI or base64`);
  }
  throw new TypeError(`${name}: an image is a path, a Buffer/Uint8Array, an ArrayBuffer, a Blob, a data: URI, base64 or a URL`);
}

export async function imageOrEmbedding(value: ImageInput | EmbeddingInput, name: string): Promise<Image | Embedding> {
  return isEmbedding(value) ? embedding(value) : image(value as ImageInput, name);
}

/** Targets as raw little-endian float32 bytes, row-major. */
export function float32Rows(targets: TargetsInput): Uint8Array {
  if (targets instanceof ArrayBuffer) targets = new Uint8Array(targets);
  if (targets instanceof Float32Array) {
    if (targets.length === 0) throw new RangeError('targets must not be empty');
    const bytes = new Uint8Array(targets.buffer, targets.byteOffset, targets.byteLength);
    return LITTLE_ENDIAN ? bytes : swap32(bytes);
  }
  if (targets instanceof Uint8Array) {
    if (targets.byteLength === 0 || targets.byteLength % 4 !== 0) throw new RangeError(`binary targets must be whole float32 values: ${targets.byteLength} bytes is not a positive multiple of 4`);
    return targets;
  }
  if (!Array.isArray(targets) || targets.length === 0) throw new RangeError('targets must be a non-empty list of embeddings');
  const width = targets[0]!.length;
  const out = new Float32Array(targets.length * width);
  targets.forEach((row, i) => {
    if (row.length !== width) throw new RangeError(`targets[${i}] has ${row.length} values, targets[0] has ${width}: every row must have the same length`);
    out.set(row, i * width);
  });
  return float32Rows(out);
}

function swap32(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  for (let i = 0; i < bytes.byteLength; i += 4) {
    out[i] = bytes[i + 3]!;
    out[i + 1] = bytes[i + 2]!;
    out[i + 2] = bytes[i + 1]!;
    out[i + 3] = bytes[i]!;
  }
  return out;
}
