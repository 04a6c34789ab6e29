/**
 * The OpenAPI 3.1 document of the REST gateway, generated from the same JSON Schemas the routes
 * validate and serialize with. scripts/gen-openapi.ts writes it to openapi.json; a test fails when
 * the committed file drifts.
 */
import { ERROR_STATUS, type ErrorCode } from '../errors/index.js';
import { ERROR_DOCS } from '../errors/catalog.js';
import * as S from '../vocabulary/schemas.js';
import { catalogNames } from '../models/manifest.js';
import { capabilitiesExamples, errorExample, requestExamples, responseExamples } from './openapi-examples.js';

function strip<T extends object>(s: T): Omit<T, '$id'> {
  const { $id: _id, ...rest } = s as T & { $id?: string };
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

type Schema = Record<string, unknown> & { properties: Record<string, unknown> };

/** Standard base64, padded or not: what the targets_b64 decoder accepts (it also refuses stray bits). */
const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$';

/** anti_spoofing: the service offers none, so only the false spellings are accepted (true is 400 unsupported_option). */
const falseOnly = {
  description: 'Only false is accepted (true, "true" or 1 is `400 unsupported_option`: no anti-spoofing model is offered).',
  anyOf: [{ type: 'boolean', const: false }, { type: 'string', enum: ['false', '0'] }, { type: 'integer', const: 0 }],
};

/**
 * model_name and detector_backend: the catalog's names. The routes take any string and refuse a name
 * outside the deployment's allowlist with the contract's code, which an enum in their schema would
 * turn into invalid_request.
 */
function catalogEnums(): Record<string, unknown> {
  const { models, detectors } = catalogNames();
  return {
    model_name: { type: 'string', enum: models, description: 'Recognition model; default from /capabilities, which lists those this deployment allows (any other is `400 model_not_allowed`).' },
    detector_backend: { type: 'string', enum: detectors, description: 'Face detector; default from /capabilities, which lists those this deployment allows (any other is `400 detector_not_allowed`); `skip` = the whole image is the face.' },
  };
}

/**
 * The document states what the server accepts, tighter than the schemas the routes validate with,
 * where a rule is checked in code with a more precise error code (the routes' schemas stay the first,
 * coarse gate): model and detector names from the catalog, exactly one targets form, non-empty
 * base64 targets, anti_spoofing false only.
 */
function documented(name: string, schema: Schema): Schema {
  const props: Record<string, unknown> = { ...schema.properties };
  for (const [field, s] of Object.entries(catalogEnums())) if (field in props) props[field] = s;
  if ('anti_spoofing' in props) props['anti_spoofing'] = falseOnly;
  // Defaults are stated here, not in the routes' schemas: Fastify's Ajv would insert them into bodies,
  // and model_name and detector_backend default to what the deployment serves (/capabilities).
  for (const [field, value] of Object.entries(DEFAULTS)) if (field in props) props[field] = { ...(props[field] as object), default: value };
  if (name === 'CompareRequest') {
    props['targets'] = { ...(props['targets'] as object), minItems: 1 };
    props['targets_b64'] = { ...(props['targets_b64'] as object), minLength: 1, pattern: BASE64_PATTERN };
    return { ...schema, properties: props, oneOf: [{ required: ['targets'] }, { required: ['targets_b64'] }] };
  }
  return { ...schema, properties: props };
}

/** What an absent field means (contract v1 §3); model and detector: the contract's defaults, which a deployment may change. */
const DEFAULTS: Record<string, unknown> = {
  model_name: 'Facenet',
  detector_backend: 'opencv',
  distance_metric: 'cosine',
  align: true,
  enforce_detection: true,
  expand_percentage: 0,
  normalization: 'base',
  detector_fallback: true,
  l2_normalize: false,
  anti_spoofing: false,
};

const REQUESTS: Record<string, Schema> = {
  VerifyRequest: documented('VerifyRequest', strip(S.verifyBody) as unknown as Schema),
  RepresentRequest: documented('RepresentRequest', strip(S.representBody) as unknown as Schema),
  CompareRequest: documented('CompareRequest', strip(S.compareBody) as unknown as Schema),
};


/** Every code a compute route can answer; each route's list below leaves out what cannot happen there. */
const COMPUTE_ERRORS = ['invalid_request', 'unsupported_option', 'model_not_allowed', 'detector_not_allowed', 'invalid_image', 'embedding_dimension_mismatch', 'invalid_embedding', 'url_not_allowed', 'input_mode_disabled', 'missing_api_key', 'invalid_api_key', 'insufficient_credits', 'account_inactive', 'image_too_large', 'request_too_large', 'too_many_pixels', 'too_many_targets', 'request_over_memory_budget', 'no_face_detected', 'url_fetch_failed', 'url_not_image', 'rate_limited', 'too_many_strikes', 'internal_error', 'upstream_failed', 'upstream_lost', 'upstream_response_too_large', 'queue_full', 'queue_timeout', 'gateway_draining', 'service_warming', 'body_capacity_full', 'memory_budget_full', 'upstream_timeout', 'request_timeout', 'upload_too_slow', 'expectation_failed', 'headers_too_large'] as const;

const without = (...drop: ErrorCode[]) => COMPUTE_ERRORS.filter((c) => !drop.includes(c));
/** /verify takes no targets; /represent neither targets nor embeddings. */
const ROUTE_ERRORS: Record<'verify' | 'represent' | 'compare', readonly ErrorCode[]> = {
  verify: without('too_many_targets'),
  represent: without('too_many_targets', 'embedding_dimension_mismatch', 'invalid_embedding'),
  compare: COMPUTE_ERRORS,
};

/** One response per status, listing its codes with when each is answered (src/errors/catalog.ts), and an example of each. */
function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  const out: Record<string, unknown> = {};
  for (const [status, cs] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers: Record<string, unknown> = {};
    if (status === 429 || status === 503) headers['Retry-After'] = { $ref: '#/components/headers/Retry-After' };
    if (status === 401) headers['WWW-Authenticate'] = { schema: { type: 'string', const: 'Bearer' }, description: 'On missing_api_key.' };
    out[String(status)] = {
      description: `Error: ${cs.join(', ')}\n\n${cs.map((c) => `- \`${c}\`: ${ERROR_DOCS[c].when}`).join('\n')}`,
      headers: { 'x-request-id': { $ref: '#/components/headers/x-request-id' }, 'x-api-version': { $ref: '#/components/headers/x-api-version' }, ...headers },
      content: { 'application/json': { schema: ref('ErrorResponse'), examples: Object.fromEntries(cs.map((c) => [c, errorExample(c)])) } },
    };
  }
  return out;
}

const rateHeaders = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
  'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
  RateLimit: { $ref: '#/components/headers/RateLimit' },
  'x-request-id': { $ref: '#/components/headers/x-request-id' },
  'x-api-version': { $ref: '#/components/headers/x-api-version' },
};

/** An image sent as a file part: its bytes, typed with the image's content type (a filename is optional). */
// `format: binary` as well as OAS 3.1's contentMediaType: generators and validators that predate 3.1 read it.
const imagePart = { type: 'string', format: 'binary', contentMediaType: 'application/octet-stream', description: 'The image file itself (JPEG, PNG, WebP, GIF or BMP bytes).' };

/**
 * The multipart form of a request, restated rather than referenced: image fields may also be file
 * parts, and a binary part may replace a JSON field of the same name (allOf would demand both at once).
 * Text parts carry numbers and booleans as text and `source`/`targets` as JSON.
 */
function multipartOf(schemaName: string, files: string[], binary: Record<string, string> = {}): unknown {
  const base = REQUESTS[schemaName]!;
  const images = Object.fromEntries(files.map((f) => [f, { contentType: `image/jpeg, image/png, image/webp, image/gif, image/bmp, text/plain${f === 'source' ? ', application/json' : ''}` }]));
  const raw = Object.fromEntries(Object.keys(binary).map((f) => [f, { contentType: 'application/octet-stream' }]));
  const json = Object.fromEntries(['source', 'targets'].filter((f) => f in base.properties && !(f in binary) && !files.includes(f)).map((f) => [f, { contentType: 'application/json' }]));
  const properties: Record<string, unknown> = { ...base.properties };
  for (const f of files) properties[f] = { anyOf: [imagePart, properties[f]] };
  for (const [f, description] of Object.entries(binary)) properties[f] = { anyOf: [{ type: 'string', format: 'binary', contentMediaType: 'application/octet-stream', description }, properties[f]] };
  return { schema: { ...base, properties }, encoding: { ...images, ...raw, ...json } };
}

function computeOp(operationId: 'verify' | 'represent' | 'compare', summary: string, description: string, req: keyof typeof requestExamples, res: keyof typeof responseExamples, files: string[], binary: Record<string, string> = {}): unknown {
  return {
    operationId,
    tags: ['Compute'],
    summary,
    description,
    security: [{ bearer: [] }, { apiKey: [] }],
    parameters: [{ $ref: '#/components/parameters/x-request-id' }],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: ref(req), examples: requestExamples[req] }, 'multipart/form-data': multipartOf(req, files, binary) },
    },
    responses: { '200': { description: 'Result', headers: rateHeaders, content: { 'application/json': { schema: ref(res), examples: responseExamples[res] } } }, ...errorResponses(ROUTE_ERRORS[operationId]) },
  };
}

/** The gateway's address when nothing is configured (FACECOMPUTE_HOST and FACECOMPUTE_GATEWAY_PORT's defaults). */
export const DEFAULT_SERVER_URL = 'http://127.0.0.1:8080';

/**
 * The document with `servers` set to where this deployment's gateway answers: the configured
 * FACECOMPUTE_PUBLIC_BASE_URL, else http://HOST:GATEWAY_PORT (config.accounts.publicBaseUrl).
 */
export function withServer(doc: Record<string, unknown>, url: string): Record<string, unknown> {
  return { ...doc, servers: [{ url: url.replace(/\/+$/, ''), description: 'this deployment\'s REST gateway' }] };
}

export interface OpenApiOptions {
  /** The limits a default deployment reports in /capabilities (the example); `gatewayLimits` (src/service/configured.ts) of the default configuration. */
  limits: Record<string, number>;
}

export function buildOpenApi(version: string, opts: OpenApiOptions): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'facecompute REST API',
      version,
      summary: 'Face verification, embeddings and comparison with DeepFace-compatible models and semantics (contract v1).',
      description:
        'Contract v1. Paths carry no version prefix; every response has `x-api-version: v1` and `x-request-id`. Only the six paths below exist; any other path or method is `404 not_found`. ' +
        'Every error is `{"error": "<code>", "detail": "<text>"}`. Booleans accept true/false and the strings "true"/"false"/"1"/"0" (unlike DeepFace, "false" means false); in multipart text parts only true|false|1|0. ' +
        'Multipart bodies: file parts carry images (img, img1, img2, source), text parts the other fields (numbers as text, `source`/`targets` as JSON text). ' +
        'Fair credits: a compute request consumes one free call only when compute ran (a 2xx, or 422 no_face_detected); every other answer (4xx refusals before compute, 503, 5xx) costs nothing. ' +
        'A remote image body larger than max_image_bytes is `413 image_too_large`. The allowed models, detectors and limits change over time: read GET /capabilities.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [
      { name: 'Compute', description: 'Verification, embeddings and comparison. Authenticated with a REST key; each result (or `422 no_face_detected`) uses one free call.' },
      { name: 'Service', description: 'Liveness, readiness and what this deployment offers. No key needed.' },
    ],
    // The committed file names the default address; a running console serves its own (withServer).
    servers: [{ url: DEFAULT_SERVER_URL, description: 'default local gateway' }],
    paths: {
      '/health': { get: { operationId: 'health', tags: ['Service'], summary: 'Liveness of the gateway process', security: [], responses: { '200': { description: 'Alive', content: { 'application/json': { schema: S.healthResponse, examples: { ok: { summary: 'Alive', value: { status: 'ok', version } } } } } } } } },
      '/readiness': {
        get: {
          operationId: 'readiness',
          tags: ['Service'],
          summary: 'Readiness: the configured limiter (Redis) and the model server',
          description: 'For load balancers and orchestrators. The answer is reused for up to `FACECOMPUTE_READINESS_CACHE_MS` (1 s). `error` is a symbolic code (limiter_unavailable, model_server_unreachable, model_server_unavailable, model_server_crashloop, gateway_draining, runtime_warmup_failed, …), never exception text.',
          security: [],
          responses: {
            '200': { description: 'Ready', content: { 'application/json': { schema: ref('ReadinessResponse'), examples: responseExamples.ReadinessResponse } } },
            '503': { description: 'Warming, warmup error, or a dependency unreachable (error: limiter_unavailable, model_server_unreachable, gateway_draining, runtime_warmup_failed, …)', headers: { 'Retry-After': { $ref: '#/components/headers/Retry-After' } }, content: { 'application/json': { schema: { anyOf: [ref('ReadinessResponse'), ref('ErrorResponse')] }, examples: responseExamples.ReadinessWarming } } },
          },
        },
      },
      '/capabilities': {
        get: {
          operationId: 'capabilities',
          tags: ['Service'],
          summary: 'Allowed models, detectors, metrics, thresholds, limits and input modes',
          description: 'What this deployment serves now. Read it instead of hard-coding names or limits: `allowed_models` lists only models whose weights are installed. Free, no key.',
          security: [],
          responses: { '200': { description: 'Capabilities', content: { 'application/json': { schema: ref('CapabilitiesResponse'), examples: capabilitiesExamples(opts.limits) } } }, ...errorResponses(['upstream_failed', 'upstream_timeout']) },
        },
      },
      '/verify': { post: computeOp('verify', 'Verify two faces', 'img1 and img2 are images or embeddings. Two embeddings are decided in the gateway. `verified == distance <= threshold`; the distance is the minimum over all face pairs.', 'VerifyRequest', 'VerifyResponse', ['img1', 'img2']) },
      '/represent': { post: computeOp('represent', 'Embeddings of the faces in an image', '`img` may be an array (batch): results then hold one list of faces per image.', 'RepresentRequest', 'RepresentResponse', ['img']) },
      '/compare': {
        post: computeOp(
          'compare',
          'Compare one or many sources against many target embeddings',
          'source is {img} or {embedding}, or a list of them (one result list per source). Targets: JSON arrays (`targets`), `targets_b64`, or in multipart a binary `targets` file part (application/octet-stream, little-endian float32, row-major, N × dims; the fastest). ' +
            'A binary part whose length is not a whole number of rows is `400 embedding_dimension_mismatch` (the detail gives the row count and the expected byte length); NaN or Infinity is `400 invalid_embedding` naming the row; more targets than `limits.max_targets`, more sources than `limits.max_sources` or more results than `limits.max_compare_results` is `413 too_many_targets` with the limit in the detail. ' +
            'The body limit of /compare is `limits.max_compare_bytes`. Vector-only requests never touch the model server. Nothing is stored.',
          'CompareRequest',
          'CompareResponse',
          ['source'],
          { targets: 'Raw little-endian float32 targets, row-major, N × dims (dims = the model\'s embedding size), instead of the JSON `targets` field.' },
        ),
      },
    },
    components: {
      schemas: {
        ...REQUESTS,
        VerifyResponse: strip(S.verifyResponse),
        RepresentResponse: strip(S.representResponse),
        CompareResponse: strip(S.compareResponse),
        ReadinessResponse: strip(S.readinessResponse),
        CapabilitiesResponse: strip(S.capabilitiesResponse),
        ErrorResponse: { ...strip(S.errorResponse), properties: { error: { type: 'string', enum: Object.keys(ERROR_STATUS) }, detail: { type: 'string' } } },
      },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A REST API key (`fc_live_…`) as `Authorization: Bearer <key>`. MCP keys (`fc_mcp_…`) are refused with `401 invalid_api_key`.' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'The same REST API key in an `x-api-key` header, for clients that cannot set `Authorization`. Send one of the two.' },
      },
      parameters: {
        // Any value is accepted (a non-UUID is replaced), so the parameter is a plain string; the answer's header is a UUID.
        'x-request-id': { name: 'x-request-id', in: 'header', required: false, schema: { type: 'string' }, description: 'Echoed when a UUID, otherwise replaced by a new UUID v4; forwarded to the model server and in every log line.' },
      },
      headers: {
        'x-request-id': { schema: { type: 'string', format: 'uuid' } },
        'x-api-version': { schema: { type: 'string', const: 'v1' } },
        'Retry-After': { schema: { type: 'integer' }, description: 'Seconds; on every 429 and retryable 503.' },
        'RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests per window for this account.' },
        'RateLimit-Remaining': { schema: { type: 'integer' } },
        'RateLimit-Reset': { schema: { type: 'integer' }, description: 'Seconds until the window resets.' },
        'RateLimit-Policy': { schema: { type: 'string' }, description: 'IETF draft structured field, e.g. `"default";q=120;w=60, "concurrency";q=8`.' },
        RateLimit: { schema: { type: 'string' }, description: 'IETF draft structured field, e.g. `"default";r=119;t=60`.' },
      },
    },
  };
}
