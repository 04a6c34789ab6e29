/**
 * The internal wire format between the gateway (and the MCP endpoint) and the model server.
 *
 * Compute requests carry encoded image bytes, which JSON would inflate by a third; so the body is
 *   [u32 LE: length of the JSON header][JSON header][image 0 bytes][image 1 bytes]…
 * with content type `application/vnd.facecompute.frame`. The header says where each image lies.
 * Responses are JSON: a result, or an ErrorBody with the contract's status and code.
 */
import type { ErrorBody } from '../errors/index.js';
import type { DistanceMetric, Normalization } from '../vocabulary/closed-sets.js';
import type { CapabilitiesCalibration } from '../deepface/calibration.js';
import type { FacialArea } from '../native/types.js';

export const FRAME_CONTENT_TYPE = 'application/vnd.facecompute.frame';

/** Carries FACECOMPUTE_INTERNAL_TOKEN on every request to a model server (src/model-server/internal-auth.ts). */
export const INTERNAL_TOKEN_HEADER = 'x-facecompute-internal-token';

export const INTERNAL_PATHS = {
  readiness: '/internal/readiness',
  capabilities: '/internal/capabilities',
  verify: '/internal/verify',
  represent: '/internal/represent',
  /** Embedding of the largest face of one image: the source side of an image /compare. */
  embed: '/internal/embed',
} as const;

// The contract's closed sets live in the vocabulary (src/vocabulary/closed-sets.ts); the protocol's
// headers use them, and its importers may take them from here.
export { DISTANCE_METRICS, NORMALIZATIONS, type DistanceMetric, type Normalization } from '../vocabulary/closed-sets.js';

/** Options shared by every compute request, already validated and defaulted by the gateway. */
export interface PipelineOptions {
  model_name: string;
  detector_backend: string;
  align: boolean;
  enforce_detection: boolean;
  expand_percentage: number;
  normalization: Normalization;
  /**
   * When `opencv` finds no face, retry with the fallback detector (contract §3). Absent means true,
   * the contract's default; false answers exactly as DeepFace does (the whole image when
   * enforce_detection is off).
   */
  detector_fallback?: boolean;
}

/** An image slot in a request: encoded bytes in the frame, or a caller-supplied embedding. */
export type InputRef = { image: number } | { embedding: number[] };

export interface VerifyHeader extends PipelineOptions {
  op: 'verify';
  img1: InputRef;
  img2: InputRef;
  distance_metric: DistanceMetric;
  threshold: number | null;
}

export interface RepresentHeader extends PipelineOptions {
  op: 'represent';
  /** Indices into the frame's images, one per requested image. */
  images: number[];
  max_faces: number | null;
  l2_normalize: boolean;
  /** Return each face's crop as base64 PNG (`face_png`); absent means false. */
  return_face?: boolean;
  /** `float`: a `skip` image is resized as floats, as DeepFace does for a float array; absent means uint8. */
  image_dtype?: 'uint8' | 'float';
}

export interface EmbedHeader extends PipelineOptions {
  op: 'embed';
  image: number;
}

export type FrameHeader = VerifyHeader | RepresentHeader | EmbedHeader;

export type ComputeHeader = FrameHeader & {
  /** Byte ranges of the images that follow the header, in order. */
  frames: Array<{ offset: number; length: number }>;
};

/**
 * The contract's facial_area: the binding's own type (crates/facecompute-node/src/types.rs), which
 * the model server passes from Rust to the response unchanged. `detector` is the detector that
 * actually found the face (differs from detector_backend after fallback).
 */
export type { FacialArea };

export interface RepresentFace {
  embedding: number[];
  facial_area: FacialArea;
  face_confidence: number;
  /** Base64 PNG of the face crop, with return_face only. */
  face_png?: string;
}

export interface RepresentResponse {
  /** One list of faces per requested image, in request order. */
  results: RepresentFace[][];
  model: string;
  detector_backend: string;
}

export interface EmbedResponse {
  embedding: number[];
  facial_area: FacialArea;
  face_confidence: number;
  model: string;
}

export interface VerifyResponse {
  verified: boolean;
  distance: number;
  threshold: number;
  confidence: number;
  model: string;
  detector_backend: string;
  similarity_metric: DistanceMetric;
  facial_areas: { img1: FacialArea | NullArea; img2: FacialArea | NullArea };
  time: number;
}

/**
 * The model server's part of a verify: the unrounded minimum distance over every face pair and that
 * pair's areas. The service decides (threshold, verified, confidence) and times it, for image and
 * embedding inputs alike (src/service/compute-service.ts).
 */
export type VerifyDistance = Pick<VerifyResponse, 'distance' | 'model' | 'detector_backend' | 'similarity_metric' | 'facial_areas'>;

/** The facial area of an embedding input: every field null, as DeepFace reports it. */
export interface NullArea {
  x: null;
  y: null;
  w: null;
  h: null;
  left_eye: null;
  right_eye: null;
}

export interface ReadinessResponse {
  status: 'ready' | 'warming' | 'error';
  ready: boolean;
  warming: boolean;
  warmed_models: string[];
  warmed_detectors: string[];
  error: string;
  warmed_at?: string;
  /** Set when the configured default model is not installed. */
  effective_default_model?: string;
  default_model_reason?: string;
  /** Set when the configured default detector cannot be served. */
  effective_default_detector?: string;
  default_detector_reason?: string;
  /**
   * True when the server was started with a configured default it cannot serve
   * (FACECOMPUTE_ALLOW_DEGRADED_START=true); `degraded_reasons` says which and why.
   */
  degraded?: boolean;
  degraded_reasons?: string[];
  /** Allowed models and detectors not installed here (the reasons are on /capabilities). */
  unavailable?: string[];
  /** The command that fetches them. */
  fetch_command?: string;
  /** The detector fallback (retinaface) is absent: why, and the command that fetches it. */
  detector_fallback_unavailable?: string;
}

export interface CapabilitiesResponse {
  allowed_models: string[];
  default_model: string;
  allowed_detectors: string[];
  default_detector: string;
  distance_metrics: DistanceMetric[];
  default_distance_metric: DistanceMetric;
  embedding_dims: Record<string, number>;
  thresholds: Record<string, Record<DistanceMetric, number>>;
  limits: Record<string, number>;
  input_modes: string[];
  version: 'v1';
  /** Why the effective default differs from the configured one, when it does. */
  default_model_reason?: string;
  /** Why the effective default detector differs from the configured one, when it does. */
  default_detector_reason?: string;
  /** Allowed models and detectors that cannot be served here, and why (which files are missing, why the last fetch failed). */
  unavailable?: Record<string, string>;
  detector_fallback_unavailable?: string;
  fetch_command?: string;
  /** Which network serves each detector, e.g. retinaface → "mobilenet0.25". */
  detector_variants?: Record<string, string>;
  /** Models served from random test weights (FACECOMPUTE_TEST_WEIGHTS=true, structural tests only). */
  test_weight_models?: string[];
  /** Which file serves each model: its canonical file, or a registry carrier's (package and version). */
  model_sources?: Record<string, ModelSource>;
  /**
   * Thresholds beyond DeepFace's, measured on LFW View 1 DevTrain, for the served models (real
   * weights) and detectors (models/calibration/lfw-devtrain.json, src/deepface/calibration.ts).
   */
  calibration?: CapabilitiesCalibration;
}

/** Provenance of one served model (`/capabilities.model_sources`). */
export interface ModelSource {
  /** `carrier` when any of its files came from a registry package, `test_weights` for random weights. */
  source: 'canonical' | 'carrier' | 'test_weights';
  files: WeightProvenance[];
}

export interface WeightProvenance {
  source: 'canonical' | 'carrier';
  file: string;
  sha256: string;
  /** The canonical URL (source `canonical`). */
  url?: string;
  /** The registry package (source `carrier`). */
  ecosystem?: string;
  package?: string;
  version?: string;
  /** The member of the package's archive the file was extracted from. */
  path?: string;
  /** The content fingerprint conversion checked. */
  fingerprint?: string;
  /** The registry package that delivered the canonical file, byte for byte (`debian:opencv-data`), when the fetch log says. */
  fetched_from?: string;
  /** What the file is, and what could not be proven about it. */
  note?: string;
}

export type { ErrorBody };

/** Encodes a compute request frame. */
export function encodeFrame(header: FrameHeader, images: Buffer[]): Buffer {
  let offset = 0;
  const frames = images.map((b) => {
    const f = { offset, length: b.length };
    offset += b.length;
    return f;
  });
  const json = Buffer.from(JSON.stringify({ ...header, frames }), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.length, 0);
  return Buffer.concat([len, json, ...images]);
}

/** Decodes a frame; throws a plain Error with a short reason on any malformation. */
export function decodeFrame(body: Buffer): { header: ComputeHeader; images: Buffer[] } {
  if (body.length < 4) throw new Error('frame too short');
  const len = body.readUInt32LE(0);
  if (len > body.length - 4) throw new Error('frame header length out of range');
  const header = JSON.parse(body.subarray(4, 4 + len).toString('utf8')) as ComputeHeader;
  if (!header || typeof header !== 'object' || !Array.isArray(header.frames)) throw new Error('frame header malformed');
  const base = 4 + len;
  const images = header.frames.map((f) => {
    if (!Number.isSafeInteger(f.offset) || !Number.isSafeInteger(f.length) || f.offset < 0 || f.length < 0 || base + f.offset + f.length > body.length) {
      throw new Error('frame image range out of bounds');
    }
    return body.subarray(base + f.offset, base + f.offset + f.length);
  });
  return { header, images };
}
