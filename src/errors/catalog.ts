/**
 * What each error code means to a caller: when it is answered, whether the same request can succeed
 * later, and what to do. docs/errors.md is rendered from this table, the statuses from codes.ts and
 * the "charged" column from the charging rule itself (src/accounts/charging.ts), by
 * `node --import tsx scripts/update-readme-figures.ts`; test/readme-figures.test.ts fails when the page and
 * this table differ, and the type below fails the build when a code has no entry.
 */
import type { ErrorCode } from './codes.js';

/** Where a code can be answered. */
export type Surface = 'REST' | 'MCP' | 'console' | 'model server';

/**
 * Whether sending the same request again can succeed:
 * - `no`: not until the request (or the account, or the key) changes;
 * - `after Retry-After`: yes, after the seconds the `Retry-After` header gives;
 * - `with backoff`: yes, a little later (exponential backoff, a few tries).
 */
export type Retry = 'no' | 'after Retry-After' | 'with backoff';

export interface ErrorDoc {
  surfaces: readonly Surface[];
  /** When the code is answered. */
  when: string;
  retry: Retry;
  /** What the caller should do. */
  action: string;
}

const COMPUTE: readonly Surface[] = ['REST', 'MCP'];

export const ERROR_DOCS = {
  invalid_request: {
    surfaces: ['REST', 'MCP', 'console', 'model server'],
    when: 'malformed JSON or multipart, a field of the wrong type, an unknown or missing field, a bad boolean, a broken HTTP request (framing, percent-encoding, no Host)',
    retry: 'no',
    action: 'Fix the request; `detail` names the field or the problem.',
  },
  unsupported_option: { surfaces: COMPUTE, when: 'an option the service does not offer, e.g. `anti_spoofing: true`', retry: 'no', action: 'Leave the option out (or `false`).' },
  model_not_allowed: { surfaces: COMPUTE, when: '`model_name` is not served by this deployment', retry: 'no', action: 'Use a model from `GET /capabilities` `allowed_models`; `detail` lists them.' },
  detector_not_allowed: { surfaces: COMPUTE, when: '`detector_backend` is not allowed here', retry: 'no', action: 'Use a detector from `GET /capabilities` `allowed_detectors`; `detail` lists them.' },
  invalid_image: { surfaces: COMPUTE, when: 'the bytes are not a decodable JPEG, PNG, WebP, GIF or BMP (corrupt, truncated, another format)', retry: 'no', action: 'Send a real image file; `detail` names the input.' },
  embedding_dimension_mismatch: { surfaces: COMPUTE, when: 'an embedding (or a binary `targets` row) does not have the model\'s length, or is empty', retry: 'no', action: 'Send embeddings of `embedding_dims[model]` numbers, made by the same model.' },
  invalid_embedding: { surfaces: COMPUTE, when: 'an embedding value is not a finite number (NaN, Infinity, a string, null)', retry: 'no', action: 'Send finite numbers; `detail` names the position.' },
  url_not_allowed: { surfaces: COMPUTE, when: 'a remote URL or `file:` path the SSRF policy refuses (private or loopback address, non-default port, a host outside the allowlist, a path outside the images root)', retry: 'no', action: 'Send the image bytes instead (multipart or base64).' },
  input_mode_disabled: { surfaces: COMPUTE, when: 'an input mode this deployment has switched off (remote URLs, `file:` paths)', retry: 'no', action: 'Send the image bytes (multipart or base64); `GET /capabilities` `input_modes` lists what is on.' },
  missing_api_key: { surfaces: COMPUTE, when: 'no key on a compute route (`WWW-Authenticate: Bearer`)', retry: 'no', action: 'Send `Authorization: Bearer <key>` or `x-api-key: <key>`.' },
  invalid_api_key: { surfaces: COMPUTE, when: 'the key is unknown, revoked, or of the other kind (an MCP key on REST, a REST key on MCP)', retry: 'no', action: 'Create a key of the right kind in the console (`fc_live_…` for REST, `fc_mcp_…` for MCP).' },
  insufficient_credits: { surfaces: COMPUTE, when: 'the account\'s free calls are used up', retry: 'no', action: 'Stop retrying; verify the email or save a card for a larger allowance, or ask the operator.' },
  account_inactive: { surfaces: COMPUTE, when: 'the account is disabled', retry: 'no', action: 'Contact the operator.' },
  not_found: { surfaces: ['REST', 'MCP', 'console'], when: 'a path that does not exist (refused before the body is read, with `Connection: close` when a body was sent); on the console also a key id the account does not hold', retry: 'no', action: 'Check the path and method against the API reference.' },
  method_not_allowed: { surfaces: ['REST', 'MCP', 'console'], when: 'a method the path does not take (`Allow` lists those it does); refused before the body is read, with `Connection: close` when a body was sent', retry: 'no', action: 'Use a method from the `Allow` header.' },
  image_too_large: { surfaces: COMPUTE, when: 'an image (after base64 decoding, or a remote body) is larger than `limits.max_image_bytes`', retry: 'no', action: 'Send a smaller file (re-encode or downscale).' },
  request_too_large: { surfaces: COMPUTE, when: 'the body is larger than `limits.max_request_bytes` (`/compare`: `limits.max_compare_bytes`), a JSON body holds more than `limits.max_json_values` values (outside `/compare`\'s JSON `targets`), or a batch has more images than `limits.max_batch_images`', retry: 'no', action: 'Split the request; read the limits from `GET /capabilities` first.' },
  too_many_pixels: { surfaces: COMPUTE, when: 'an image\'s width × height is over `limits.max_image_pixels`, or a request\'s images together are over `limits.max_request_pixels` (checked from their headers, before decoding)', retry: 'no', action: 'Downscale the images, or send them in separate requests.' },
  too_many_targets: { surfaces: COMPUTE, when: 'more targets than `limits.max_targets`, more sources than `limits.max_sources`, or more results than `limits.max_compare_results`', retry: 'no', action: 'Split the targets, or use `top_k`.' },
  request_over_memory_budget: { surfaces: COMPUTE, when: 'the request\'s estimated peak memory on the model server (its images\' decoded size and what its detector holds for them) is over what `FACECOMPUTE_MODEL_SERVER_MEMORY_BYTES` (2 GiB) leaves beside the loaded models; checked from the image headers, before decoding', retry: 'no', action: 'Downscale the images, use a detector that resizes (retinaface, yunet), or send the images in separate requests.' },
  no_face_detected: { surfaces: COMPUTE, when: 'the detectors ran and found no face (after the detector fallback, when it applies)', retry: 'no', action: 'Send a clearer, larger or frontal photo. `enforce_detection: false` embeds the whole image instead, which makes distances meaningless for verification.' },
  url_fetch_failed: { surfaces: COMPUTE, when: 'a remote image could not be fetched: a non-200 answer, a timeout, too many redirects', retry: 'with backoff', action: 'Check the URL is public and serves an image; or send the bytes.' },
  url_not_image: { surfaces: COMPUTE, when: 'a remote URL was fetched whole and is not a JPEG, PNG, WebP, GIF or BMP image; the fetch was done on your behalf, so the call is charged, and its bytes count against `FACECOMPUTE_REMOTE_FETCH_BYTES_PER_MINUTE`', retry: 'no', action: 'Send the URL of an image, or the bytes.' },
  rate_limited: { surfaces: [...COMPUTE, 'console'], when: 'more requests than the account\'s window allows (an MCP batch counts each element), more at once than its concurrency, more request bodies at once than its share (`FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT`), or more remote fetches or fetched bytes per minute than `FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE` / `_FETCH_BYTES_PER_MINUTE` allow (REST, MCP); too many attempts (console: card attempts, sign-in failures, verification mails)', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds; lower your concurrency (see Limits).' },
  internal_error: { surfaces: ['REST', 'MCP', 'console', 'model server'], when: 'a bug on our side; logged with the request id, and the call is refunded', retry: 'with backoff', action: 'Retry once; if it persists, report the `x-request-id`.' },
  too_many_strikes: { surfaces: COMPUTE, when: 'the account had `FACECOMPUTE_STRIKE_LIMIT` (3) requests lost with their model server (`502 upstream_lost`) within `FACECOMPUTE_STRIKE_WINDOW_MS` (24 h); only requests with images are refused, embeddings-only ones still run', retry: 'after Retry-After', action: 'Stop sending the images that were lost; wait `Retry-After` seconds (the end of the window). Requests with embeddings only still work.' },
  upstream_failed: { surfaces: COMPUTE, when: 'a model server failed or answered garbage, no model server is known, or the rate limiter\'s backend (Redis) is unavailable', retry: 'with backoff', action: 'Retry with backoff; nothing was charged.' },
  upstream_response_too_large: { surfaces: COMPUTE, when: 'a model server answered more than the gateway accepts (`FACECOMPUTE_MAX_UPSTREAM_RESPONSE_BYTES`)', retry: 'no', action: 'Ask for fewer faces (`max_faces`) or a smaller batch.' },
  upstream_lost: { surfaces: COMPUTE, when: 'the model server read the whole request and stopped while computing it, presumably because of its input; the request is not sent to another model server, and it counts as a strike against the account', retry: 'no', action: 'Do not resend the same images: check them (a valid, undamaged JPEG, PNG or WebP). The call is charged.' },
  queue_full: { surfaces: COMPUTE, when: 'the service is at capacity: the estimated wait is past the queue timeout, or the queue is full', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds, then retry with backoff and less concurrency.' },
  queue_timeout: { surfaces: COMPUTE, when: 'a request waited the whole queue timeout for a compute slot', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds; lower your concurrency.' },
  gateway_draining: { surfaces: COMPUTE, when: 'this gateway is shutting down (`Connection: close`)', retry: 'after Retry-After', action: 'Retry at once on a new connection: another replica answers.' },
  body_capacity_full: { surfaces: COMPUTE, when: 'the gateway already holds `FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES` (256 MiB) of request bodies; refused from the headers, before the body is read', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds, then retry with backoff; send smaller bodies (URLs or embeddings instead of images) if you can.' },
  memory_budget_full: { surfaces: COMPUTE, when: 'the model server\'s memory budget was held by other requests for longer than `FACECOMPUTE_QUEUE_TIMEOUT_MS` (10 s); refused before decoding', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds, then retry with backoff; smaller images need less of the budget.' },
  service_warming: { surfaces: COMPUTE, when: 'the models are still loading, or a model server is restarting', retry: 'after Retry-After', action: 'Wait `Retry-After` seconds; `GET /readiness` says when it is ready.' },
  upstream_timeout: { surfaces: COMPUTE, when: 'the model server did not answer within `FACECOMPUTE_UPSTREAM_TIMEOUT_MS`', retry: 'with backoff', action: 'Retry later with a smaller request; nothing was charged.' },
  request_timeout: { surfaces: ['REST', 'MCP', 'console'], when: 'the headers and body did not all arrive within `FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS` (30 s)', retry: 'with backoff', action: 'Send the whole request promptly; on a slow link send smaller images.' },
  upload_too_slow: { surfaces: ['REST', 'MCP'], when: 'the body arrived slower than `FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S` (16 KiB/s) on average, measured after a grace of `FACECOMPUTE_UPLOAD_GRACE_MS` (1.5 s); the connection is closed', retry: 'with backoff', action: 'Send the body promptly; on a slow link send smaller images or URLs.' },
  expectation_failed: { surfaces: ['REST', 'MCP', 'console'], when: 'an `Expect` header other than `100-continue`', retry: 'no', action: 'Drop the `Expect` header.' },
  headers_too_large: { surfaces: ['REST', 'MCP', 'console'], when: 'request headers over 16 KiB', retry: 'no', action: 'Send fewer or shorter headers (cookies).' },
  unauthorized: { surfaces: ['console', 'model server'], when: 'console: no session, or an expired one; model server: a missing or wrong internal token', retry: 'no', action: 'Sign in again (`POST /api/login`) and send the new session token.' },
  email_taken: { surfaces: ['console'], when: 'an account already uses this email', retry: 'no', action: 'Sign in instead, or use another address.' },
  key_limit_reached: { surfaces: ['console'], when: 'the account holds as many active keys of this kind as its tier allows', retry: 'no', action: 'Revoke a key first, or verify the account\'s email (25 keys of each kind).' },
  invalid_credentials: { surfaces: ['console'], when: 'a wrong email or password (repeated failures from one address then wait: `429 rate_limited`)', retry: 'no', action: 'Check the email and password.' },
  csrf_failed: { surfaces: ['console'], when: 'a cookie-authenticated write without a matching CSRF token', retry: 'no', action: 'Reload the page (browsers), or authenticate with `Authorization: Bearer <session_token>` (agents).' },
  origin_not_allowed: { surfaces: ['MCP', 'console'], when: 'a browser request from an origin the endpoint does not allow', retry: 'no', action: 'Call from an allowed origin (`FACECOMPUTE_MCP_ALLOWED_ORIGINS`), or from outside a browser.' },
  signup_rate_limited: { surfaces: ['console'], when: 'too many signups from one client address (IPv4, or IPv6 /64), or from one IPv6 /48, in an hour', retry: 'after Retry-After', action: 'Reuse the account and key you have.' },
  payment_method_declined: { surfaces: ['console'], when: 'the card was declined (the provider\'s reason is logged, not returned)', retry: 'no', action: 'Use another card.' },
  card_in_use: { surfaces: ['console'], when: 'this card already gives the card allowance to another account', retry: 'no', action: 'Use another card.' },
} as const satisfies Record<ErrorCode, ErrorDoc>;
