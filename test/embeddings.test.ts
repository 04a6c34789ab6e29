import t from 'tap';
import { checkEmbedding, checkRows } from '../src/service/embeddings.js';
import { ServiceError } from '../src/errors/index.js';

/** The ServiceError `fn` throws, or null when it returns. */
function thrown(fn: () => unknown): ServiceError | null {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  return null;
}

/** The assertions `rejects` needs, structurally (tap's plugin-built test type is unwieldy). */
interface Asserts {
  equal(found: unknown, wanted: unknown): unknown;
  match(found: unknown, pattern: RegExp): unknown;
}

function rejects(t: Asserts, fn: () => unknown, code: string, message: RegExp): void {
  const err = thrown(fn);
  t.equal(err?.code, code);
  t.match(err?.detail, message);
}

t.test('checkEmbedding narrows a JSON embedding to float32 and names what is wrong', async (t) => {
  t.same(checkEmbedding([3, 4.5], 2, 'targets[1]'), new Float32Array([3, 4.5]));
  t.equal(checkEmbedding([0.1], 1, 'source')[0], Math.fround(0.1), 'narrowed to float32');
  rejects(t, () => checkEmbedding([3], 2, 'targets[1]'), 'embedding_dimension_mismatch', /^targets\[1\] has 1 dimensions; the model expects 2$/);
  rejects(t, () => checkEmbedding([3, Number.NaN], 2, 'targets[1]'), 'invalid_embedding', /^targets\[1\]\[1\] is not a finite float32 number$/);
  rejects(t, () => checkEmbedding([1, '2'] as unknown as number[], 2, 'targets[0]'), 'invalid_embedding', /^targets\[0\]\[1\]/);
  rejects(t, () => checkEmbedding([1, Number.POSITIVE_INFINITY], 2, 'img1'), 'invalid_embedding', /^img1\[1\]/);
  // Finite as a double, infinite as float32.
  rejects(t, () => checkEmbedding([1e39, 1], 2, 'source'), 'invalid_embedding', /^source\[0\]/);
});

t.test('checkRows checks lifted float32 rows as checkEmbedding checks each JSON row', async (t) => {
  const rows = new Float32Array([1, 2, 3, 4.5]);
  t.equal(checkRows(rows, new Uint32Array([2, 2]), 2, 'targets'), rows, 'the same rows, not a copy');
  t.equal(checkRows(new Float32Array(0), new Uint32Array(0), 3, 'targets').length, 0);
  rejects(t, () => checkRows(new Float32Array([1, 2, 3]), new Uint32Array([2, 1]), 2, 'targets'), 'embedding_dimension_mismatch', /^targets\[1\] has 1 dimensions; the model expects 2$/);
  rejects(t, () => checkRows(new Float32Array([1, 2, 3, Number.NaN]), new Uint32Array([2, 2]), 2, 'targets'), 'invalid_embedding', /^targets\[1\]\[1\] is not a finite float32 number$/);
  rejects(t, () => checkRows(Float32Array.from([1, 1e39]), new Uint32Array([2]), 2, 'targets'), 'invalid_embedding', /^targets\[0\]\[1\]/);
  // Row order first: row 0's bad value is reported before row 1's wrong length.
  rejects(t, () => checkRows(new Float32Array([Number.NaN, 2, 3]), new Uint32Array([2, 1]), 2, 'targets'), 'invalid_embedding', /^targets\[0\]\[0\]/);
});
