/**
 * Downloads a weight file from its canonical URL into the cache: resumable (HTTP Range on a .part
 * file), checked against the manifest's sha256 before it is moved into place atomically, and
 * decompressed when the canonical file is an archive (dlib's .bz2).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import bz2 from 'unbzip2-stream';
import { sha256File } from './hash.js';
import { cachedWeightPath } from './weights.js';
import type { WeightFile } from './manifest.js';

export type FetchErrorCode = 'http_error' | 'truncated' | 'hash_mismatch' | 'size_mismatch' | 'decompress_failed';

export class FetchError extends Error {
  override name = 'FetchError';
  constructor(
    readonly code: FetchErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface FetchProgress {
  file: string;
  received: number;
  total: number | null;
}

export interface FetchOptions {
  cacheDir: string;
  /** Overrides the canonical URL (tests, mirrors). */
  url?: string;
  dispatcher?: Dispatcher;
  onProgress?: (p: FetchProgress) => void;
  /** Attempts, each resuming the last one's bytes. */
  attempts?: number;
  /** Per-attempt idle timeout. */
  bodyTimeoutMs?: number;
}

const defaultDispatcher = new Agent({ connectTimeout: 30_000 }).compose(interceptors.redirect({ maxRedirections: 5 }));

/** Downloads `url` into `part`, resuming from the bytes already there. Returns the final size. */
async function downloadResumable(url: string, part: string, expectedSize: number | undefined, opts: FetchOptions, label: string): Promise<number> {
  const attempts = opts.attempts ?? 5;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    let have = 0;
    try {
      have = (await stat(part)).size;
    } catch {
      have = 0;
    }
    if (expectedSize !== undefined && have === expectedSize) return have;
    if (expectedSize !== undefined && have > expectedSize) {
      await rm(part, { force: true });
      have = 0;
    }
    const headers: Record<string, string> = { 'user-agent': 'facecompute-models-fetch' };
    if (have > 0) headers['range'] = `bytes=${have}-`;
    try {
      const res = await request(url, {
        method: 'GET',
        headers,
        dispatcher: opts.dispatcher ?? defaultDispatcher,
        bodyTimeout: opts.bodyTimeoutMs ?? 60_000,
        headersTimeout: 30_000,
      });
      if (res.statusCode === 416 && have > 0) {
        await res.body.dump();
        return have; // Nothing left to fetch; the hash check decides.
      }
      if (res.statusCode !== 200 && res.statusCode !== 206) {
        await res.body.dump();
        throw new FetchError('http_error', `${label}: HTTP ${res.statusCode} from ${new URL(url).host}`);
      }
      const append = res.statusCode === 206 && have > 0;
      if (!append) have = 0;
      const len = Number(res.headers['content-length']);
      const total = Number.isFinite(len) ? have + len : (expectedSize ?? null);
      let received = have;
      const progress = new Transform({
        transform(chunk: Buffer, _enc, done) {
          received += chunk.length;
          opts.onProgress?.({ file: label, received, total });
          done(null, chunk);
        },
      });
      await mkdir(dirname(part), { recursive: true });
      await pipeline(res.body, progress, createWriteStream(part, { flags: append ? 'a' : 'w' }));
      const size = (await stat(part)).size;
      if (total !== null && size < total) throw new FetchError('truncated', `${label}: transfer ended at ${size} of ${total} bytes`);
      return size;
    } catch (err) {
      lastError = err;
      if (err instanceof FetchError && err.code === 'http_error') throw err;
      // Anything else (reset, timeout, truncation) is retried from where it stopped.
    }
  }
  if (lastError instanceof FetchError) throw lastError;
  throw new FetchError('truncated', `${label}: download failed after ${attempts} attempts (${lastError instanceof Error ? lastError.message : String(lastError)})`);
}

/** Fetches one weight file into the cache and returns its final path. */
export async function fetchWeight(w: WeightFile, opts: FetchOptions): Promise<string> {
  const target = cachedWeightPath(opts.cacheDir, w);
  const downloads = join(opts.cacheDir, 'downloads');
  await mkdir(downloads, { recursive: true });
  await mkdir(dirname(target), { recursive: true });
  const url = opts.url ?? w.url;

  if (w.compression === 'bz2') {
    const archivePart = join(downloads, `${w.file}.bz2.part`);
    const size = await downloadResumable(url, archivePart, w.archive_size, opts, `${w.file}.bz2`);
    if (w.archive_size !== undefined && size !== w.archive_size) {
      await rm(archivePart, { force: true });
      throw new FetchError('size_mismatch', `${w.file}.bz2: ${size} bytes, expected ${w.archive_size}`);
    }
    if (w.archive_sha256 !== undefined) {
      const digest = await sha256File(archivePart);
      if (digest !== w.archive_sha256) {
        await rm(archivePart, { force: true });
        throw new FetchError('hash_mismatch', `${w.file}.bz2: sha256 ${digest} does not match the manifest`);
      }
    }
    const tmp = join(downloads, `${w.file}.${process.pid}.tmp`);
    try {
      await pipeline(createReadStream(archivePart), bz2(), createWriteStream(tmp));
    } catch (err) {
      await rm(tmp, { force: true });
      await rm(archivePart, { force: true });
      throw new FetchError('decompress_failed', `${w.file}.bz2: ${err instanceof Error ? err.message : 'cannot decompress'}`);
    }
    await verifyAndPlace(tmp, target, w);
    await rm(archivePart, { force: true });
    return target;
  }

  const part = join(downloads, `${w.file}.part`);
  const size = await downloadResumable(url, part, w.size, opts, w.file);
  if (size !== w.size) {
    await rm(part, { force: true });
    throw new FetchError('size_mismatch', `${w.file}: ${size} bytes, expected ${w.size}`);
  }
  await verifyAndPlace(part, target, w);
  return target;
}

async function verifyAndPlace(candidate: string, target: string, w: WeightFile): Promise<void> {
  const digest = await sha256File(candidate);
  if (digest !== w.sha256) {
    await rm(candidate, { force: true });
    throw new FetchError('hash_mismatch', `${w.file}: sha256 ${digest} does not match the manifest (${w.sha256})`);
  }
  // Same filesystem (both under the cache), so the rename is atomic: readers see all or nothing.
  await rename(candidate, target);
}
