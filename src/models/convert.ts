/**
 * Turns resolved weight files into the ONNX file ONNX Runtime loads. Converted files live in the
 * cache under a name keyed by the sha256 of the files actually converted (the canonical file and a
 * carrier's file are different files) and the converter version, so a new weight file or a changed
 * converter never reuses a stale graph. Files that already are ONNX are used as they are.
 *
 * A weight entry with a content fingerprint passes it to its converter (`{fingerprintN}`), which
 * refuses a file whose weight values are not the ones the manifest names (exit status 3).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, type Artifact } from './manifest.js';
import type { ResolvedWeight } from './weights.js';

const run = promisify(execFile);

/** Exit status of a converter that refused the content fingerprint (keras_to_onnx.py). */
const FINGERPRINT_EXIT = 3;

export type ConvertErrorCode = 'converter_failed' | 'fingerprint_mismatch' | 'bad_converter_spec';

export class ConvertError extends Error {
  override name = 'ConvertError';
  constructor(
    message: string,
    readonly code: ConvertErrorCode = 'converter_failed',
  ) {
    super(message);
  }
}

/** The Python that runs converters: FACECOMPUTE_PYTHON, else the project's .venv, else python3. */
export function converterPython(configured: string): string {
  if (configured) return configured;
  const venv = resolve(REPO_ROOT, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

/** `files`: the sha256 of each weight file converted (the resolved source's, not always the canonical). */
export function onnxCachePath(cacheDir: string, artifact: Artifact, files: readonly string[] = artifact.weights.map((w) => w.sha256)): string {
  const key = createHash('sha256')
    .update(files.join(','))
    .update(`:${artifact.converter?.version ?? 0}`)
    .digest('hex')
    .slice(0, 16);
  const safe = artifact.id.replace(/[^A-Za-z0-9._-]/g, '_');
  return join(cacheDir, 'onnx', artifact.converter?.output === 'directory' ? `${safe}-${key}` : `${safe}-${key}.onnx`);
}

/**
 * Returns the ONNX path for an artifact whose weights resolved to `weights`, converting when needed
 * (a folder of ONNX files for a converter whose output is `directory`). Artifacts without a converter
 * (SFace, YuNet, Haar XML) return their first weight file.
 */
export async function ensureOnnx(artifact: Artifact, weights: readonly ResolvedWeight[], cacheDir: string, python: string): Promise<string> {
  const conv = artifact.converter;
  const weightPaths = weights.map((w) => w.path);
  if (!conv) {
    const first = weightPaths[0];
    if (first === undefined) throw new ConvertError(`${artifact.id} has no weight files`, 'bad_converter_spec');
    return first;
  }
  const out = onnxCachePath(cacheDir, artifact, weights.map((w) => w.origin.sha256));
  try {
    const st = await stat(out);
    if (conv.output === 'directory' ? st.isDirectory() : st.size > 0) return out;
  } catch {
    // not converted yet
  }
  await mkdir(join(cacheDir, 'onnx'), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  const args = conv.args.map((a) => {
    if (a === '{out}') return tmp;
    const m = /^\{weights(\d+)\}$/.exec(a);
    if (m) {
      const p = weightPaths[Number(m[1])];
      if (p === undefined) throw new ConvertError(`${artifact.id}: converter needs weight #${m[1]}`, 'bad_converter_spec');
      return p;
    }
    const f = /^\{fingerprint(\d+)\}$/.exec(a);
    if (f) {
      const fp = artifact.weights[Number(f[1])]?.fingerprint;
      if (fp === undefined) throw new ConvertError(`${artifact.id}: converter needs the fingerprint of weight #${f[1]}, which the manifest lacks`, 'bad_converter_spec');
      return fp;
    }
    return a;
  });
  try {
    await run(converterPython(python), [resolve(REPO_ROOT, conv.script), ...args], { maxBuffer: 16 << 20, timeout: 15 * 60_000 });
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    const stderr = (err as { stderr?: string }).stderr ?? '';
    const last = stderr.trim().split('\n').slice(-3).join(' | ');
    if ((err as { code?: unknown }).code === FINGERPRINT_EXIT) {
      const from = weights.map((w) => `${w.path}`).join(', ');
      throw new ConvertError(`${artifact.id}: refused: ${from}: ${last.replace(/^keras_to_onnx: [^:]+: [^:]+: /, '').replace(/^mtcnn_to_onnx: /, '')}`, 'fingerprint_mismatch');
    }
    throw new ConvertError(`${artifact.id}: converter failed${last ? `: ${last}` : ''}`);
  }
  await rename(tmp, out);
  return out;
}
