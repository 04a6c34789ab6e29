/** Where the benchmarks find shared inputs, caches and the DeepFace venv (all overridable). */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED_DATA_DIR = resolve(process.env['SHARED_DATA_DIR'] ?? join(REPO_ROOT, '..', 'shared', 'data'));
export const SHARED_WEIGHTS_DIR = resolve(process.env['FACECOMPUTE_WEIGHTS_DIR'] ?? join(REPO_ROOT, '..', 'shared', 'weights'));
export const DEEPFACE_DATA = join(SHARED_DATA_DIR, 'deepface');
/** The repository's git-ignored cache of converted ONNX graphs, shared with the tests. */
export const MODELS_CACHE = resolve(process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO_ROOT, '.models-cache'));
/** Made by `npm run bench:setup` (bench/deepface/setup.sh). */
export const DEEPFACE_PYTHON = process.env['DEEPFACE_PYTHON'] ?? join(REPO_ROOT, '.venvs', 'deepface', 'bin', 'python');
/** DeepFace 0.0.103 on ONNX Runtime, the service suite's second baseline (also `npm run bench:setup`). */
export const DEEPFACE_103_PYTHON = process.env['DEEPFACE_103_PYTHON'] ?? join(REPO_ROOT, '.venvs', 'deepface-0.0.103', 'bin', 'python');
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
