// TEMPORARY: replaced by the native binding at merge
/**
 * Pure-TS stand-in for the native SIMD comparison core, with exactly its API, so that the gateway and
 * its tests run before the binding lands on main.
 */
import { ServiceError } from '../errors/index.js';

export type Metric = 'cosine' | 'euclidean' | 'euclidean_l2' | 'angular';

export function validateVectors(data: Float32Array, dims: number): void {
  if (!Number.isInteger(dims) || dims <= 0) throw new ServiceError('invalid_request', 'dims must be a positive integer');
  if (data.length % dims !== 0) {
    throw new ServiceError('embedding_dimension_mismatch', `vector data of length ${data.length} is not a multiple of ${dims} dimensions`);
  }
  for (let i = 0; i < data.length; i++) {
    if (!Number.isFinite(data[i]!)) throw new ServiceError('invalid_embedding', `element ${i} is not a finite number`);
  }
}

export function decodeVectorsB64(b64: string, dims: number): Float32Array {
  if (typeof b64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new ServiceError('invalid_embedding', 'targets_b64 is not valid base64');
  }
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) throw new ServiceError('invalid_embedding', 'targets_b64 length is not a multiple of 4 bytes (float32)');
  if ((buf.length / 4) % dims !== 0) {
    throw new ServiceError('embedding_dimension_mismatch', `targets_b64 holds ${buf.length / 4} floats, not a multiple of ${dims} dimensions`);
  }
  // Copy into an aligned buffer, then view it as float32 (little-endian hosts only: x64, arm64).
  const aligned = new Uint8Array(buf.length);
  aligned.set(buf);
  const out = new Float32Array(aligned.buffer);
  validateVectors(out, dims);
  return out;
}

export function l2Normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s) + 1e-10;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! / n;
  return out;
}

function distance(q: Float32Array, t: Float32Array, off: number, dims: number, metric: Metric): number {
  let dot = 0, qq = 0, tt = 0, e = 0;
  for (let i = 0; i < dims; i++) {
    const a = q[i]!, b = t[off + i]!;
    dot += a * b; qq += a * a; tt += b * b; e += (a - b) * (a - b);
  }
  switch (metric) {
    case 'euclidean':
      return Math.sqrt(e);
    case 'euclidean_l2': {
      const na = Math.sqrt(qq) + 1e-10, nb = Math.sqrt(tt) + 1e-10;
      let s = 0;
      for (let i = 0; i < dims; i++) { const d = q[i]! / na - t[off + i]! / nb; s += d * d; }
      return Math.sqrt(s);
    }
    case 'cosine':
    case 'angular': {
      const sim = dot / ((Math.sqrt(qq) * Math.sqrt(tt)) || 1e-10);
      return metric === 'cosine' ? 1 - sim : Math.acos(Math.min(1, Math.max(-1, sim))) / Math.PI;
    }
  }
}

export async function compareOneToMany(query: Float32Array, targets: Float32Array, dims: number, metric: Metric, topK?: number): Promise<{ indices: Uint32Array; distances: Float64Array }> {
  if (query.length !== dims) throw new ServiceError('embedding_dimension_mismatch', `source embedding has ${query.length} dimensions, expected ${dims}`);
  validateVectors(query, dims);
  validateVectors(targets, dims);
  const n = targets.length / dims;
  const d = new Float64Array(n);
  for (let i = 0; i < n; i++) d[i] = distance(query, targets, i * dims, dims, metric);
  let idx = Array.from({ length: n }, (_, i) => i);
  if (topK !== undefined && topK > 0) {
    idx.sort((a, b) => d[a]! - d[b]! || a - b);
    idx = idx.slice(0, topK);
  }
  return { indices: Uint32Array.from(idx), distances: Float64Array.from(idx.map((i) => d[i]!)) };
}

export async function compareOneToManyB64(query: Float32Array, targetsB64: string, dims: number, metric: Metric, topK?: number): Promise<{ indices: Uint32Array; distances: Float64Array; count: number }> {
  const t = decodeVectorsB64(targetsB64, dims);
  const r = await compareOneToMany(query, t, dims, metric, topK);
  return { ...r, count: t.length / dims };
}
