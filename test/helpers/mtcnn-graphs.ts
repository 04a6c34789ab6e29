/**
 * Where bootstrap converted an MTCNN flavour's three graphs (pnet/rnet/onet.onnx): the models cache's
 * onnx/<flavor>-<fingerprint>/ directory, FACECOMPUTE_MODELS_CACHE or the checkout's .models-cache.
 * For tests, tools and benches that run the networks without a registry.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './shared.js';

export function mtcnnGraphs(flavor: 'mtcnn' | 'fastmtcnn'): string | undefined {
  const cache = join(process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO_ROOT, '.models-cache'), 'onnx');
  if (!existsSync(cache)) return undefined;
  return readdirSync(cache).filter((d) => d.startsWith(`${flavor}-`)).map((d) => join(cache, d))[0];
}
