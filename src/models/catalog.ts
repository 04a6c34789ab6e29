/**
 * What is installed: for each model and detector of the manifest, whether its weights resolve
 * (local mirror, then cache) and, when asked, its ONNX file. The model server and the CLI share it.
 */
import { artifactFor, allArtifactIds, loadManifest, type Artifact, type Manifest } from './manifest.js';
import { resolveWeight, isResolved, type ResolvedWeight, type WeightLocations, type WeightProblem } from './weights.js';
import { ensureOnnx } from './convert.js';

export interface ArtifactStatus {
  id: string;
  artifact: Artifact;
  installed: boolean;
  weightPaths: string[];
  sources: Array<'local' | 'cache'>;
  /** Per weight file of the artifact: where it resolved and from which source, or null. */
  resolved: Array<ResolvedWeight | null>;
  problems: WeightProblem[];
}

export async function artifactStatus(id: string, loc: WeightLocations, manifest: Manifest = loadManifest()): Promise<ArtifactStatus> {
  const artifact = artifactFor(manifest, id);
  const weightPaths: string[] = [];
  const sources: Array<'local' | 'cache'> = [];
  const resolved: Array<ResolvedWeight | null> = [];
  const problems: WeightProblem[] = [];
  for (const w of artifact.weights) {
    const r = await resolveWeight(w, loc);
    if (isResolved(r)) {
      weightPaths.push(r.path);
      sources.push(r.source);
      resolved.push(r);
    } else {
      problems.push(...r);
      resolved.push(null);
    }
  }
  return { id, artifact, installed: problems.length === 0, weightPaths, sources, resolved, problems };
}

export async function catalog(loc: WeightLocations, manifest: Manifest = loadManifest()): Promise<ArtifactStatus[]> {
  const out: ArtifactStatus[] = [];
  for (const id of allArtifactIds(manifest)) out.push(await artifactStatus(id, loc, manifest));
  return out;
}

/** The ONNX (or, for Haar, XML) files of an installed artifact, converting if needed. */
export async function materialize(status: ArtifactStatus, cacheDir: string, python: string): Promise<string> {
  if (!status.installed) throw new Error(`${status.id} is not installed`);
  return ensureOnnx(status.artifact, status.resolved as ResolvedWeight[], cacheDir, python);
}

export function describeProblems(problems: WeightProblem[]): string {
  return problems.map((p) => `${p.file}${p.source ? ` (${p.source})` : ''}: ${p.reason.replaceAll('_', ' ')}`).join('; ');
}
