/**
 * Typed wrapper over the native reading of a large JSON body (crates/facecompute-core/src/json):
 * serde_json's grammar, a count of the values JSON.parse would build, and a top-level member's rows
 * of numbers taken out as float32, on the libuv pool. Every native failure comes back as a
 * ServiceError with a stable code.
 */
import { fromNative } from '../errors/index.js';
import { native } from './addon.js';
import type { JsonLift, JsonLiftedRows, JsonScan } from './types.js';

/** Rows taken out of a body: `values` row-major, `rowLengths[i]` numbers in row i, from `body[start..end]`. */
export type LiftedRows = JsonLiftedRows;

/** The top-level members to take out: `rows` when it holds rows of numbers, `text` when it is a plain ASCII string. */
export type LiftMembers = JsonLift;

/**
 * Not JSON (`valid` false: the byte offset of the first error and serde_json's reason), or JSON with
 * `values` values outside what was lifted (`over` when more than `maxValues`: counting stopped, nothing
 * lifted), `lifted` (rows) and `liftedText` (the string's span, quotes included) for the members of
 * `lift` that held what it asks for.
 */
export async function scanJsonBody(body: Buffer, lift: LiftMembers, maxValues: number): Promise<JsonScan> {
  try {
    return await native.scanJson(body, lift, Math.min(maxValues, 2 ** 32 - 1));
  } catch (err) {
    throw fromNative(err);
  }
}
