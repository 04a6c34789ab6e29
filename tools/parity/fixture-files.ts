/**
 * Where the reference fixtures live and how they are read. They are JSON, gzipped where they are
 * large (`.json.gz`: LFW's DeepFace outputs, the calibration distances), so that the repository holds
 * no multi-megabyte data files. No imports beyond Node's: the figures renderer uses this.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

export const FIXTURES = join(import.meta.dirname, '..', '..', 'test', 'fixtures');

export const isJsonFile = (path: string): boolean => path.endsWith('.json') || path.endsWith('.json.gz');

/** A `.json` or `.json.gz` file's value. */
export function readJsonFile<T = unknown>(path: string): T {
  const bytes = readFileSync(path);
  return JSON.parse((path.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8')) as T;
}

/** DeepFace's outputs with an MTCNN detector on a set (tools/reference/mtcnn_reference.py --fixture; LFW's gzipped). */
export function mtcnnFixture(detector: string, set: string): string {
  return join(FIXTURES, 'mtcnn', `${detector}-${set}.json${set === 'lfw' ? '.gz' : ''}`);
}
