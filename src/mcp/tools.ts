/**
 * The four agent tools: their input schemas (with descriptions an LLM can act on) and how each maps
 * onto the REST body of the same compute. Results are the REST results, unchanged.
 */
import { z } from 'zod';
import { DISTANCE_METRICS } from '../vocabulary/closed-sets.js';
import { catalogNames } from '../models/manifest.js';
import { MAX_EMBEDDING_LENGTH, isEmbedding } from './bounded-arrays.js';

const image = z
  .string()
  .min(1)
  .describe('A face image: raw base64, a data:image/...;base64,... URI, or a public https:// URL (no localhost, private or .local hosts). JPEG, PNG, WebP, GIF or BMP.');

/**
 * An embedding: one loop over its numbers (isEmbedding), not a zod schema per element. Arguments reach
 * zod only after src/mcp/bounded-arrays.ts has checked every embedding and named its first bad value,
 * so this is a second line; it is listed as the array of numbers it is (EMBEDDING_JSON_SCHEMA).
 */
export const embedding = z
  .custom<number[]>((v) => isEmbedding(v), { message: 'must be an embedding: an array of finite numbers' })
  .describe("A face embedding produced by the same model (e.g. from represent_face), as an array of numbers of the model's dimension.");

/** How `embedding` is listed in the tools' input schemas (the REST schemas' embedding). */
export const EMBEDDING_JSON_SCHEMA = { type: 'array', items: { type: 'number' }, minItems: 1, maxItems: MAX_EMBEDDING_LENGTH } as const;

// Any string passes (a name outside the allowlist is model_not_allowed / detector_not_allowed, as on
// REST); the listed input schema still names the catalog's entries.
const names = catalogNames();
const model = z.string().meta({ enum: names.models }).optional().describe('Recognition model, e.g. "Facenet" or "Dlib". Call get_capabilities for the allowed ones; default: the service default.');
const detector = z.string().meta({ enum: names.detectors }).optional().describe('Face detector: "opencv" (default), "retinaface", "yunet", "mtcnn", "fastmtcnn", or "skip" when the image is already a cropped face.');
const metric = z.enum(DISTANCE_METRICS).optional().describe('Distance metric; default "cosine".');
const threshold = z.number().positive().optional().describe("Overrides the model's calibrated distance threshold for the verified decision.");
const common = {
  model_name: model,
  detector_backend: detector,
  align: z.boolean().optional().describe('Rotate faces so the eyes are level before embedding (default true).'),
  enforce_detection: z.boolean().optional().describe('If true (default), a picture with no detectable face is an error; if false, the whole image is used.'),
  expand_percentage: z.number().int().min(0).max(100).optional().describe('Grow each detected face box by this percentage (0-100, default 0).'),
  detector_fallback: z
    .boolean()
    .optional()
    .describe(
      'If true (default) and the "opencv" detector finds no face, retry with "retinaface"; false answers exactly as DeepFace does (no retry: an error, or the whole image when enforce_detection is false).',
    ),
};

export const verifyInput = {
  img1: z.union([image, embedding]).describe('First face: an image or an embedding.'),
  img2: z.union([image, embedding]).describe('Second face: an image or an embedding.'),
  distance_metric: metric,
  threshold,
  ...common,
};

export const representInput = {
  img: z.union([image, z.array(image).min(1).max(16)]).describe('One image, or up to 16 images (results then come as one list per image).'),
  max_faces: z.number().int().min(1).optional().describe('Keep only the N largest faces per image.'),
  l2_normalize: z.boolean().optional().describe('Return unit-length embeddings (default false).'),
  ...common,
};

const compareSource = z
  .strictObject({ img: image.optional(), embedding: embedding.optional() })
  .describe('A face: {"img": <image>} (its largest face is used) or {"embedding": [...]}.');

// Binary targets (the REST multipart part) do not fit here: MCP messages are JSON text, so raw
// float32 would travel as base64 anyway, which is what targets_b64 is.
export const compareInput = {
  source: z
    .union([compareSource, z.array(compareSource).min(1)])
    .describe('The face to compare, or a list of faces (at most limits.max_sources; results then hold one list per source).'),
  targets: z.array(embedding).optional().describe('Embeddings to compare the source against (required unless targets_b64 is given; at most limits.max_targets).'),
  targets_b64: z.string().optional().describe('Alternative to targets for many vectors: base64 of little-endian float32 values, row-major, N x dims.'),
  distance_metric: metric,
  threshold,
  top_k: z.number().int().min(1).optional().describe('Return only the k nearest targets per source, nearest first. Recommended (e.g. 10): without it every target gets a result.'),
  ...common,
};

/**
 * Each tool's arguments as a strict object: an argument the tool does not take is refused
 * (src/mcp/arguments.ts), as an unknown field is on REST, and `additionalProperties: false` in the
 * listed input schema says so.
 */
export const TOOL_INPUTS = {
  get_capabilities: z.strictObject({}),
  verify_faces: z.strictObject(verifyInput),
  represent_face: z.strictObject(representInput),
  compare_inputs: z.strictObject(compareInput),
} as const;

export const TOOL_DESCRIPTIONS = {
  get_capabilities:
    'List what this service can do right now: allowed models and detectors, defaults, distance metrics, embedding dimensions, thresholds and limits. Free: it does not consume a call. Call it first.',
  verify_faces:
    'Decide whether two faces belong to the same person (DeepFace verify semantics). Returns verified, distance, threshold, confidence (0-100) and the facial areas used. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
  represent_face:
    'Compute face embeddings (vectors) for every face in an image, with each face area and detector confidence. Store the vectors to compare later with compare_inputs. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
  compare_inputs:
    'Compare one face (image or embedding), or a list of faces, against many stored embeddings in one call; returns distance, verified and confidence per target (one list per face for a list), optionally only the top_k nearest. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
} as const;

export type ToolName = keyof typeof TOOL_DESCRIPTIONS;

/** A one-line summary for the text content; the full result is in structuredContent. */
export function summarize(tool: ToolName, result: Record<string, unknown>): string {
  switch (tool) {
    case 'get_capabilities':
      return `models: ${(result['allowed_models'] as string[] | undefined)?.join(', ')}; detectors: ${(result['allowed_detectors'] as string[] | undefined)?.join(', ')}; default model ${String(result['default_model'])}`;
    case 'verify_faces':
      return `${result['verified'] ? 'Same person' : 'Different people'}: distance ${String(result['distance'])} vs threshold ${String(result['threshold'])} (${String(result['similarity_metric'])}, ${String(result['model'])}), confidence ${String(result['confidence'])}%.`;
    case 'represent_face': {
      const r = result['results'] as unknown[];
      const faces = Array.isArray(r?.[0]) ? (r as unknown[][]).map((x) => x.length).join('+') : String(r?.length ?? 0);
      return `${faces} face(s) embedded with ${String(result['model'])}.`;
    }
    case 'compare_inputs': {
      const r = (result['results'] as Array<{ verified: boolean } | Array<{ verified: boolean }>>) ?? [];
      if (Array.isArray(r[0]) || (Array.isArray(result['source']) && r.length > 0)) {
        const lists = r as Array<Array<{ verified: boolean }>>;
        return `${lists.length} source(s) compared with ${String(result['model'])}; ${lists.reduce((n, l) => n + l.filter((x) => x.verified).length, 0)} match(es) verified as the same person.`;
      }
      const flat = r as Array<{ verified: boolean }>;
      return `${flat.length} target(s) compared with ${String(result['model'])}; ${flat.filter((x) => x.verified).length} verified as the same person.`;
    }
  }
}
