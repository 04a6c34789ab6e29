/**
 * The binding's own closed sets (interpolation, layout, ...) as value lists, read from the addon's
 * `#[napi(string_enum)]` objects (crates/facecompute-node/src/types.rs), so each spelling is written
 * once, in Rust; the contract's sets (metrics, normalizations) come from src/vocabulary/closed-sets.ts.
 *
 * napi rejects a string outside a set with its own error (status `InvalidArg`), which fromNative
 * cannot tell from a bug of ours; the wrappers check their closed-set arguments with `member` first,
 * so a bad value is `invalid_request`, as the binding's hand-written parsers made it before.
 */
import { ServiceError } from '../errors/index.js';
import { native } from './addon.js';
import { NORMALIZATIONS } from '../vocabulary/closed-sets.js';

export { NORMALIZATIONS };

function values<T extends string>(set: Readonly<Record<string, T>>): readonly T[] {
  return Object.freeze(Object.values(set));
}

export const CHANNEL_ORDERS = values(native.ChannelOrder);
export const INTERPOLATIONS = values(native.Interpolation);
export const TENSOR_LAYOUTS = values(native.TensorLayout);
export const PREPROCESSES = values(native.Preprocess);
export const LETTERBOXES = values(native.Letterbox);
export const RETINAFACE_VARIANTS = values(native.RetinafaceVariant);
export const MTCNN_FLAVORS = values(native.MtcnnFlavor);

/** `value` if it is one of `set`, else invalid_request naming `what`. */
export function member<T extends string>(set: readonly T[], value: unknown, what: string): T {
  const found = set.find((v) => v === value);
  if (found === undefined) throw new ServiceError('invalid_request', `${what} must be one of ${set.join(', ')}, not '${String(value).slice(0, 40)}'`);
  return found;
}
