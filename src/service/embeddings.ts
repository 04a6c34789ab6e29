/** An embedding given as JSON, checked against the model's dimension and narrowed to float32. */
import { ServiceError } from '../errors/index.js';

/** `v` as float32: exactly `dims` finite numbers that stay finite in float32; errors name `what`. */
export function checkEmbedding(v: number[], dims: number, what: string): Float32Array {
  if (v.length !== dims) throw new ServiceError('embedding_dimension_mismatch', `${what} has ${v.length} dimensions; the model expects ${dims}`);
  const f = Float32Array.from(v);
  for (let i = 0; i < v.length; i++) {
    if (typeof v[i] !== 'number' || !Number.isFinite(v[i]) || !Number.isFinite(f[i]!)) throw new ServiceError('invalid_embedding', `${what}[${i}] is not a finite float32 number`);
  }
  return f;
}
