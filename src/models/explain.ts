/**
 * Why a model or detector cannot be served, in full: each missing weight file, every place it was
 * looked for (the mirror, the cache) and what was wrong there, then every source the last
 * `models fetch` tried and why each failed, or, when none has run with this cache, the sources it
 * would try. `serve` refuses to start with this text (src/model-server/serving-plan.ts).
 */
import type { Artifact } from './manifest.js';
import type { ArtifactStatus } from './catalog.js';
import type { FetchLog } from './fetch-log.js';
import { fetchSources, servingFiles, sourceLabel, type WeightSource } from './sources.js';
import { cachedWeightPath, checkWeightAt, type WeightLocations } from './weights.js';
import { join } from 'node:path';

export interface MissingWeight {
  file: string;
  /** One line per place or source, in the order they were tried. */
  tried: string[];
}

const describeSource = (s: WeightSource) => (s.kind === 'canonical' ? `canonical ${s.url}` : sourceLabel(s));

export async function explainMissing(artifact: Artifact, status: ArtifactStatus, loc: WeightLocations, log: FetchLog): Promise<MissingWeight[]> {
  const out: MissingWeight[] = [];
  for (const [i, w] of artifact.weights.entries()) {
    if (status.resolved[i]) continue;
    const tried: string[] = [];
    const files = servingFiles(w, loc.sources);
    if (files.length === 0) tried.push(`no source of it is allowed (FACECOMPUTE_WEIGHT_SOURCES=${(loc.sources ?? []).join(',')})`);
    for (const f of files) {
      const where = [...(loc.weightsDir ? [['mirror', join(loc.weightsDir, f.file)] as const] : []), ['cache', cachedWeightPath(loc.cacheDir, f)] as const];
      for (const [kind, path] of where) {
        const problem = await checkWeightAt(path, f, loc.cacheDir);
        tried.push(`${kind} ${path}: ${problem ? problem.reason.replaceAll('_', ' ') : 'present'}`);
      }
    }
    const record = log[w.file];
    if (record && !record.ok && (record.attempts ?? []).length > 0) {
      for (const a of record.attempts ?? []) tried.push(`${a.source}: ${a.code}: ${a.message} (models fetch, ${record.at})`);
    } else {
      const sources = fetchSources(w, loc.sources).map(describeSource);
      tried.push(`no \`models fetch\` has tried it with this cache; it would try ${sources.length > 0 ? sources.join(', then ') : 'nothing (no source allowed)'}`);
    }
    out.push({ file: w.file, tried });
  }
  return out;
}

/** The text of one artifact's missing files, indented for a multi-line message. */
export function formatMissing(missing: MissingWeight[], indent = '    '): string {
  return missing.map((m) => `${indent}${m.file}:\n${m.tried.map((t) => `${indent}  - ${t}`).join('\n')}`).join('\n');
}
