/**
 * The agent tools, one table (TOOLS): each tool's input schema, how its arguments are checked, the
 * compute it runs and a one-line summary of its result. Results are the REST results, unchanged.
 *
 * One description per request: a tool's input schema is made of the REST body's own field schemas
 * (src/vocabulary/schemas.ts), so MCP validates what REST validates (validate.ts compiles them with
 * Ajv, as Fastify does) and the arguments are typed from them (FromSchema), the types the compute
 * service takes. What MCP adds is for the listing only: descriptions an LLM can act on, and the
 * catalog's model and detector names (any name passes the schema; one outside the allowlist is
 * model_not_allowed / detector_not_allowed, as on REST). Booleans are JSON booleans: MCP messages
 * are JSON, and REST's "true"/"1" forms serve multipart text parts.
 *
 * A new tool is one `defineTool` entry in TOOLS.
 */
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import * as S from '../vocabulary/schemas.js';
import { catalogNames } from '../models/manifest.js';
import type { ComputeContext, ComputeService } from '../service/compute-service.js';
import { comparePlain } from '../service/compare-result.js';
import { compareArrays, representArrays, verifyArrays, type ArrayCheck, type ArrayLimits } from './bounded-arrays.js';
import { argumentsError, compileArguments, type ValidateFunction } from './validate.js';

const V = S.verifyBody.properties;
const R = S.representBody.properties;
const C = S.compareBody.properties;
const bool = { type: 'boolean' } as const;

const common = {
  model_name: V.model_name,
  detector_backend: V.detector_backend,
  align: bool,
  enforce_detection: bool,
  expand_percentage: V.expand_percentage,
  detector_fallback: bool,
} as const;

const verifyInput = {
  type: 'object',
  additionalProperties: false,
  required: ['img1', 'img2'],
  properties: { img1: V.img1, img2: V.img2, distance_metric: V.distance_metric, threshold: V.threshold, ...common },
} as const;

const representInput = {
  type: 'object',
  additionalProperties: false,
  required: ['img'],
  properties: { img: R.img, max_faces: R.max_faces, l2_normalize: bool, return_face: bool, ...common },
} as const;

// Binary targets (the REST multipart part) do not fit here: MCP messages are JSON text, so raw
// float32 would travel as base64 anyway, which is what targets_b64 is.
const compareInput = {
  type: 'object',
  additionalProperties: false,
  required: ['source'],
  properties: { source: C.source, targets: C.targets, targets_b64: C.targets_b64, distance_metric: C.distance_metric, threshold: C.threshold, top_k: C.top_k, ...common },
} as const;

const capabilitiesInput = { type: 'object', additionalProperties: false, properties: {} } as const;

const IMAGE = 'A face image: raw base64, a data:image/...;base64,... URI, or a public https:// URL (no localhost, private or .local hosts). JPEG, PNG, WebP, GIF or BMP.';
const EMBEDDING = "a face embedding produced by the same model (e.g. from represent_face), as an array of numbers of the model's dimension";
const names = catalogNames();
const COMMON_DOCS = {
  model_name: { description: 'Recognition model, e.g. "Facenet" or "Dlib". Call get_capabilities for the allowed ones; default: the service default.', enum: names.models },
  detector_backend: { description: 'Face detector: "opencv" (default), "retinaface", "yunet", "mtcnn", "fastmtcnn", or "skip" when the image is already a cropped face.', enum: names.detectors },
  align: { description: 'Rotate faces so the eyes are level before embedding (default true).' },
  enforce_detection: { description: 'If true (default), a picture with no detectable face is an error; if false, the whole image is used.' },
  expand_percentage: { description: 'Grow each detected face box by this percentage (0-100, default 0).' },
  detector_fallback: {
    description:
      'If true (default) and the "opencv" detector finds no face, retry with "retinaface"; false answers exactly as DeepFace does (no retry: an error, or the whole image when enforce_detection is false).',
  },
  distance_metric: { description: 'Distance metric; default "cosine".' },
  threshold: { description: "Overrides the model's calibrated distance threshold for the verified decision." },
};

/** What the listing adds to an argument's schema: its description (and names, for model and detector). */
type Docs<I extends { properties: object }> = { [K in keyof I['properties']]-?: { description: string; enum?: readonly string[] } };

/** A schema for listing: the REST field schemas' own descriptions (written for REST) left out. */
function withoutDescriptions(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutDescriptions);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (k !== 'description') out[k] = withoutDescriptions(x);
  return out;
}

/** The input schema as tools/list shows it: the validated schema with the listing's docs. */
function listed<I extends { properties: object }>(input: I, docs: Docs<I>): { type: 'object'; [k: string]: unknown } {
  const bare = withoutDescriptions(input) as { properties: Record<string, object> };
  const properties: Record<string, object> = {};
  for (const [k, schema] of Object.entries(bare.properties)) properties[k] = { ...schema, ...(docs as Record<string, object>)[k] };
  return { ...bare, type: 'object', properties };
}

/** A tool's arguments, checked, bound to the compute they run: typed inside, opaque outside. */
export type PreparedCall = (compute: ComputeService, ctx: ComputeContext) => Promise<unknown>;

export interface Tool {
  description: string;
  /** The listed input schema (tools/list). */
  inputSchema: { type: 'object'; [k: string]: unknown };
  /** A free tool consumes no call and is not metered (get_capabilities). */
  free: boolean;
  /** The arguments checked (arrays first, then the schema), or the contract error thrown. */
  parse(args: Record<string, unknown>, limits: ArrayLimits): unknown;
  /** `parse`, and the call the arguments make. */
  prepare(args: Record<string, unknown>, limits: ArrayLimits): PreparedCall;
  summarize(result: Record<string, unknown>): string;
}

/** A tool's input: an object schema, as JSON Schema (json-schema-to-ts's type, so FromSchema reads it). */
type ObjectSchema = JSONSchema & { type: 'object'; properties: Readonly<Record<string, JSONSchema>> };

/**
 * A tool entry. `A` is its arguments' type, FromSchema of its input (written at each entry: FromSchema
 * of a generic schema inside this function is too deep for the compiler); `I` its input schema.
 */
function defineTool<A, I extends ObjectSchema>(spec: {
  description: string;
  input: I;
  docs: Docs<I>;
  free?: boolean;
  arrays?: ArrayCheck;
  call: (compute: ComputeService, args: A, ctx: ComputeContext) => Promise<unknown>;
  summarize: (result: Record<string, unknown>) => string;
}): Tool {
  // Compiled on the first call: a process that never answers a tool call (a gateway-only start that
  // loads this module) does not pay for it.
  let validate: ValidateFunction<A> | undefined;
  const parse = (args: Record<string, unknown>, limits: ArrayLimits): A => {
    const bounded = spec.arrays?.(args, limits);
    if (bounded) throw bounded;
    validate ??= compileArguments<A>(spec.input);
    if (!validate(args)) throw argumentsError(validate.errors);
    return args;
  };
  return {
    description: spec.description,
    inputSchema: listed(spec.input, spec.docs),
    free: spec.free ?? false,
    parse,
    prepare(args, limits) {
      const parsed = parse(args, limits);
      return (compute, ctx) => spec.call(compute, parsed, ctx);
    },
    summarize: spec.summarize,
  };
}

export const TOOLS = {
  get_capabilities: defineTool<FromSchema<typeof capabilitiesInput>, typeof capabilitiesInput>({
    description:
      'List what this service can do right now: allowed models and detectors, defaults, distance metrics, embedding dimensions, thresholds and limits. Free: it does not consume a call. Call it first.',
    input: capabilitiesInput,
    docs: {},
    free: true,
    call: (compute, _args, ctx) => compute.capabilities({ requestId: ctx.requestId }),
    summarize: (r) =>
      `models: ${(r['allowed_models'] as string[] | undefined)?.join(', ')}; detectors: ${(r['allowed_detectors'] as string[] | undefined)?.join(', ')}; default model ${String(r['default_model'])}`,
  }),
  verify_faces: defineTool<FromSchema<typeof verifyInput>, typeof verifyInput>({
    description:
      'Decide whether two faces belong to the same person (DeepFace verify semantics). Returns verified, distance, threshold, confidence (0-100) and the facial areas used. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
    input: verifyInput,
    docs: {
      img1: { description: `First face: an image or an embedding. ${IMAGE} Or ${EMBEDDING}.` },
      img2: { description: `Second face: an image or an embedding. ${IMAGE} Or ${EMBEDDING}.` },
      ...COMMON_DOCS,
    },
    arrays: verifyArrays,
    call: (compute, args, ctx) => compute.verify(args, ctx),
    summarize: (r) =>
      `${r['verified'] ? 'Same person' : 'Different people'}: distance ${String(r['distance'])} vs threshold ${String(r['threshold'])} (${String(r['similarity_metric'])}, ${String(r['model'])}), confidence ${String(r['confidence'])}%.`,
  }),
  represent_face: defineTool<FromSchema<typeof representInput>, typeof representInput>({
    description:
      'Compute face embeddings (vectors) for every face in an image, with each face area and detector confidence. Store the vectors to compare later with compare_inputs. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
    input: representInput,
    docs: {
      img: { description: `One image, or up to limits.max_batch_images images (results then come as one list per image). ${IMAGE}` },
      max_faces: { description: 'Keep only the N largest faces per image.' },
      l2_normalize: { description: 'Return unit-length embeddings (default false).' },
      return_face: { description: "Also return each face's crop (detected, aligned, before resizing) as base64 PNG in face_png (default false)." },
      ...COMMON_DOCS,
    },
    arrays: representArrays,
    call: (compute, args, ctx) => compute.represent(args, ctx),
    summarize: (r) => {
      const results = r['results'] as unknown[];
      const faces = Array.isArray(results?.[0]) ? (results as unknown[][]).map((x) => x.length).join('+') : String(results?.length ?? 0);
      return `${faces} face(s) embedded with ${String(r['model'])}.`;
    },
  }),
  compare_inputs: defineTool<FromSchema<typeof compareInput>, typeof compareInput>({
    description:
      'Compare one face (image or embedding), or a list of faces, against many stored embeddings in one call; returns distance, verified and confidence per target (one list per face for a list), optionally only the top_k nearest. Consumes one call when it runs (a result, or no face found); a refused call costs nothing.',
    input: compareInput,
    docs: {
      source: {
        description: `The face to compare, {"img": <image>} (its largest face is used) or {"embedding": [...]}, or a list of faces (at most limits.max_sources; results then hold one list per source). ${IMAGE}`,
      },
      targets: { description: `Embeddings to compare the source against (required unless targets_b64 is given; at most limits.max_targets); each is ${EMBEDDING}.` },
      targets_b64: { description: 'Alternative to targets for many vectors: base64 of little-endian float32 values, row-major, N x dims.' },
      top_k: { description: 'Return only the k nearest targets per source, nearest first. Recommended (e.g. 10): without it every target gets a result.' },
      ...COMMON_DOCS,
    },
    arrays: compareArrays,
    call: async (compute, args, ctx) => comparePlain(await compute.compare(args, ctx)),
    summarize: (r) => {
      const results = (r['results'] as Array<{ verified: boolean } | Array<{ verified: boolean }>>) ?? [];
      if (Array.isArray(results[0]) || (Array.isArray(r['source']) && results.length > 0)) {
        const lists = results as Array<Array<{ verified: boolean }>>;
        return `${lists.length} source(s) compared with ${String(r['model'])}; ${lists.reduce((n, l) => n + l.filter((x) => x.verified).length, 0)} match(es) verified as the same person.`;
      }
      const flat = results as Array<{ verified: boolean }>;
      return `${flat.length} target(s) compared with ${String(r['model'])}; ${flat.filter((x) => x.verified).length} verified as the same person.`;
    },
  }),
} satisfies Record<string, Tool>;

export type ToolName = keyof typeof TOOLS;

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOLS, name);
}
