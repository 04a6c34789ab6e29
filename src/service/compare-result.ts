/**
 * The results of a /compare, kept as the kernel's typed arrays until they are rendered. A compare
 * without top_k over 100,000 targets has 100,000 results: building an object per result and then
 * serializing it cost more than the comparison (about 130 ms, mostly formatting doubles), so the
 * REST route has the native core write the JSON text from the arrays (`compareJson`), and only the
 * MCP endpoint, whose answers are small, asks for plain objects (`comparePlain`). Both give the same
 * bytes (test/compare-result.test.ts): DeepFace's rounded distance, the `verified` decision and the
 * calibrated confidence.
 */
import { confidenceCoefficients, findConfidence, roundDistance, type Metric } from '../deepface/decision.js';
import { compareResultsJson } from '../native/compare.js';

export interface Decide {
  model: string;
  metric: Metric;
  /** The model's calibrated threshold: confidence is always calibrated on it, as in DeepFace. */
  pretuned: number;
  /** The threshold `verified` is decided on (the request's, else the calibrated one). */
  threshold: number;
}

export interface CompareResult {
  index: number;
  distance: number;
  verified: boolean;
  confidence: number;
}

export type SourceInfo = { facial_area: unknown; face_confidence: number } | null;

/**
 * The results of one source (a flat list), or of several (`offsets`, K+1 entries: list i is
 * `offsets[i]..offsets[i+1]`), nearest first with top_k, else in target order.
 */
export class CompareRows {
  constructor(
    readonly decide: Decide,
    readonly indices: Uint32Array,
    readonly distances: Float64Array,
    readonly offsets: Uint32Array | null = null,
  ) {}

  private list(from: number, to: number): CompareResult[] {
    const { model, metric, pretuned, threshold } = this.decide;
    const out: CompareResult[] = new Array(to - from);
    for (let i = from; i < to; i++) {
      const distance = roundDistance(this.distances[i]!);
      out[i - from] = { index: this.indices[i]!, distance, verified: distance <= threshold, confidence: findConfidence(distance, model, metric, distance <= pretuned) };
    }
    return out;
  }

  /** Plain objects: a list, or a list per source. */
  plain(): CompareResult[] | CompareResult[][] {
    const o = this.offsets;
    if (!o) return this.list(0, this.indices.length);
    return Array.from({ length: o.length - 1 }, (_, i) => this.list(o[i]!, o[i + 1]!));
  }

  /** The JSON text of `plain()`, written natively from the arrays (crates/…/compare/json.rs). */
  async json(): Promise<Buffer> {
    const { model, metric, pretuned, threshold } = this.decide;
    const c = confidenceCoefficients(model, metric);
    const coefficients = c ? new Float64Array([c.w, c.b, c.normalizer, c.maxTrue, c.minTrue, c.maxFalse, c.minFalse]) : null;
    return compareResultsJson(this.indices, this.distances, this.offsets, threshold, pretuned, coefficients);
  }
}

export interface CompareResponse {
  model: string;
  similarity_metric: string;
  threshold: number;
  dims: number;
  /** One entry, or one per source when `source` was a list. */
  source: SourceInfo | SourceInfo[];
  /** One list, or one list per source when `source` was a list (CompareRows.offsets). */
  results: CompareRows;
  time: number;
}

/** The response as plain objects (MCP's structuredContent, tests). */
export function comparePlain(r: CompareResponse): Record<string, unknown> {
  return { ...r, results: r.results.plain() };
}

/**
 * The response as JSON bytes, fields in the order of the response schema. The envelope is tiny and
 * goes through JSON.stringify (facial areas are objects from the model server); the results are
 * written natively from the typed arrays.
 */
export async function compareJson(r: CompareResponse): Promise<Buffer> {
  const head = JSON.stringify({ model: r.model, similarity_metric: r.similarity_metric, threshold: r.threshold, dims: r.dims, source: r.source });
  const results = await r.results.json();
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)},"results":`), results, Buffer.from(`,"time":${JSON.stringify(r.time)}}`)]);
}
