// TEMPORARY: replaced by the native binding at merge
/**
 * Header-only image probe: format and dimensions of JPEG, PNG, GIF, BMP and WebP, without decoding a
 * pixel. Throws ServiceError invalid_image for anything else or a corrupt header.
 */
import { ServiceError } from '../errors/index.js';

export interface ImageProbe {
  format: string;
  width: number;
  height: number;
}

function bad(why: string): never {
  throw new ServiceError('invalid_image', why);
}

function probeJpeg(b: Buffer): ImageProbe {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) bad('corrupt JPEG header');
    let marker = b[i + 1]!;
    while (marker === 0xff && i + 2 < b.length) { i++; marker = b[i + 1]!; }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) { i += 2; continue; }
    if (i + 4 > b.length) break;
    const len = b.readUInt16BE(i + 2);
    if (len < 2) bad('corrupt JPEG segment');
    const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (sof) {
      if (i + 9 > b.length) break;
      const height = b.readUInt16BE(i + 5);
      const width = b.readUInt16BE(i + 7);
      return { format: 'jpeg', width, height };
    }
    i += 2 + len;
  }
  bad('JPEG header has no frame size');
}

export function probeImage(bytes: Buffer): ImageProbe {
  const b = bytes;
  let r: ImageProbe;
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) r = probeJpeg(b);
  else if (b.length >= 24 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    if (b.toString('latin1', 12, 16) !== 'IHDR') bad('corrupt PNG header');
    r = { format: 'png', width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  } else if (b.length >= 10 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) {
    r = { format: 'gif', width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
  } else if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d) {
    const hdr = b.readUInt32LE(14);
    if (hdr === 12) r = { format: 'bmp', width: b.readUInt16LE(18), height: b.readUInt16LE(20) };
    else r = { format: 'bmp', width: Math.abs(b.readInt32LE(18)), height: Math.abs(b.readInt32LE(22)) };
  } else if (b.length >= 30 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') {
    const chunk = b.toString('latin1', 12, 16);
    if (chunk === 'VP8 ') r = { format: 'webp', width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
    else if (chunk === 'VP8L') {
      const v = b.readUInt32LE(21);
      r = { format: 'webp', width: (v & 0x3fff) + 1, height: ((v >>> 14) & 0x3fff) + 1 };
    } else if (chunk === 'VP8X') r = { format: 'webp', width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
    else bad('corrupt WebP header');
  } else bad('not a JPEG, PNG, WebP, GIF or BMP image');
  if (r.width <= 0 || r.height <= 0) bad('image has zero width or height');
  return r;
}
