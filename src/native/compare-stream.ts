/**
 * Typed wrapper over the native streaming comparison (crates/facecompute-node/src/stream.rs): the
 * rows of a binary `targets` part are scored as each socket chunk arrives, by the kernels of
 * compareOneToMany, and the end of the part is found in the same call. The answer equals
 * compareManyToMany's (compareOneToMany's per source) for the same bytes, bit for bit. Every native
 * failure comes back as a ServiceError with a stable code.
 */
import { fromNative } from '../errors/index.js';
import { native } from './addon.js';
import type { ManyComparison, Metric } from './compare.js';

/** What a streamed comparison needs before the first target arrives. */
export interface StreamPlan {
  /** K×dims, row-major, 1 ≤ K < STREAM_MAX_SOURCES + 1. */
  sources: Float32Array;
  dims: number;
  metric: Metric;
  /** The top_k when it is known before the targets; without it every distance is kept. */
  topK?: number;
  /** Rows past this are counted, not scored (the request is refused). */
  maxRows: number;
}

/**
 * Most sources compared while the targets stream: the work per chunk grows with each, and from
 * MIN_GEMM_SOURCES (4) on the blocked matrix product over the whole targets is the faster path.
 */
export const STREAM_MAX_SOURCES = 3;

function call<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw fromNative(err);
  }
}

export class TargetStream {
  /** Streams whose native state is held (made, neither finished nor closed): tests watch it for leaks. */
  static live = 0;
  private readonly inner: InstanceType<typeof native.CompareStream>;
  private held = true;
  /** The length once the native state is gone. */
  private finalBytes = -1;

  constructor(
    readonly plan: StreamPlan,
    delimiter: Uint8Array,
  ) {
    this.inner = call(() => new native.CompareStream(plan.sources, plan.dims, plan.metric, plan.topK, plan.maxRows, delimiter));
    TargetStream.live++;
  }

  /** Scores the chunk's rows; the index in `chunk` just past the part's delimiter, or -1. */
  feed(chunk: Uint8Array): number {
    return call(() => this.inner.feed(chunk));
  }

  /** The part's length in bytes so far. */
  get byteLength(): number {
    return this.finalBytes >= 0 ? this.finalBytes : this.inner.bytes;
  }

  /** One result list per source (see ManyComparison); `topK` is the request's final top_k. */
  finish(topK: number | undefined): ManyComparison {
    this.unhold();
    const out = call(() => this.inner.finish(topK));
    return { offsets: out.offsets, indices: out.indices, distances: out.distances, count: out.count };
  }

  /** Frees the native state of a request that ends without `finish`. */
  close(): void {
    this.unhold();
    this.inner.close();
  }

  private unhold(): void {
    if (this.held) {
      TargetStream.live--;
      this.finalBytes = this.inner.bytes;
    }
    this.held = false;
  }
}
