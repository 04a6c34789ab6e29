/**
 * JSON Schemas of every request and response body: used by Fastify for validation and response
 * serialization, and by scripts/gen-openapi.ts for openapi.json. Schemas first: the compute service
 * may assume a body that passed these.
 */
import type { FromSchema } from 'json-schema-to-ts';
import { DISTANCE_METRICS, NORMALIZATIONS } from './closed-sets.js';

const bool = {
  description: 'Boolean. JSON true/false, or the strings "true"/"false"/"1"/"0" (and numbers 1/0). Unlike DeepFace, "false" and "0" mean false.',
  anyOf: [{ type: 'boolean' }, { type: 'string', enum: ['true', 'false', '1', '0'] }, { type: 'integer', enum: [0, 1] }],
} as const;

const embedding = { type: 'array', items: { type: 'number' }, minItems: 1, maxItems: 65536, description: 'An embedding: finite numbers, as many as the model has dimensions.' } as const;

const imageString = {
  type: 'string',
  minLength: 1,
  description: 'An image: raw base64, a data:image/<fmt>;base64,<data> URI, an https:// URL (when remote images are enabled), a file:<path> (when a local images root is set), or a multipart file part.',
} as const;

const common = {
  model_name: { type: 'string', minLength: 1, maxLength: 64, description: 'Recognition model; default from /capabilities.' },
  detector_backend: { type: 'string', minLength: 1, maxLength: 64, description: 'Face detector; default from /capabilities; `skip` = the whole image is the face.' },
  align: bool,
  enforce_detection: bool,
  expand_percentage: { type: 'integer', minimum: 0, maximum: 100 },
  normalization: { type: 'string', enum: NORMALIZATIONS },
  detector_fallback: {
    ...bool,
    description:
      'Default true: when `opencv` finds no face, retry with `retinaface` (if allowed and installed); such faces report `facial_area.detector: "retinaface"`. ' +
      "false: DeepFace's own behaviour, exactly: no retry, so no_face_detected, or with enforce_detection=false the whole image as the face. " +
      'Boolean as for the other flags.',
  },
} as const;

const metric = { type: 'string', enum: DISTANCE_METRICS } as const;
const threshold = { type: 'number', exclusiveMinimum: 0, description: 'Overrides the calibrated threshold for `verified`; confidence stays calibrated on the model threshold, as in DeepFace.' } as const;

export const verifyBody = {
  $id: 'VerifyRequest',
  type: 'object',
  additionalProperties: false,
  required: ['img1', 'img2'],
  properties: {
    img1: { anyOf: [imageString, embedding] },
    img2: { anyOf: [imageString, embedding] },
    ...common,
    distance_metric: metric,
    threshold,
    anti_spoofing: bool,
  },
} as const;

export const representBody = {
  $id: 'RepresentRequest',
  type: 'object',
  additionalProperties: false,
  required: ['img'],
  properties: {
    img: { anyOf: [imageString, { type: 'array', items: imageString, minItems: 1 }] },
    ...common,
    max_faces: { type: 'integer', minimum: 1 },
    l2_normalize: bool,
    return_face: {
      ...bool,
      description:
        "Boolean, default false. Also return each face's crop as DeepFace's extract_faces computes it (detected, expanded, aligned, before any resizing) in `face_png`: " +
        'a lossless PNG, base64.',
    },
    image_dtype: {
      type: 'string',
      enum: ['uint8', 'float'],
      description:
        "Default uint8. With detector_backend `skip` only: the NumPy dtype the image had before it was encoded. DeepFace's represent resizes a `skip` image to the model's input " +
        'in 8 bits when it is uint8 (then divides by 255), and as floats when it is float (a face from extract_faces, say). `float` reproduces the latter, ' +
        "so represent(extract_faces(img)[0]['face'], skip) gives represent(img)'s embedding exactly. Detected faces are always resized as floats.",
    },
    anti_spoofing: bool,
  },
} as const;

/** The bodies that passed verifyBody and representBody, as types (the gateway's routes and MCP's tools get these). */
export type VerifyRequest = FromSchema<typeof verifyBody>;
export type RepresentRequest = FromSchema<typeof representBody>;

const compareSource = {
  type: 'object',
  additionalProperties: false,
  properties: { img: imageString, embedding },
  oneOf: [{ required: ['img'] }, { required: ['embedding'] }],
} as const;

export const compareBody = {
  $id: 'CompareRequest',
  type: 'object',
  additionalProperties: false,
  required: ['source'],
  properties: {
    source: {
      description:
        'Exactly one of {img} or {embedding}; or a list of them (many-to-many, at most `limits.max_sources`, of which at most `limits.max_batch_images` images): ' +
        'the answer then has one result list per source in `results` and one entry per source in `source`.',
      anyOf: [compareSource, { type: 'array', items: compareSource, minItems: 1 }],
    },
    targets: {
      type: 'array',
      items: embedding,
      description:
        'Target embeddings as JSON arrays. Alternatives: targets_b64, or (multipart) a file part named `targets` with content type application/octet-stream holding ' +
        'raw little-endian float32, row-major, N × dims: the fastest, read in place without parsing. Exactly one of the three.',
    },
    targets_b64: { type: 'string', description: 'Base64 of little-endian float32, row-major, N x dims.' },
    ...common,
    distance_metric: metric,
    threshold,
    top_k: { type: 'integer', minimum: 1, description: 'Return only the k nearest targets per source, nearest first (ties by index). Recommended: 10 to 100 for search and de-duplication; without it every target gets a result (100,000 results are about 7 MB of JSON).' },
  },
} as const;

/** A body that passed compareBody, as a type. */
export type CompareRequest = FromSchema<typeof compareBody>;

const facialArea = {
  type: 'object',
  additionalProperties: true,
  properties: {
    x: { type: ['integer', 'null'] },
    y: { type: ['integer', 'null'] },
    w: { type: ['integer', 'null'] },
    h: { type: ['integer', 'null'] },
    left_eye: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }] },
    right_eye: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }] },
    nose: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }] },
    mouth_left: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }] },
    mouth_right: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }] },
    detector: { type: 'string' },
  },
} as const;

export const errorResponse = {
  $id: 'ErrorResponse',
  type: 'object',
  required: ['error', 'detail'],
  additionalProperties: false,
  properties: { error: { type: 'string' }, detail: { type: 'string' } },
} as const;

export const healthResponse = {
  type: 'object',
  required: ['status', 'version'],
  properties: { status: { type: 'string', const: 'ok' }, version: { type: 'string' } },
} as const;

export const readinessResponse = {
  $id: 'ReadinessResponse',
  type: 'object',
  required: ['status', 'ready', 'warming', 'warmed_models', 'warmed_detectors', 'error'],
  additionalProperties: true,
  properties: {
    status: { type: 'string', enum: ['ready', 'warming', 'error'] },
    ready: { type: 'boolean' },
    warming: { type: 'boolean' },
    warmed_models: { type: 'array', items: { type: 'string' } },
    warmed_detectors: { type: 'array', items: { type: 'string' } },
    error: { type: 'string' },
    warmed_at: { type: 'string' },
    degraded: {
      type: 'boolean',
      description: 'true when the service started with a configured default model or detector it cannot serve (FACECOMPUTE_ALLOW_DEGRADED_START=true); /capabilities says which and why (default_model_reason, default_detector_reason).',
    },
    unavailable: { type: 'array', items: { type: 'string' }, description: 'Allowed models and detectors that are not installed here (e.g. retinaface and yunet on a machine that cannot reach their canonical URLs); /capabilities.unavailable says why. Readiness does not depend on them.' },
    fetch_command: { type: 'string', description: 'The command that fetches every model and detector in `unavailable`.' },
    detector_fallback_unavailable: { type: 'string', description: "Present when retinaface, the contract's pre-warmed detector fallback, cannot be served: the fallback is absent, why, and the command that fetches it (FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=true refuses to start instead)." },
  },
} as const;

const operatingPoint = {
  type: 'object',
  properties: { threshold: { type: 'number' }, far: { type: 'number' }, tar: { type: 'number' }, accuracy: { type: 'number' } },
} as const;

export const capabilitiesResponse = {
  $id: 'CapabilitiesResponse',
  type: 'object',
  required: ['allowed_models', 'default_model', 'allowed_detectors', 'default_detector'],
  additionalProperties: true,
  properties: {
    allowed_models: { type: 'array', items: { type: 'string' } },
    default_model: { type: 'string' },
    allowed_detectors: { type: 'array', items: { type: 'string' } },
    default_detector: { type: 'string' },
    distance_metrics: { type: 'array', items: metric },
    default_distance_metric: metric,
    embedding_dims: { type: 'object', additionalProperties: { type: 'integer' } },
    thresholds: { type: 'object', additionalProperties: { type: 'object', additionalProperties: { type: 'number' } } },
    limits: { type: 'object', additionalProperties: { type: 'number' } },
    input_modes: { type: 'array', items: { type: 'string', enum: ['upload', 'base64', 'data_uri', 'url', 'file'] }, description: 'The image input modes this deployment accepts: upload (multipart file parts), base64, data_uri, and url and file when switched on.' },
    version: { type: 'string', const: 'v1' },
    default_model_reason: { type: 'string', description: 'Present when the configured default model cannot be served (a degraded start, FACECOMPUTE_ALLOW_DEGRADED_START=true): why, and which model is the effective default.' },
    default_detector_reason: {
      type: 'string',
      description: 'Present when the configured default detector cannot be served (a degraded start): why, and which detector is the effective default. `skip` never becomes the default; with no other detector installed, a request must name its detector_backend.',
    },
    unavailable: {
      type: 'object',
      description: 'Allowed models and detectors that cannot be served here, and why: the missing weight files, when `facecompute models fetch` tried them every source and why it failed, and the command that fetches each.',
      additionalProperties: { type: 'string' },
    },
    fetch_command: { type: 'string', description: 'The one command that fetches every model and detector in `unavailable`.' },
    detector_fallback_unavailable: {
      type: 'string',
      description: "Present when retinaface, the contract's pre-warmed detector fallback, cannot be served: an image where opencv finds no face then gets no fallback. Says why and the command that fetches it; FACECOMPUTE_REQUIRE_FALLBACK_DETECTOR=true refuses to start instead.",
    },
    detector_variants: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Which network serves a detector whose name covers several: `retinaface` is `resnet50` (DeepFace\'s) or `mobilenet0.25`.',
    },
    test_weight_models: {
      type: 'array',
      items: { type: 'string' },
      description: 'Models served from random test weights (FACECOMPUTE_TEST_WEIGHTS=true, structural tests only; never in production). Their answers mean nothing.',
    },
    calibration: {
      type: 'object',
      description:
        "Thresholds beyond DeepFace's fixed ones (which stay the default), measured on LFW View 1 DevTrain by tools/calibration/roc.ts: " +
        '`models.<model>.<detector>.<metric>` holds the threshold at a false-accept rate of 1e-2 (`far_1e_2`) and 1e-3 (`far_1e_3`), the threshold with the best accuracy (`best_accuracy`), ' +
        "DeepFace's threshold on the same pairs (`deepface`), each with its FAR, TAR and accuracy there, and the AUC. Only served models (real weights) and detectors appear. " +
        'To use one, pass its `threshold` per request.',
      properties: {
        dataset: { type: 'string' },
        pairs: { type: 'object', properties: { genuine: { type: 'integer' }, impostor: { type: 'integer' } } },
        note: { type: 'string' },
        models: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              additionalProperties: {
                type: 'object',
                properties: { far_1e_2: operatingPoint, far_1e_3: operatingPoint, best_accuracy: operatingPoint, deepface: operatingPoint, auc: { type: 'number' } },
              },
            },
          },
        },
      },
    },
    model_sources: {
      type: 'object',
      description:
        "Which weight file serves each model: `canonical` (the file DeepFace downloads) or `carrier` (a registry package that carries the same weights, named with its version; conversion checked the content fingerprint). `note` says what could not be proven, e.g. value-level identity with DeepFace's canonical file.",
      additionalProperties: {
        type: 'object',
        required: ['source', 'files'],
        properties: {
          source: { type: 'string', enum: ['canonical', 'carrier', 'test_weights'] },
          files: {
            type: 'array',
            items: {
              type: 'object',
              required: ['source', 'file', 'sha256'],
              properties: {
                source: { type: 'string', enum: ['canonical', 'carrier'] },
                file: { type: 'string' },
                sha256: { type: 'string' },
                url: { type: 'string' },
                ecosystem: { type: 'string' },
                package: { type: 'string' },
                version: { type: 'string' },
                path: { type: 'string' },
                fingerprint: { type: 'string' },
                fetched_from: { type: 'string', description: 'The registry package that delivered the canonical file, byte for byte (e.g. `debian:opencv-data`), per the last `models fetch`.' },
                note: { type: 'string' },
              },
            },
          },
        },
      },
    },
  },
} as const;

export const verifyResponse = {
  $id: 'VerifyResponse',
  type: 'object',
  required: ['verified', 'distance', 'threshold', 'confidence', 'model', 'detector_backend', 'similarity_metric', 'facial_areas', 'time'],
  properties: {
    verified: { type: 'boolean' },
    distance: { type: 'number' },
    threshold: { type: 'number' },
    confidence: { type: 'number' },
    model: { type: 'string' },
    detector_backend: { type: 'string' },
    similarity_metric: metric,
    facial_areas: { type: 'object', required: ['img1', 'img2'], properties: { img1: facialArea, img2: facialArea } },
    time: { type: 'number' },
  },
} as const;

const representFace = {
  type: 'object',
  required: ['embedding', 'facial_area', 'face_confidence'],
  properties: {
    embedding: { type: 'array', items: { type: 'number' } },
    facial_area: facialArea,
    face_confidence: { type: 'number' },
    face_png: {
      type: 'string',
      description:
        "With return_face=true only: the face crop DeepFace's extract_faces returns, before resizing and before colour conversion or /255, " +
        'as base64 of a PNG (8-bit RGB, lossless; the whole image when no face was found with enforce_detection=false or with detector skip).',
    },
  },
} as const;

export const representResponse = {
  $id: 'RepresentResponse',
  type: 'object',
  required: ['results', 'model', 'detector_backend'],
  properties: {
    results: {
      description: 'One entry per face; for a batch (img is an array) one list of faces per image.',
      type: 'array',
      items: { anyOf: [representFace, { type: 'array', items: representFace }] },
    },
    model: { type: 'string' },
    detector_backend: { type: 'string' },
  },
} as const;

const sourceFace = { type: 'object', required: ['facial_area', 'face_confidence'], properties: { facial_area: facialArea, face_confidence: { type: 'number' } } } as const;

const compareResult = {
  type: 'object',
  required: ['index', 'distance', 'verified', 'confidence'],
  properties: { index: { type: 'integer' }, distance: { type: 'number' }, verified: { type: 'boolean' }, confidence: { type: 'number' } },
} as const;

export const compareResponse = {
  $id: 'CompareResponse',
  type: 'object',
  required: ['model', 'similarity_metric', 'threshold', 'dims', 'source', 'results', 'time'],
  properties: {
    model: { type: 'string' },
    similarity_metric: metric,
    threshold: { type: 'number' },
    dims: { type: 'integer' },
    source: {
      description: 'The face found in an image source, or null for an embedding; a list with one entry per source when `source` was a list.',
      anyOf: [sourceFace, { type: 'null' }, { type: 'array', items: { anyOf: [sourceFace, { type: 'null' }] } }],
    },
    results: {
      description: 'One entry per target (nearest first with top_k, else in target order); a list of such lists, one per source, when `source` was a list.',
      type: 'array',
      items: { anyOf: [compareResult, { type: 'array', items: compareResult }] },
    },
    time: { type: 'number' },
  },
} as const;

/** Field kinds of the compute bodies, used to coerce multipart text parts before validation. */
export const MULTIPART_FIELD_KIND: Record<string, 'string' | 'number' | 'json' | 'bool' | 'image'> = {
  img1: 'image', img2: 'image', img: 'image', source: 'json', targets: 'json', targets_b64: 'string',
  model_name: 'string', detector_backend: 'string', distance_metric: 'string', normalization: 'string', image_dtype: 'string',
  threshold: 'number', expand_percentage: 'number', max_faces: 'number', top_k: 'number',
  align: 'bool', enforce_detection: 'bool', l2_normalize: 'bool', return_face: 'bool', anti_spoofing: 'bool', detector_fallback: 'bool',
};
