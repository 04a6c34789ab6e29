/**
 * The targets of one /compare, whatever shape they came in, with one owner. The shapes:
 * - `targets`: JSON arrays in the body, or, in a large body, the same rows read natively as float32
 *   before JSON.parse (src/http/json-body.ts), which the body parser hands over (`adoptRows`);
 * - `targets_b64`: little-endian float32 rows as base64 text in the body, or, in a large body, that
 *   text's bytes, taken out before JSON.parse (`adoptText`) and decoded off the event loop;
 * - a binary `targets` part of a multipart body (application/octet-stream), either kept in one
 *   pooled buffer (contiguous) or compared while it arrived (streamed, src/native/compare-stream.ts)
 *   when the fields before it fixed the comparison.
 *
 * One object per request holds them: the multipart reader gives it what it read (`alloc`,
 * `adopt`, `openStream`), the compute service consumes it once (`consume`), and what it holds (the
 * pooled buffer, the stream's native state) is freed exactly once, whichever way the request ends:
 * at the end of `consume` when the compare ran, or at `release` (the gateway calls it when the
 * response closes: an answer, an error before the handler, a client gone mid-body). A `release`
 * while `consume` still runs waits for it: the kernel reads the pooled buffer in place, so the buffer
 * goes back to the pool only once the kernel is done with it.
 *
 * A new shape is one more branch of `resolve` (and, for a new body field, its schema; for a new part,
 * the multipart reader that adopts it).
 */
import { ServiceError } from '../errors/index.js';
import { decodeVectorsB64, decodeVectorsB64Bytes, floatsOfBytes, type ManyComparison, type Metric } from '../native/compare.js';
import { TargetStream, type StreamPlan } from '../native/compare-stream.js';
import type { BufferPool } from './buffer-pool.js';
import { checkEmbedding, checkRows } from './embeddings.js';
import type { LiftedRows } from '../native/json.js';

/** The body fields that carry targets (the others come as a binary part). */
export interface TargetFields {
  targets?: number[][];
  targets_b64?: string;
}

/** How many of the body's target fields are given. */
function bodyShapes(b: TargetFields): number {
  return [b.targets !== undefined, b.targets_b64 !== undefined].filter(Boolean).length;
}

/** Decides from the fields read before a binary `targets` part whether it is compared as it arrives. */
export type StreamPlanner = (fieldsBefore: Record<string, unknown>) => StreamPlan | null;

/** The targets as the kernel takes them: rows to compare, or a part already compared as it arrived. */
export type ResolvedTargets = { kind: 'rows'; rows: Float32Array; count: number } | { kind: 'streamed'; stream: TargetStream; count: number };

export class CompareTargets {
  /** Pooled buffers and native streams adopted and not yet freed, over all owners: tests watch it for leaks. */
  static held = 0;
  private readonly buffers: Uint8Array[] = [];
  private readonly streams: TargetStream[] = [];
  private lifted: LiftedRows | null = null;
  private liftedText: Buffer | null = null;
  /** The pooled body buffer `liftedText` is a view of, given back with the rest. */
  private textHolder: Buffer | null = null;
  private consuming = false;
  private consumed = false;
  private over = false;
  private freed = false;

  /**
   * `pool`: where binary parts land (none: fresh buffers, nothing to give back); `planner`: when a
   * binary part may be compared as it arrives (none: never).
   */
  constructor(
    private readonly pool: BufferPool | null = null,
    private readonly planner: StreamPlanner | null = null,
  ) {}

  // ---- filled by the multipart reader (src/gateway/multipart.ts) ----

  /** A buffer for a binary part being read: exactly `size` bytes on its own ArrayBuffer. */
  alloc(size: number): Buffer {
    return this.pool ? this.pool.acquire(size) : Buffer.allocUnsafeSlow(size);
  }

  /** Gives back a buffer from `alloc` that the reader did not keep (grown, or its read failed). */
  discard(buf: Buffer): void {
    this.pool?.release(buf);
  }

  /** Takes a binary part read whole into `alloc`'s buffers; freed with the owner. */
  adopt(bytes: Uint8Array): void {
    this.buffers.push(bytes);
    CompareTargets.held++;
    if (this.freed) this.freeAll();
  }

  // ---- filled by the JSON body parser (src/http/json-body.ts) ----

  /**
   * Takes the body's `targets` rows, read natively and taken out of the body before JSON.parse; they
   * stand for the `targets` field, which the body then lacks. Plain memory: nothing to give back.
   */
  adoptRows(rows: LiftedRows): void {
    this.lifted = rows;
  }

  /**
   * Takes the body's `targets_b64` text as bytes, taken out of the body before JSON.parse. `holder`:
   * the pooled body buffer the bytes are a view of, which is this owner's from here (freed with it).
   */
  adoptText(b64: Buffer, holder: Buffer | null): void {
    this.liftedText = b64;
    this.textHolder = holder;
    if (holder) CompareTargets.held++;
    if (this.freed) this.freeAll();
  }

  /**
   * A streamed comparison of the binary part about to arrive, when the fields read before it fix
   * the comparison (the planner), else null. The stream is the owner's from here.
   */
  openStream(fieldsBefore: Record<string, unknown>, delimiter: Uint8Array): TargetStream | null {
    // Targets in the body as well: the request fails once read; nothing to compare meanwhile.
    if (this.freed || bodyShapes(fieldsBefore as TargetFields) > 0) return null;
    let s: TargetStream;
    try {
      const plan = this.planner?.(fieldsBefore) ?? null;
      if (!plan) return null;
      s = new TargetStream(plan, delimiter);
    } catch {
      // Whatever is wrong with those fields is reported, as usual, once the body is read.
      return null;
    }
    this.streams.push(s);
    CompareTargets.held++;
    return s;
  }

  /** How a binary part was read, for the metrics; null when there is none. */
  get binaryPath(): 'streamed' | 'contiguous' | null {
    return this.streams.length > 0 ? 'streamed' : this.buffers.length > 0 ? 'contiguous' : null;
  }

  // ---- consumed by the compute service (src/service/compute-service.ts) ----

  /**
   * Runs the compare with these targets, once; whatever it holds is freed when `fn` settles. A
   * `release` meanwhile waits for it.
   */
  async consume<T>(fn: () => Promise<T>): Promise<T> {
    if (this.consumed) throw new ServiceError('internal_error', 'the targets of a compare were consumed twice');
    this.consumed = true;
    this.consuming = true;
    try {
      return await fn();
    } finally {
      this.consuming = false;
      this.over = true;
      this.freeAll();
    }
  }

  /**
   * Exactly one of the shapes, checked and ready for the kernel: counts over `maxTargets` are
   * `413 too_many_targets`, a binary length that is not whole rows `400 embedding_dimension_mismatch`.
   * NaN and Infinity in rows are found by the kernel, which names the row (`400 invalid_embedding`).
   */
  async resolve(b: TargetFields, dims: number, maxTargets: number): Promise<ResolvedTargets> {
    const stream = this.streams[0];
    const bytes = this.buffers[0];
    const { lifted, liftedText } = this;
    const given = bodyShapes(b) + (stream !== undefined || bytes !== undefined || lifted !== null ? 1 : 0) + (liftedText !== null ? 1 : 0);
    if (given !== 1) throw new ServiceError('invalid_request', 'exactly one of targets (JSON arrays or a binary application/octet-stream part) or targets_b64 is required');
    if (stream !== undefined) return { kind: 'streamed', stream, count: binaryRows(stream.byteLength, dims, maxTargets) };
    if (bytes !== undefined) {
      const count = binaryRows(bytes.byteLength, dims, maxTargets);
      return { kind: 'rows', rows: floatsOfBytes(bytes), count };
    }
    if (lifted !== null) {
      const n = lifted.rowLengths.length;
      // The reader keeps at most one row past its cap (rowsOver): the count is then a lower bound.
      if (n > maxTargets || lifted.rowsOver) throw new ServiceError('too_many_targets', `targets holds ${lifted.rowsOver ? 'more than ' : ''}${lifted.rowsOver ? n - 1 : n} vectors; the limit is ${maxTargets}`);
      return { kind: 'rows', rows: checkRows(lifted.values, lifted.rowLengths, dims, 'targets'), count: n };
    }
    if (b.targets !== undefined) {
      if (b.targets.length > maxTargets) throw new ServiceError('too_many_targets', `targets holds ${b.targets.length} vectors; the limit is ${maxTargets}`);
      const rows = new Float32Array(b.targets.length * dims);
      for (const [i, v] of b.targets.entries()) rows.set(checkEmbedding(v, dims, `targets[${i}]`), i * dims);
      return { kind: 'rows', rows, count: b.targets.length };
    }
    // A lifted text is ASCII: its byte length is the string's length.
    const approx = Math.floor(((liftedText?.length ?? b.targets_b64!.length) * 3) / 4 / 4 / dims);
    if (approx > maxTargets) throw new ServiceError('too_many_targets', `targets_b64 holds about ${approx} vectors; the limit is ${maxTargets}`);
    const rows = liftedText ? await decodeVectorsB64Bytes(liftedText, dims) : decodeVectorsB64(b.targets_b64!, dims);
    if (rows.length === 0) throw new ServiceError('invalid_request', 'targets_b64 holds no vectors');
    return { kind: 'rows', rows, count: rows.length / dims };
  }

  /**
   * The streamed part's results, once the request's sources are known. Fields that fix the
   * comparison cannot be repeated, so the plan made from them still holds; only a change of the
   * model server's dimensions mid-request could break it.
   */
  finishStream(stream: TargetStream, dims: number, metric: Metric, sources: Float32Array, topK: number | undefined): ManyComparison {
    const plan = stream.plan;
    if (plan.dims !== dims || plan.metric !== metric || !sameFloats(plan.sources, sources) || (plan.topK !== undefined && plan.topK !== topK)) {
      throw new ServiceError('internal_error', 'the targets were compared with other options than the request ended with; send the request again');
    }
    return stream.finish(topK);
  }

  // ---- the request's end (the gateway) ----

  /** The request is over: frees what is held now, or when a running `consume` ends. Idempotent. */
  release(): void {
    this.over = true;
    if (!this.consuming) this.freeAll();
  }

  private freeAll(): void {
    this.freed = this.over;
    if (!this.freed) return;
    for (const b of this.buffers.splice(0)) {
      this.pool?.release(b);
      CompareTargets.held--;
    }
    for (const s of this.streams.splice(0)) {
      s.close();
      CompareTargets.held--;
    }
    this.lifted = null;
    this.liftedText = null;
    if (this.textHolder) {
      this.pool?.release(this.textHolder);
      this.textHolder = null;
      CompareTargets.held--;
    }
  }
}

/** The rows of `byteLength` bytes of binary targets, or the error that refuses them. */
function binaryRows(byteLength: number, dims: number, maxTargets: number): number {
  const rowBytes = dims * 4;
  const rows = Math.floor(byteLength / rowBytes);
  if (rows > maxTargets) throw new ServiceError('too_many_targets', `the binary targets hold ${rows} vectors; the limit is ${maxTargets}`);
  if (byteLength % rowBytes !== 0) {
    throw new ServiceError(
      'embedding_dimension_mismatch',
      `the binary targets are ${byteLength} bytes: ${rows} whole rows of ${dims} float32 (${rowBytes} bytes each) and ${byteLength - rows * rowBytes} bytes of a truncated row; expected ${rows * rowBytes} or ${(rows + 1) * rowBytes} bytes`,
    );
  }
  if (rows === 0) throw new ServiceError('invalid_request', 'the binary targets hold no vectors');
  return rows;
}

function sameFloats(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
