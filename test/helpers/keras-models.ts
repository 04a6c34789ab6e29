/**
 * Builds the random-weight ONNX models the Keras parity tests and bench/models use: regenerates the
 * seeded .h5 from the committed layer manifest (tools/reference/random_h5.py, numpy + h5py) and converts
 * it with models/converters/keras_to_onnx.py, both with the repository's converter venv (.venv).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './shared.js';

export type KerasArch = 'facenet128' | 'facenet512' | 'openface' | 'retinaface_r50';

export const VENV_PYTHON = resolve(REPO_ROOT, '.venv', 'bin', 'python');
export const MANIFEST_DIR = resolve(REPO_ROOT, 'models', 'converters', 'keras_layouts');
export const PARITY_FIXTURES = resolve(REPO_ROOT, 'test', 'fixtures', 'keras-parity');
export const CONVERTER = resolve(REPO_ROOT, 'models', 'converters', 'keras_to_onnx.py');
export const RANDOM_H5 = resolve(REPO_ROOT, 'tools', 'reference', 'random_h5.py');
/** Git-ignored scratch space for regenerated weights and converted models. */
export const SCRATCH = resolve(REPO_ROOT, '.models-cache', 'random-weights');

export function requireVenv(): string {
  if (!existsSync(VENV_PYTHON)) {
    throw new Error(
      `converter venv missing: ${VENV_PYTHON}. Create it with: python3 -m venv .venv && ` +
        `.venv/bin/pip install -r models/converters/requirements.txt (scripts/bootstrap.sh does this)`,
    );
  }
  return VENV_PYTHON;
}

export function python(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(requireVenv(), args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Regenerates `<arch>.h5` from the manifest and converts it; returns the ONNX path. */
export function buildRandomOnnx(arch: KerasArch, dir = SCRATCH): { h5: string; onnx: string } {
  mkdirSync(dir, { recursive: true });
  const h5 = resolve(dir, `${arch}.h5`);
  const onnx = resolve(dir, `${arch}.onnx`);
  for (const args of [[RANDOM_H5, resolve(MANIFEST_DIR, `${arch}.json`), h5], [CONVERTER, '--arch', arch, h5, onnx]]) {
    const r = python(args);
    if (r.status !== 0) throw new Error(`${args.map((a) => a.replace(REPO_ROOT + '/', '')).join(' ')} failed (${r.status}):\n${r.stderr}`);
  }
  return { h5, onnx };
}

export function readCrop(file: string): Uint8Array {
  return new Uint8Array(readFileSync(resolve(PARITY_FIXTURES, 'crops', file)));
}
