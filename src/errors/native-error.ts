import { isErrorCode } from './codes.js';
import { ServiceError } from './service-error.js';

/**
 * The native binding reports failures as `Error`s whose message is `<code>|<detail>` (see
 * crates/facecompute-node/src/guard.rs). This turns one into a ServiceError; anything else is a bug.
 */
export function fromNative(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const bar = message.indexOf('|');
  if (bar > 0) {
    const code = message.slice(0, bar);
    if (isErrorCode(code)) return new ServiceError(code, message.slice(bar + 1), { cause: err });
  }
  return new ServiceError('internal_error', 'internal error in the native core', { cause: err });
}
