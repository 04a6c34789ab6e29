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

/**
 * Rows already read as float32 (a /compare body's lifted `targets`), checked as checkEmbedding checks
 * each row of the JSON arrays, in the same order and with the same messages (`${what}[i]`): row i's
 * length, then its values. JSON.parse's doubles that are not finite never get here (the native reader
 * leaves them to the schema), so a non-finite value is one that overflowed float32.
 */
export function checkRows(values: Float32Array, rowLengths: Uint32Array, dims: number, what: string): Float32Array {
  let at = 0;
  for (let i = 0; i < rowLengths.length; i++) {
    const n = rowLengths[i]!;
    if (n !== dims) throw new ServiceError('embedding_dimension_mismatch', `${what}[${i}] has ${n} dimensions; the model expects ${dims}`);
    for (let j = 0; j < n; j++) {
      if (!Number.isFinite(values[at + j]!)) throw new ServiceError('invalid_embedding', `${what}[${i}][${j}] is not a finite float32 number`);
    }
    at += n;
  }
  return values;
}
