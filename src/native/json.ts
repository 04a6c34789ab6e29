/**
 * Typed wrapper over the native JSON syntax check (crates/facecompute-core/src/json.rs): serde_json's
 * grammar on the libuv pool, nothing kept, so a large body that is not JSON is refused without the
 * event loop parsing it. Every native failure comes back as a ServiceError with a stable code.
 */
import { fromNative } from '../errors/index.js';
import { native } from './addon.js';
import type { JsonCheck } from '../../index.js';

/** `valid`, or the byte offset of the first error and serde_json's reason (without a position). */
export type JsonSyntaxCheck = JsonCheck;

export async function checkJsonSyntax(body: Buffer): Promise<JsonSyntaxCheck> {
  try {
    return await native.checkJson(body);
  } catch (err) {
    throw fromNative(err);
  }
}
