/**
 * Typed errors: one class per kind of refusal, each carrying the contract's stable `code`, its
 * `detail`, the HTTP `status`, the `x-request-id` to quote in a support request and `Retry-After`.
 */
export interface ErrorFields {
  status?: number | undefined;
  requestId?: string | undefined;
  retryAfter?: number | undefined;
  body?: unknown;
}

export class FacecomputeError extends Error {
  readonly code: string;
  readonly detail: string;
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (Retry-After), when it said. */
  readonly retryAfter: number | undefined;
  readonly body: unknown;

  constructor(code: string, detail: string, fields: ErrorFields = {}, options?: { cause?: unknown }) {
    const where = fields.status !== undefined ? `${fields.status} ` : '';
    const rid = fields.requestId ? ` (x-request-id ${fields.requestId})` : '';
    super(`${where}${code}: ${detail}${rid}`, options);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.status = fields.status;
    this.requestId = fields.requestId;
    this.retryAfter = fields.retryAfter;
    this.body = fields.body;
  }
}

/** The request got no answer: refused or reset connection, DNS, TLS, a timeout, or a URL input that could not be fetched. */
export class APIConnectionError extends FacecomputeError {}
/** The request took longer than its timeout (`timeout`, per client or per request); code `timeout`. */
export class APITimeoutError extends APIConnectionError {}
/** The caller's AbortSignal aborted the request or a wait between retries; code `aborted`. */
export class APIUserAbortError extends APIConnectionError {}
/** 400: invalid_request, unsupported_option, model_not_allowed, invalid_image, ... */
export class BadRequestError extends FacecomputeError {}
/** 401: missing_api_key or invalid_api_key. */
export class AuthenticationError extends FacecomputeError {}
/** 402: the account's free calls are used up. */
export class InsufficientCreditsError extends FacecomputeError {}
/** 403: account_inactive. */
export class PermissionDeniedError extends FacecomputeError {}
/** 404: not a route of the service (check baseUrl). */
export class NotFoundError extends FacecomputeError {}
/** 413: image_too_large, request_too_large, too_many_pixels, too_many_targets. */
export class PayloadTooLargeError extends FacecomputeError {}
/** 422: no_face_detected, url_fetch_failed. */
export class UnprocessableEntityError extends FacecomputeError {}
/** 422 no_face_detected. */
export class NoFaceDetectedError extends UnprocessableEntityError {}
/** 429 rate_limited, once the retries are spent. */
export class RateLimitError extends FacecomputeError {}
/** 5xx. */
export class InternalServerError extends FacecomputeError {}
/** 503 queue_full, queue_timeout, service_warming, gateway_draining, once the retries are spent. */
export class ServiceUnavailableError extends InternalServerError {}
/** 504 upstream_timeout. */
export class GatewayTimeoutError extends InternalServerError {}

type ErrorClass = new (code: string, detail: string, fields?: ErrorFields) => FacecomputeError;

const BY_STATUS: Record<number, ErrorClass> = {
  400: BadRequestError,
  401: AuthenticationError,
  402: InsufficientCreditsError,
  403: PermissionDeniedError,
  404: NotFoundError,
  413: PayloadTooLargeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
  503: ServiceUnavailableError,
  504: GatewayTimeoutError,
};

const BY_CODE: Record<string, ErrorClass> = { no_face_detected: NoFaceDetectedError };

/** The class for an error answer: by code where one is named, else by status. */
export function errorClass(status: number, code: string): ErrorClass {
  return BY_CODE[code] ?? BY_STATUS[status] ?? (status >= 500 ? InternalServerError : FacecomputeError);
}
