/**
 * The Dlib model for tests and benchmarks, through the production path: manifest entry, weight
 * resolution (size and sha256 checked) and the ONNX conversion cache, with the repository's
 * git-ignored .models-cache and the shared weights mirror.
 */
import { join } from 'node:path';
import { artifactStatus, describeProblems, materialize } from '../../src/models/catalog.js';
import { converterPython } from '../../src/models/convert.js';
import { loadManifest, type RecognitionEntry } from '../../src/models/manifest.js';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './shared.js';

export const DLIB = 'Dlib';
export const MODELS_CACHE = join(REPO_ROOT, '.models-cache');
export const CONVERTER_PYTHON = converterPython(process.env['FACECOMPUTE_PYTHON'] ?? '');

export function dlibEntry(): RecognitionEntry {
  const entry = loadManifest().recognition[DLIB];
  if (!entry) throw new Error('models/manifest.json has no Dlib entry');
  return entry;
}

/** Path of the converted Dlib graph, converting on first use; fails loudly when weights are unusable. */
export async function dlibOnnx(weightsDir = SHARED_WEIGHTS_DIR, cacheDir = MODELS_CACHE): Promise<string> {
  const status = await artifactStatus(DLIB, { weightsDir, cacheDir });
  if (!status.installed) {
    throw new Error(`Dlib weights unusable in ${weightsDir}: ${describeProblems(status.problems)} (CI has them in ../shared/weights; or set FACECOMPUTE_WEIGHTS_DIR)`);
  }
  return materialize(status, cacheDir, CONVERTER_PYTHON);
}

/** Packs RGB chips (150*150*3 bytes each, interleaved) into the model's NCHW float32 batch. */
export function chipsToBatch(chips: readonly Uint8Array[], size = 150): Float32Array {
  const plane = size * size;
  const chipBytes = plane * 3;
  const batch = new Float32Array(chips.length * chipBytes);
  chips.forEach((chip, n) => {
    if (chip.length !== chipBytes) throw new RangeError(`chip ${n} has ${chip.length} bytes, expected ${chipBytes}`);
    const base = n * chipBytes;
    for (let i = 0; i < plane; i++) {
      batch[base + i] = chip[3 * i] as number;
      batch[base + plane + i] = chip[3 * i + 1] as number;
      batch[base + 2 * plane + i] = chip[3 * i + 2] as number;
    }
  });
  return batch;
}
