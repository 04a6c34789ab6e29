/**
 * The stable error codes of contract v1 §5 and their HTTP statuses. This table is the only place a
 * code is mapped to a status: routes throw `ServiceError`s, the error plugins render them.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unsupported_option: 400,
  model_not_allowed: 400,
  detector_not_allowed: 400,
  invalid_image: 400,
  embedding_dimension_mismatch: 400,
  invalid_embedding: 400,
  url_not_allowed: 400,
  input_mode_disabled: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  insufficient_credits: 402,
  account_inactive: 403,
  not_found: 404,
  // A path that exists under other methods (src/http/route-guard.ts); `Allow` lists them.
  method_not_allowed: 405,
  image_too_large: 413,
  request_too_large: 413,
  too_many_pixels: 413,
  too_many_targets: 413,
  // The request's estimated peak memory is over what the model server's budget leaves for jobs
  // (src/model-server/memory-gate.ts); memory_budget_full: it fits, but not beside the running ones.
  request_over_memory_budget: 413,
  no_face_detected: 422,
  url_fetch_failed: 422,
  // A remote fetch that completed and was not an image: charged (src/accounts/charging.ts).
  url_not_image: 422,
  rate_limited: 429,
  // Requests of this account were lost with their model server too often (src/service/limits/strikes.ts).
  too_many_strikes: 429,
  internal_error: 500,
  upstream_failed: 502,
  // The model server stopped while computing the request, whose frame it had received: not retried,
  // not refunded, a strike (src/model-client/client.ts, src/accounts/charging.ts).
  upstream_lost: 502,
  upstream_response_too_large: 502,
  queue_full: 503,
  queue_timeout: 503,
  gateway_draining: 503,
  service_warming: 503,
  // The gateway holds FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES of request bodies already (src/http/body-budget.ts).
  body_capacity_full: 503,
  memory_budget_full: 503,
  upstream_timeout: 504,
  // Refused by the HTTP parser before any route (src/http/transport-guards.ts); new conditions (§8).
  request_timeout: 408,
  // A body arriving slower than FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S (src/http/upload-rate.ts).
  upload_too_slow: 408,
  expectation_failed: 417,
  headers_too_large: 431,
  // Console-only conditions (contract §7 allows new codes for new conditions).
  unauthorized: 401,
  email_taken: 409,
  key_limit_reached: 409,
  invalid_credentials: 401,
  csrf_failed: 403,
  origin_not_allowed: 403,
  signup_rate_limited: 429,
  payment_method_declined: 402,
  card_in_use: 409,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value);
}

/** Codes whose 503 means "try again later": they carry `Retry-After`. */
export const RETRYABLE_503: ReadonlySet<ErrorCode> = new Set(['queue_full', 'queue_timeout', 'service_warming', 'gateway_draining', 'body_capacity_full', 'memory_budget_full']);
