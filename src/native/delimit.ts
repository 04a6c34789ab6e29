/**
 * Typed wrapper over the native append-and-search of the multipart reader
 * (crates/facecompute-core/src/delimit.rs): copies `chunk` into `dest` at `at`, then finds `needle`
 * in `dest[from, at + chunk.length)` with SIMD (memchr::memmem). Returns the needle's index in
 * `dest`, or -1. Runs on the calling thread: it is one socket chunk's worth of work.
 */
import { fromNative } from '../errors/index.js';
import { native } from './addon.js';

export function appendAndFind(dest: Uint8Array, at: number, chunk: Uint8Array, needle: Uint8Array, from: number): number {
  try {
    return native.appendAndFind(dest, at, chunk, needle, from);
  } catch (err) {
    throw fromNative(err);
  }
}
