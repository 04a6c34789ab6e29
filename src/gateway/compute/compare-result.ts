/**
 * The results of a /compare, kept as the kernel's typed arrays until they are rendered. A compare
 * without top_k over 100,000 targets has 100,000 results: building an object per result and then
 * serializing it cost more than the comparison, so the REST route writes the JSON text straight
 * from the arrays (`compareJson`), and only the MCP endpoint, whose answers are small, asks for
 * plain objects (`comparePlain`). Both give the same values: DeepFace's rounded distance, the
 * `verified` decision and the calibrated confidence.
 */
import { findConfidence, roundDistance, type Metric } from '../../compute/decision.js';

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

/** One source's results, nearest first with top_k, else in target order. */
export class CompareRows {
  constructor(
    readonly decide: Decide,
    readonly indices: Uint32Array,
    readonly distances: Float64Array,
  ) {}

  get length(): number {
    return this.indices.length;
  }

  /** Calls `row(index, distance, verified, confidence)` for every result, in order. */
  each(row: (index: number, distance: number, verified: boolean, confidence: number) => void): void {
    const { model, metric, pretuned, threshold } = this.decide;
    for (let i = 0; i < this.indices.length; i++) {
      const distance = roundDistance(this.distances[i]!);
      row(this.indices[i]!, distance, distance <= threshold, findConfidence(distance, model, metric, distance <= pretuned));
    }
  }

  plain(): CompareResult[] {
    const out: CompareResult[] = new Array(this.indices.length);
    let i = 0;
    this.each((index, distance, verified, confidence) => {
      out[i++] = { index, distance, verified, confidence };
    });
    return out;
  }

  /** The JSON array text. Every value is a finite number or a boolean, so no escaping is needed. */
  json(): string {
    const parts: string[] = new Array(this.indices.length);
    let i = 0;
    this.each((index, distance, verified, confidence) => {
      parts[i++] = `{"index":${index},"distance":${distance},"verified":${verified},"confidence":${confidence}}`;
    });
    return `[${parts.join(',')}]`;
  }
}

export interface CompareResponse {
  model: string;
  similarity_metric: string;
  threshold: number;
  dims: number;
  /** One entry, or one per source when `source` was a list. */
  source: SourceInfo | SourceInfo[];
  /** One list, or one list per source when `source` was a list. */
  results: CompareRows | CompareRows[];
  time: number;
}

/** The response as plain objects (MCP's structuredContent, tests). */
export function comparePlain(r: CompareResponse): Record<string, unknown> {
  const results = Array.isArray(r.results) ? r.results.map((x) => x.plain()) : r.results.plain();
  return { ...r, results };
}

/**
 * The response as JSON text, fields in the order of the response schema. The envelope is tiny and
 * goes through JSON.stringify (facial areas are objects from the model server); the results are
 * written from the typed arrays.
 */
export function compareJson(r: CompareResponse): string {
  const results = Array.isArray(r.results) ? `[${r.results.map((x) => x.json()).join(',')}]` : r.results.json();
  const head = JSON.stringify({ model: r.model, similarity_metric: r.similarity_metric, threshold: r.threshold, dims: r.dims, source: r.source });
  return `${head.slice(0, -1)},"results":${results},"time":${JSON.stringify(r.time)}}`;
}
