/**
 * Where tests and benchmarks find the shared read-only material. Never copied into the repository:
 * SHARED_DATA_DIR (default ../shared/data) and FACECOMPUTE_WEIGHTS_DIR (default ../shared/weights).
 */
import { resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED_DATA_DIR = resolve(process.env['SHARED_DATA_DIR'] ?? resolve(REPO_ROOT, '..', 'shared', 'data'));
export const SHARED_WEIGHTS_DIR = resolve(process.env['FACECOMPUTE_WEIGHTS_DIR'] ?? resolve(REPO_ROOT, '..', 'shared', 'weights'));
export const DEEPFACE_DIR = resolve(SHARED_DATA_DIR, 'deepface');
export const ROBUSTNESS_DIR = resolve(SHARED_DATA_DIR, 'robustness');
export const TEST_OUTPUT_DIR = resolve(REPO_ROOT, 'test-output');

export function deepfaceImage(name: string): string {
  return resolve(DEEPFACE_DIR, name);
}
