/**
 * Typed wrapper over the native vector comparison (crates/facecompute-core/src/compare). Every
 * native failure comes back as a ServiceError with a stable code (contract §5).
 *
 * Semantics (DeepFace's formulas, deepface-reference.md §4.1), with three decisions of ours:
 * - sums are taken in float64, so distances match a float64 computation to ~1e-12 (promised: 1e-6);
 * - a zero vector has cosine similarity 0 with anything (cosine 1, angular 0.5), as DeepFace's batch
 *   form gives, instead of the pairwise form's NaN;
 * - angular clamps the cosine into [-1, 1] before arccos, so rounding never yields NaN.
 * Base64 targets: standard alphabet (RFC 4648 §4), padding optional, no whitespace or URL-safe
 * characters; little-endian float32, row-major N×dims.
 *
 * Zero-copy: `query` and `targets` are read in place by the native task, which keeps them alive
 * until it settles. Do not write to them before the returned promise settles.
 */
import { fromNative, ServiceError } from '../errors/index.js';
import { native } from './addon.js';
import { DISTANCE_METRICS, type DistanceMetric } from '../vocabulary/closed-sets.js';

/** DeepFace's distance metrics (the vocabulary's list, the binding's `DistanceMetric`). */
export type Metric = DistanceMetric;

export const METRICS: readonly Metric[] = DISTANCE_METRICS;

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

/**
 * decodeVectorsB64 of base64 text given as its bytes (a `targets_b64` taken out of a large body,
 * src/http/json-body.ts), on the libuv pool: the same decoder and errors, no string on the event loop.
 */
export async function decodeVectorsB64Bytes(b64: Buffer, dims: number): Promise<Float32Array> {
  checkDims(dims);
  try {
    return await native.decodeVectorsB64Bytes(b64, dims);
  } catch (err) {
    throw fromNative(err);
  }
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

/** One result list per source: source i's are `indices`/`distances` over `offsets[i]..offsets[i+1]`. */
export interface ManyComparison {
  offsets: Uint32Array;
  indices: Uint32Array;
  distances: Float64Array;
  /** Targets compared per source (N). */
  count: number;
}

/**
 * Many sources (K×dims, row-major) against many targets, off the JS thread. With `topK` the dot
 * products run as a blocked f32 GEMM that only screens, with a rigorous error bound, and the
 * candidates are recomputed in float64: every list equals what `compareOneToMany` gives for that
 * source. Without it every distance of every source is returned, in target order.
 */
export async function compareManyToMany(sources: Float32Array, targets: Float32Array, dims: number, metric: Metric, topK?: number): Promise<ManyComparison> {
  checkDims(dims);
  checkMetric(metric);
  checkTopK(topK);
  checkFloats(sources, 'sources');
  checkFloats(targets, 'targets');
  try {
    const out = await native.compareManyToMany(sources, targets, dims, metric, topK);
    return { offsets: out.offsets, indices: out.indices, distances: out.distances, count: out.count };
  } catch (err) {
    throw fromNative(err);
  }
}

/**
 * Little-endian float32 rows (N×dims) held in bytes, as a Float32Array over the same memory when the
 * bytes are 4-byte aligned (always, for buffers made by `allocFloatBytes`), else one aligned copy.
 * Validation of the values happens in the kernel, which names the offending row.
 */
export function floatsOfBytes(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new ServiceError('embedding_dimension_mismatch', `${bytes.byteLength} bytes are not a whole number of float32 values`);
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return new Float32Array(new Uint8Array(bytes).buffer);
}

/**
 * The JSON text of /compare results, written natively from the kernel's arrays
 * (crates/facecompute-core/src/compare/json.rs): `offsets` (K+1 entries) makes it a list per source.
 * `coefficients` is DeepFace's confidence calibration (w, b, normalizer, maxTrue, minTrue, maxFalse,
 * minFalse), or null where the model has none.
 */
export async function compareResultsJson(indices: Uint32Array, distances: Float64Array, offsets: Uint32Array | null, threshold: number, pretuned: number, coefficients: Float64Array | null): Promise<Buffer> {
  try {
    return await native.compareResultsJson(indices, distances, offsets, threshold, pretuned, coefficients);
  } catch (err) {
    throw fromNative(err);
  }
}
