/**
 * Turns resolved weight files into the ONNX file ONNX Runtime loads. Converted files live in the
 * cache under a name keyed by the weights' sha256 and the converter version, so a new weight file or
 * a changed converter never reuses a stale graph. Files that already are ONNX are used as they are.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, type Artifact } from './manifest.js';

const run = promisify(execFile);

export class ConvertError extends Error {
  override name = 'ConvertError';
}

/** The Python that runs converters: FACECOMPUTE_PYTHON, else the project's .venv, else python3. */
export function converterPython(configured: string): string {
  if (configured) return configured;
  const venv = resolve(REPO_ROOT, '.venv', 'bin', 'python');
  return existsSync(venv) ? venv : 'python3';
}

export function onnxCachePath(cacheDir: string, artifact: Artifact): string {
  const key = createHash('sha256')
    .update(artifact.weights.map((w) => w.sha256).join(','))
    .update(`:${artifact.converter?.version ?? 0}`)
    .digest('hex')
    .slice(0, 16);
  const safe = artifact.id.replace(/[^A-Za-z0-9._-]/g, '_');
  return join(cacheDir, 'onnx', `${safe}-${key}.onnx`);
}

/**
 * Returns the ONNX path for an artifact whose weights are at `weightPaths`, converting when needed.
 * Artifacts without a converter (SFace, YuNet, Haar XML) return their first weight file.
 */
export async function ensureOnnx(artifact: Artifact, weightPaths: string[], cacheDir: string, python: string): Promise<string> {
  const conv = artifact.converter;
  if (!conv) {
    const first = weightPaths[0];
    if (first === undefined) throw new ConvertError(`${artifact.id} has no weight files`);
    return first;
  }
  const out = onnxCachePath(cacheDir, artifact);
  try {
    if ((await stat(out)).size > 0) return out;
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
      if (p === undefined) throw new ConvertError(`${artifact.id}: converter needs weight #${m[1]}`);
      return p;
    }
    return a;
  });
  try {
    await run(converterPython(python), [resolve(REPO_ROOT, conv.script), ...args], { maxBuffer: 16 << 20, timeout: 15 * 60_000 });
  } catch (err) {
    await rm(tmp, { force: true });
    const stderr = (err as { stderr?: string }).stderr ?? '';
    const last = stderr.trim().split('\n').slice(-3).join(' | ');
    throw new ConvertError(`${artifact.id}: converter failed${last ? `: ${last}` : ''}`);
  }
  await rename(tmp, out);
  return out;
}
