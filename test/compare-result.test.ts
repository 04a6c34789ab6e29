/**
 * The JSON text /compare sends is written natively (crates/facecompute-core/src/compare/json.rs); it
 * must be byte for byte what JSON.stringify gives for the plain objects built with
 * src/deepface/decision.ts (DeepFace's rounding and confidence), for every model and metric,
 * including distances on rounding edges.
 */
import t from 'tap';
import { KNOWN_MODELS, findThreshold } from '../src/deepface/decision.js';
import { METRICS } from '../src/native/compare.js';
import { CompareRows, compareJson, comparePlain } from '../src/service/compare-result.js';
import { compareResponse } from '../src/vocabulary/schemas.js';
import AjvModule from 'ajv';

// ajv is CommonJS: its class is the default export's `default` under ESM interop.
const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as new (o: object) => { compile(s: object): ((x: unknown) => boolean) & { errors?: unknown } };

function distances(seed: number, threshold: number): Float64Array {
  let s = seed >>> 0;
  const rnd = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0), s / 2 ** 32);
  const edges = [0, -0, -1e-12, 1e-7, 4e-7, 5e-7, 6e-7, 0.0000005, threshold, threshold - 5e-7, threshold + 5e-7, threshold * 2, 1, 2, 0.125, 0.375, 2.675, 123.4567895, 1e6 + 0.5e-6];
  const out = [...edges];
  for (let i = 0; i < 3000; i++) out.push(rnd() * threshold * 3);
  // Distances whose 6-decimal rounding is an exact tie in binary (multiples of 1/64 plus half a step).
  for (let i = 0; i < 200; i++) out.push(Math.floor(rnd() * 64) / 64 + 0.5e-6);
  return new Float64Array(out);
}

t.test('native JSON equals JSON.stringify of the plain results, every model and metric', async (t) => {
  let checked = 0;
  for (const model of KNOWN_MODELS) {
    for (const metric of METRICS) {
      let pretuned: number;
      try {
        pretuned = findThreshold(model, metric);
      } catch {
        continue;
      }
      const d = distances(checked + 1, pretuned);
      const indices = Uint32Array.from(d, (_, i) => i * 7);
      for (const threshold of [pretuned, pretuned / 2]) {
        const rows = new CompareRows({ model, metric, pretuned, threshold }, indices, d);
        const native = (await rows.json()).toString();
        const js = JSON.stringify(rows.plain());
        if (native !== js) {
          const a = JSON.parse(native) as unknown[];
          const b = JSON.parse(js) as unknown[];
          const at = a.findIndex((x, i) => JSON.stringify(x) !== JSON.stringify(b[i]));
          t.fail(`${model}/${metric}: first difference at ${at}: ${JSON.stringify(a[at])} vs ${JSON.stringify(b[at])} (distance ${d[at]})`);
        }
        checked++;
      }
    }
  }
  t.ok(checked >= 40, `${checked} model/metric/threshold combinations agree byte for byte`);
});

t.test('lists per source and the whole response envelope', async (t) => {
  const d = new Float64Array([0.1, 0.2, 0.3, 0.05, 0.5]);
  const rows = new CompareRows({ model: 'Facenet', metric: 'cosine', pretuned: 0.4, threshold: 0.4 }, Uint32Array.from([0, 1, 2, 3, 4]), d, Uint32Array.from([0, 2, 2, 5]));
  const plain = rows.plain() as unknown[][];
  t.same(plain.map((l) => l.length), [2, 0, 3], 'an empty list stays a list');
  t.equal((await rows.json()).toString(), JSON.stringify(plain));
  const response = { model: 'Facenet', similarity_metric: 'cosine', threshold: 0.4, dims: 128, source: [null, { facial_area: { x: 1, y: 2, w: 3, h: 4, left_eye: null, right_eye: [1, 2] }, face_confidence: 0.99 }, null], results: rows, time: 0.01 };
  const text = (await compareJson(response)).toString();
  t.equal(text, JSON.stringify(comparePlain(response)));
  const validate = new Ajv({ strict: false }).compile(compareResponse);
  t.ok(validate(JSON.parse(text)), `valid against the response schema: ${JSON.stringify(validate.errors)}`);
  const single = { ...response, source: null, results: new CompareRows(rows.decide, rows.indices, rows.distances) };
  t.ok(validate(JSON.parse((await compareJson(single)).toString())), 'single-source shape too');
});

t.test('inconsistent arrays are refused, not a crash', async (t) => {
  const bad = new CompareRows({ model: 'Facenet', metric: 'cosine', pretuned: 0.4, threshold: 0.4 }, Uint32Array.from([0, 1]), new Float64Array([0.1, 0.2]), Uint32Array.from([0, 3]));
  await t.rejects(bad.json(), { code: 'invalid_request' });
});
