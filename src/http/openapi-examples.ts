/**
 * The request and response examples of openapi.json. The numbers are the service's own: the verify
 * example is DeepFace's Facenet distance for its img1.jpg and img2.jpg (test/fixtures/deepface,
 * 0.235442) decided by src/deepface/decision.ts, the boxes are those faces', thresholds and
 * dimensions come from the decision table and the model manifest, and the limits are the
 * configuration's defaults. test/openapi.test.ts validates every example against its schema.
 */
import { decide, findThreshold } from '../deepface/decision.js';
import { DISTANCE_METRICS, NORMALIZATIONS } from '../vocabulary/closed-sets.js';
import { ERROR_DOCS } from '../errors/catalog.js';
import type { ErrorCode } from '../errors/codes.js';

type Example = { summary: string; description?: string; value: unknown };

/** A data URI as a client sends it; the base64 is cut short here ("…" is not base64). */
const JPEG_1 = 'data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD…';
const JPEG_2 = 'data:image/jpeg;base64,/9j/4AAQSkZJRgABAgAAZABkAAD…';

/** The first eight numbers of Facenet's embedding of img1.jpg (DeepFace's, test/fixtures/deepface). */
const EMBEDDING_HEAD = [1.104549, 0.904193, 1.626105, -1.838866, 0.351879, -0.695833, 1.016485, 0.878123];

const AREA_1 = { x: 339, y: 218, w: 768, h: 768, left_eye: [850, 524], right_eye: [571, 517], detector: 'opencv' };
const AREA_2 = { x: 524, y: 201, w: 491, h: 491, left_eye: [858, 388], right_eye: [663, 390], detector: 'opencv' };

const VERIFY_DECISION = decide(0.235442, 'Facenet', 'cosine');

export const requestExamples: Record<'VerifyRequest' | 'RepresentRequest' | 'CompareRequest', Record<string, Example>> = {
  VerifyRequest: {
    images: { summary: 'Two images as data URIs (base64 shortened here)', value: { img1: JPEG_1, img2: JPEG_2, model_name: 'Facenet' } },
    options: {
      summary: "DeepFace's options, with their defaults spelled out",
      value: { img1: JPEG_1, img2: JPEG_2, model_name: 'Facenet', detector_backend: 'opencv', distance_metric: 'cosine', align: true, enforce_detection: true, expand_percentage: 0, normalization: NORMALIZATIONS[0], detector_fallback: true },
    },
    embeddings: {
      summary: 'Two embeddings (decided in the gateway; shortened here: real ones have embedding_dims[model] numbers)',
      value: { img1: EMBEDDING_HEAD, img2: EMBEDDING_HEAD.map((x) => Number((x * 0.9).toFixed(6))), model_name: 'Facenet' },
    },
  },
  RepresentRequest: {
    one: { summary: 'One image', value: { img: JPEG_1, model_name: 'Facenet' } },
    batch: { summary: 'A batch: one list of faces per image', value: { img: [JPEG_1, JPEG_2], model_name: 'Facenet', max_faces: 1 } },
  },
  CompareRequest: {
    embedding: {
      summary: 'One embedding against JSON targets, the 2 nearest (vectors shortened here)',
      value: { source: { embedding: EMBEDDING_HEAD }, targets: [EMBEDDING_HEAD, EMBEDDING_HEAD.map((x) => -x)], model_name: 'Facenet', top_k: 2 },
    },
    image: { summary: 'A face in an image against base64 float32 targets', value: { source: { img: JPEG_1 }, targets_b64: 'AACAPwAAAEAAAEBA', model_name: 'Facenet' } },
  },
};

/** Capabilities as a default deployment with Facenet and Dlib installed answers them. */
export function capabilitiesExamples(limits: Record<string, number>): Record<string, Example> {
  const models = ['Facenet', 'Dlib'];
  const thresholds = Object.fromEntries(models.map((m) => [m, Object.fromEntries(DISTANCE_METRICS.map((x) => [x, findThreshold(m, x)]))]));
  const base = {
    allowed_models: models,
    default_model: 'Facenet',
    allowed_detectors: ['opencv', 'retinaface', 'yunet', 'skip'],
    default_detector: 'opencv',
    distance_metrics: [...DISTANCE_METRICS],
    default_distance_metric: 'cosine',
    embedding_dims: { Facenet: 128, Dlib: 128 },
    thresholds,
    limits: { ...limits, detector_max_side: 0 },
    input_modes: ['upload', 'base64', 'data_uri'],
    version: 'v1',
    detector_variants: { retinaface: 'mobilenet0.25' },
  };
  return {
    default: { summary: 'A default deployment (calibration and model_sources left out here)', value: base },
    fallback_default: {
      summary: 'The configured default model is not installed',
      description: 'The effective default serves, and `default_model_reason` says why; the service never answers with a model other than the one a request names.',
      value: { ...base, allowed_models: ['Dlib'], default_model: 'Dlib', embedding_dims: { Dlib: 128 }, thresholds: { Dlib: thresholds['Dlib'] }, default_model_reason: 'Facenet is not installed (weights missing); the effective default is Dlib' },
    },
  };
}

export const responseExamples = {
  VerifyResponse: {
    same: {
      summary: "DeepFace's img1.jpg and img2.jpg (one person), Facenet",
      value: { ...VERIFY_DECISION, model: 'Facenet', detector_backend: 'opencv', similarity_metric: 'cosine', facial_areas: { img1: AREA_1, img2: AREA_2 }, time: 0.41 },
    },
  },
  RepresentResponse: {
    one: {
      summary: 'One face (embedding shortened to 8 of 128 numbers)',
      value: { results: [{ embedding: EMBEDDING_HEAD, facial_area: AREA_1, face_confidence: 0.92 }], model: 'Facenet', detector_backend: 'opencv' },
    },
  },
  CompareResponse: {
    top2: {
      summary: 'An embedding source, top_k 2',
      value: {
        model: 'Facenet',
        similarity_metric: 'cosine',
        threshold: findThreshold('Facenet', 'cosine'),
        dims: 128,
        source: null,
        results: [
          { index: 0, ...pick(decide(0, 'Facenet', 'cosine')) },
          { index: 1, ...pick(VERIFY_DECISION) },
        ],
        time: 0.002,
      },
    },
  },
  ReadinessResponse: {
    ready: { summary: 'Ready', value: { status: 'ready', ready: true, warming: false, warmed_models: ['Facenet', 'Dlib'], warmed_detectors: ['opencv', 'retinaface', 'yunet', 'skip'], error: '', warmed_at: '2026-11-27T09:00:00.000Z' } },
  },
  ReadinessWarming: {
    warming: { summary: 'Still warming', value: { status: 'warming', ready: false, warming: true, warmed_models: [], warmed_detectors: [], error: '' } },
    limiter: { summary: 'Redis is unreachable', value: { status: 'error', ready: false, warming: false, warmed_models: ['Facenet', 'Dlib'], warmed_detectors: ['opencv', 'retinaface', 'yunet', 'skip'], error: 'limiter_unavailable' } },
  },
} satisfies Record<string, Record<string, Example>>;

function pick(d: { distance: number; verified: boolean; confidence: number }) {
  return { distance: d.distance, verified: d.verified, confidence: d.confidence };
}

/** An error body as the service writes it: the code and a sentence of the kind `detail` holds. */
export function errorExample(code: ErrorCode): Example {
  const when = ERROR_DOCS[code].when.replace(/`/g, '');
  return { summary: code, value: { error: code, detail: when } };
}
