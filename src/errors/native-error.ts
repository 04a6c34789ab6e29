import { isErrorCode } from './codes.js';
import { ServiceError } from './service-error.js';

/**
 * The native binding reports a failure as an `Error` whose `code` is the core's stable code and whose
 * message is its detail (crates/facecompute-node/src/guard.rs). This turns one into a ServiceError;
 * anything else (napi's own argument errors, whose codes are napi statuses such as `InvalidArg`) is
 * a bug on our side of the binding and becomes internal_error without its text.
 */
export function fromNative(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  if (err instanceof Error && 'code' in err) {
    const code: unknown = err.code;
    if (typeof code === 'string' && isErrorCode(code)) return new ServiceError(code, err.message, { cause: err });
  }
  return new ServiceError('internal_error', 'internal error in the native core', { cause: err });
}
