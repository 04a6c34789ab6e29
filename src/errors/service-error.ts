import { ERROR_STATUS, type ErrorCode } from './codes.js';

/** The body every error response carries (contract §5). */
export interface ErrorBody {
  error: ErrorCode;
  detail: string;
}

/**
 * A failure with a stable code. `detail` is shown to callers, so it must never hold stack traces,
 * file paths, SQL or upstream bodies; put those in `cause`, which only reaches logs.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly detail: string;
  /** Extra response headers (e.g. Retry-After, WWW-Authenticate). */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, detail: string, options: { cause?: unknown; headers?: Record<string, string> } = {}) {
    super(`${code}: ${detail}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.detail = detail;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    return { error: this.code, detail: this.detail };
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof ServiceError;
}
