/**
 * Finds a weight file: the local mirror first (FACECOMPUTE_WEIGHTS_DIR), then the cache. A file whose
 * size or sha256 is wrong is never used. Hashing 100 MB at every start would be slow, so verified
 * hashes are remembered per (path, size, mtime) in the cache.
 */
import { readFile, stat, writeFile, mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256File } from './hash.js';
import type { WeightFile } from './manifest.js';

export interface WeightLocations {
  weightsDir: string;
  cacheDir: string;
}

export interface ResolvedWeight {
  path: string;
  source: 'local' | 'cache';
}

export type WeightProblem = { file: string; reason: 'missing' | 'size_mismatch' | 'hash_mismatch'; path?: string };

export function cachedWeightPath(cacheDir: string, w: WeightFile): string {
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
export async function checkWeightAt(path: string, w: WeightFile, cacheDir: string): Promise<WeightProblem | null> {
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

/** Resolves a weight file, or says why it cannot be used. */
export async function resolveWeight(w: WeightFile, loc: WeightLocations): Promise<ResolvedWeight | WeightProblem> {
  const problems: WeightProblem[] = [];
  if (loc.weightsDir) {
    const p = join(loc.weightsDir, w.file);
    const problem = await checkWeightAt(p, w, loc.cacheDir);
    if (!problem) return { path: p, source: 'local' };
    problems.push(problem);
  }
  const c = cachedWeightPath(loc.cacheDir, w);
  const problem = await checkWeightAt(c, w, loc.cacheDir);
  if (!problem) return { path: c, source: 'cache' };
  problems.push(problem);
  // The most informative problem: a corrupt file beats "missing".
  return problems.find((p) => p.reason !== 'missing') ?? problem;
}

export function isResolved(r: ResolvedWeight | WeightProblem): r is ResolvedWeight {
  return 'source' in r;
}
