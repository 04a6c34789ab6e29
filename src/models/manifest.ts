/**
 * The model manifest (models/manifest.json): every recognition model and detector, its input
 * contract, its weight files and its converter. Loaded and checked once.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { PACKAGE_ROOT } from '../package-root.js';

const ROOT = PACKAGE_ROOT;
export const REPO_ROOT = ROOT;

export interface WeightFile {
  file: string;
  url: string;
  size: number;
  sha256: string;
  /** The download is compressed; `archive_*` describe the compressed bytes. */
  compression?: 'bz2';
  archive_size?: number;
  archive_sha256?: string;
}

export interface ConverterSpec {
  script: string;
  /** `{weights0}`…`{weightsN}` and `{out}` are substituted. */
  args: string[];
  /** Bumped when the converter's output changes, so cached ONNX files are rebuilt. */
  version: number;
}

export interface ModelInput {
  width: number;
  height: number;
  layout: 'nchw' | 'nhwc';
  channel_order: 'bgr' | 'rgb';
  preprocess: 'deepface_float' | 'uint8_truncate';
}

export interface RecognitionEntry {
  dims: number;
  input: ModelInput;
  /** `dynamic_batch: false` (SFace's published file) means one face per run. */
  onnx: { input: string; output: string; dynamic_batch?: boolean; names_unverified?: boolean };
  /** What the model is fed and how its output is post-processed, in words (README, capabilities). */
  normalization?: string;
  weights: WeightFile[];
  converter: ConverterSpec | null;
}

export interface DetectorVariant {
  weights: WeightFile[];
  converter: ConverterSpec | null;
}

export interface DetectorEntry {
  engine: 'haar' | 'retinaface' | 'yunet' | 'skip';
  weights?: WeightFile[];
  converter?: ConverterSpec | null;
  variants?: Record<string, DetectorVariant>;
}

export interface Manifest {
  recognition: Record<string, RecognitionEntry>;
  detectors: Record<string, DetectorEntry>;
}

let cached: Manifest | undefined;

export function loadManifest(path = resolve(ROOT, 'models', 'manifest.json')): Manifest {
  if (cached && path === resolve(ROOT, 'models', 'manifest.json')) return cached;
  const m = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  for (const [name, e] of Object.entries(m.recognition)) {
    if (!Number.isInteger(e.dims) || e.dims <= 0) throw new Error(`manifest: ${name} has no valid dims`);
    for (const w of e.weights) checkWeight(name, w);
  }
  for (const [name, d] of Object.entries(m.detectors)) {
    for (const w of d.weights ?? []) checkWeight(name, w);
    for (const v of Object.values(d.variants ?? {})) for (const w of v.weights) checkWeight(name, w);
  }
  cached = m;
  return m;
}

function checkWeight(owner: string, w: WeightFile): void {
  if (!/^[0-9a-f]{64}$/.test(w.sha256)) throw new Error(`manifest: ${owner}/${w.file} has a malformed sha256`);
  if (!/^https?:\/\//.test(w.url)) throw new Error(`manifest: ${owner}/${w.file} has no canonical URL`);
  if (w.file.includes('/') || w.file.includes('..')) throw new Error(`manifest: ${owner}/${w.file} is not a plain file name`);
}

/** What a weights-bearing entry (a recognition model, or one detector variant) needs. */
export interface Artifact {
  /** e.g. "Dlib", "retinaface:mobilenet0.25", "opencv" */
  id: string;
  weights: WeightFile[];
  converter: ConverterSpec | null;
}

export function artifactFor(manifest: Manifest, id: string): Artifact {
  const rec = manifest.recognition[id];
  if (rec) return { id, weights: rec.weights, converter: rec.converter };
  const [det, variant] = id.split(':');
  const d = det === undefined ? undefined : manifest.detectors[det];
  if (d) {
    if (variant !== undefined) {
      const v = d.variants?.[variant];
      if (v) return { id, weights: v.weights, converter: v.converter };
    } else if (!d.variants) {
      return { id, weights: d.weights ?? [], converter: d.converter ?? null };
    }
  }
  throw new Error(`unknown model or detector ${JSON.stringify(id)}`);
}

/** Every artifact id the manifest knows, for `models list`. */
export function allArtifactIds(manifest: Manifest): string[] {
  const ids = Object.keys(manifest.recognition);
  for (const [name, d] of Object.entries(manifest.detectors)) {
    if (d.variants) for (const v of Object.keys(d.variants)) ids.push(`${name}:${v}`);
    else if ((d.weights ?? []).length > 0) ids.push(name);
  }
  return ids;
}
