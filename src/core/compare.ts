/**
 * Typed wrapper over the native vector comparison (crates/facecompute-core/src/compare). Every
 * native failure comes back as a ServiceError with a stable code (contract §5).
 *
 * Zero-copy: `query` and `targets` are read in place by the native task, which keeps them alive
 * until it settles. Do not write to them before the returned promise settles.
 */
import { fromNative, ServiceError } from '../errors/index.js';
import { native } from './native.js';

export type Metric = 'cosine' | 'euclidean' | 'euclidean_l2' | 'angular';

export const METRICS: readonly Metric[] = ['cosine', 'euclidean', 'euclidean_l2', 'angular'];

export interface Comparison {
  indices: Uint32Array;
  distances: Float64Array;
}

/**
 * Below this many floats (query × targets) the comparison runs on the JS thread: the work is a few
 * microseconds, less than a round trip through the libuv pool.
 */
const SYNC_MAX_FLOATS = 32 * 1024;

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw fromNative(err);
  }
}

function checkDims(dims: number): void {
  if (!Number.isInteger(dims) || dims < 1 || dims > 0xffff_ffff) {
    throw new ServiceError('invalid_request', `dims must be a positive integer, got ${String(dims)}`);
  }
}

function checkMetric(metric: string): asserts metric is Metric {
  if (!(METRICS as readonly string[]).includes(metric)) {
    throw new ServiceError('invalid_request', `unknown distance_metric '${String(metric).slice(0, 40)}': expected ${METRICS.join(', ')}`);
  }
}

function checkTopK(topK: number | undefined): void {
  if (topK === undefined) return;
  if (!Number.isInteger(topK) || topK < 1 || topK > 0xffff_ffff) {
    throw new ServiceError('invalid_request', `top_k must be a positive integer, got ${String(topK)}`);
  }
}

function checkFloats(value: unknown, name: string): asserts value is Float32Array {
  if (!(value instanceof Float32Array)) {
    throw new ServiceError('invalid_request', `${name} must be a Float32Array`);
  }
}

/** Decodes base64 little-endian float32, row-major N×dims, validating every value. */
export function decodeVectorsB64(b64: string, dims: number): Float32Array {
  checkDims(dims);
  if (typeof b64 !== 'string') throw new ServiceError('invalid_request', 'the base64 vectors must be a string');
  return call(() => native.decodeVectorsB64(b64, dims));
}

/** Throws invalid_embedding naming the first vector with NaN/Infinity, or embedding_dimension_mismatch. */
export function validateVectors(data: Float32Array, dims: number): void {
  checkDims(dims);
  checkFloats(data, 'vectors');
  call(() => native.validateVectors(data, dims));
}

/**
 * Distances (DeepFace's formulas, unrounded) from `query` to each `dims`-long row of `targets`.
 * Without `topK`, `indices` is 0..N-1 in order; with it, the k nearest, nearest first, ties by index.
 */
export async function compareOneToMany(query: Float32Array, targets: Float32Array, dims: number, metric: Metric, topK?: number): Promise<Comparison> {
  checkDims(dims);
  checkMetric(metric);
  checkTopK(topK);
  checkFloats(query, 'query');
  checkFloats(targets, 'targets');
  if (query.length + targets.length <= SYNC_MAX_FLOATS) {
    const out = call(() => native.compareOneToManySync(query, targets, dims, metric, topK));
    return { indices: out.indices, distances: out.distances };
  }
  try {
    const out = await native.compareOneToMany(query, targets, dims, metric, topK);
    return { indices: out.indices, distances: out.distances };
  } catch (err) {
    throw fromNative(err);
  }
}

/**
 * The `targets_b64` path: decode, validate and compare off the JS thread. `count` is the number of
 * target vectors decoded (N), also when `topK` returns fewer.
 */
export async function compareOneToManyB64(
  query: Float32Array,
  targetsB64: string,
  dims: number,
  metric: Metric,
  topK?: number,
): Promise<Comparison & { count: number }> {
  checkDims(dims);
  checkMetric(metric);
  checkTopK(topK);
  checkFloats(query, 'query');
  if (typeof targetsB64 !== 'string') throw new ServiceError('invalid_request', 'targets_b64 must be a string');
  try {
    const out = await native.compareOneToManyB64(query, targetsB64, dims, metric, topK);
    return { indices: out.indices, distances: out.distances, count: out.count };
  } catch (err) {
    throw fromNative(err);
  }
}

/** x/‖x‖ as DeepFace's `l2_normalize` does; a zero vector is returned unchanged. */
export function l2Normalize(v: Float32Array): Float32Array {
  checkFloats(v, 'vector');
  return call(() => native.l2Normalize(v));
}
