/**
 * The arrays of tool arguments, checked before the schema validator sees them.
 * A validator that reads every element before the array's length, and records one issue per bad
 * element (zod did: 7.6 MiB of bad `targets` made millions of issues, 3.2 s, 1.54 GB), is held off:
 * every array is held to the REST limits first (its length is read, not its elements), and each
 * embedding is read by one loop that stops at its first bad value, so a refusal costs the same
 * however many bad values follow. The errors are the REST ones, with the codes and argument names of
 * src/mcp/validate.ts. Each tool's check is named in its entry of the tool table (tools.ts).
 */
import { ServiceError } from '../errors/index.js';
import { compareBody } from '../vocabulary/schemas.js';

/** The REST limits the arrays are held to (FACECOMPUTE_MAX_TARGETS, _MAX_SOURCES, _MAX_BATCH_IMAGES). */
export interface ArrayLimits {
  maxTargets: number;
  maxSources: number;
  maxBatchImages: number;
}

/** The most numbers an embedding may hold: the REST schemas' maxItems (src/vocabulary/schemas.ts). */
export const MAX_EMBEDDING_LENGTH: number = compareBody.properties.targets.items.maxItems;

/** The error for an embedding argument `name` holding `v`, or null when it is one. */
function embeddingError(v: unknown, name: string): ServiceError | null {
  if (!Array.isArray(v)) return new ServiceError('invalid_embedding', `${name} must be an embedding: an array of finite numbers`);
  if (v.length === 0) return new ServiceError('embedding_dimension_mismatch', `${name} holds no numbers; an embedding has as many as the model has dimensions (see get_capabilities embedding_dims)`);
  if (v.length > MAX_EMBEDDING_LENGTH) return new ServiceError('embedding_dimension_mismatch', `${name} holds more numbers than any model has dimensions`);
  for (let i = 0; i < v.length; i++) {
    const x: unknown = v[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return new ServiceError('invalid_embedding', `${name}[${i}] is not a finite number (NaN, Infinity and non-numbers are refused)`);
  }
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first problem with a tool's array arguments, or null; values not where an array may be are the schema's to refuse. */
export type ArrayCheck = (args: Record<string, unknown>, limits: ArrayLimits) => ServiceError | null;

/** verify_faces: img1 and img2, when they are embeddings. */
export const verifyArrays: ArrayCheck = (args) => {
  for (const name of ['img1', 'img2'] as const) {
    if (Array.isArray(args[name])) {
      const e = embeddingError(args[name], name);
      if (e) return e;
    }
  }
  return null;
};

/** represent_face: a batch of images, by its length alone. */
export const representArrays: ArrayCheck = (args, limits) => {
  const img = args['img'];
  if (Array.isArray(img) && img.length > limits.maxBatchImages) return new ServiceError('request_too_large', `img: a batch holds at most ${limits.maxBatchImages} images`);
  return null;
};

/** compare_inputs: the sources (their number, their embeddings) and the targets (their number, each one). */
export const compareArrays: ArrayCheck = (args, limits) => {
  const source = args['source'];
  if (Array.isArray(source)) {
    if (source.length > limits.maxSources) return new ServiceError('too_many_targets', `source holds ${source.length} entries; the limit is ${limits.maxSources}`);
    for (let i = 0; i < source.length; i++) {
      const s: unknown = source[i];
      if (isObject(s) && s['embedding'] !== undefined) {
        const e = embeddingError(s['embedding'], `source[${i}].embedding`);
        if (e) return e;
      }
    }
  } else if (isObject(source) && source['embedding'] !== undefined) {
    const e = embeddingError(source['embedding'], 'source.embedding');
    if (e) return e;
  }
  const targets = args['targets'];
  if (Array.isArray(targets)) {
    if (targets.length > limits.maxTargets) return new ServiceError('too_many_targets', `targets holds ${targets.length} vectors; the limit is ${limits.maxTargets}`);
    for (let i = 0; i < targets.length; i++) {
      const e = embeddingError(targets[i], `targets[${i}]`);
      if (e) return e;
    }
  }
  return null;
};
