/**
 * src/deepface/distance.ts (verify on the model server) and the native compare (verify of two embeddings
 * and every /compare in the gateway) against DeepFace 0.0.100's own find_distance and verify, computed
 * by tools/reference/deepface_distances.py into test/fixtures/deepface/distances.json.
 *
 * Where DeepFace's pairwise form is defined, ours equals it (the rounded value exactly, the unrounded to
 * 1e-12 relative). Where it is not (a zero vector under cosine or angular: 0/0 = NaN), ours is the value
 * of DeepFace's batch form, 1 and 0.5, on both paths: never NaN, which the model server would send as
 * null and the gateway would take for a broken replica (issue 23).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { distance } from '../src/deepface/distance.js';
import { decide } from '../src/deepface/decision.js';
import { compareOneToMany, METRICS, type Metric } from '../src/native/compare.js';
import { REPO_ROOT } from './helpers/shared.js';

type Num = number | 'nan' | 'inf' | '-inf';
interface Fixture {
  deepface: string;
  numpy: string;
  cases: Array<{ label: string; a: number[]; b: number[]; metrics: Record<Metric, { find_distance: Num; unrounded: Num; batch: Num }> }>;
  verify: Array<{ label: string; model: string; metric: Metric; a: number[]; b: number[]; verified: boolean; distance: Num; threshold: number; confidence: number }>;
}

const fx = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/deepface/distances.json'), 'utf8')) as Fixture;
const value = (x: Num): number => (x === 'nan' ? Number.NaN : x === 'inf' ? Infinity : x === '-inf' ? -Infinity : x);
const roundDistance = (d: number) => decide(d, 'Facenet', 'cosine').distance;
const isZero = (v: number[]) => v.every((x) => x === 0);

t.test('the fixture is DeepFace 0.0.100 and covers every metric, zero vectors included', async (t) => {
  t.equal(fx.deepface, '0.0.100');
  t.ok(fx.cases.length >= 20, `${fx.cases.length} cases`);
  for (const c of fx.cases) t.same(Object.keys(c.metrics).sort(), [...METRICS].sort(), c.label);
  t.ok(fx.cases.some((c) => isZero(c.a) && !isZero(c.b)) && fx.cases.some((c) => !isZero(c.a) && isZero(c.b)) && fx.cases.some((c) => isZero(c.a) && isZero(c.b)));
  // DeepFace's pairwise form is NaN for a zero vector under cosine or angular (0/0), and under angular
  // for parallel or opposite vectors whose rounded similarity passes ±1 (arccos of 1 + 2e-16); nowhere else.
  const nan = fx.cases.flatMap((c) => METRICS.filter((m) => c.metrics[m].find_distance === 'nan').map((m) => `${c.label}/${m}`));
  const zeroAngles = fx.cases.filter((c) => isZero(c.a) || isZero(c.b)).flatMap((c) => ['cosine', 'angular'].map((m) => `${c.label}/${m}`));
  t.same(nan.sort(), [...zeroAngles, 'identical/angular', 'opposite/angular'].sort());
});

t.test("distance.ts equals DeepFace's find_distance for every metric; its batch form where the pairwise one is NaN", async (t) => {
  let compared = 0;
  for (const c of fx.cases) {
    for (const m of METRICS) {
      const want = c.metrics[m];
      const got = distance(c.a, c.b, m);
      t.ok(Number.isFinite(got), `${c.label}/${m}: finite (${got})`);
      if (want.find_distance === 'nan' && (isZero(c.a) || isZero(c.b))) {
        t.equal(got, value(want.batch), `${c.label}/${m}: DeepFace's batch form, ${want.batch}`);
      } else if (want.find_distance === 'nan') {
        // Rounding noise past ±1: we clamp into arccos' domain, so exactly 0 (parallel) or 1 (opposite),
        // where DeepFace's batch form, shrunk by its ε, gives 0.000003 and 0.999997.
        t.equal(got, Math.round(value(want.batch)), `${c.label}/${m}: the clamped limit of ${want.batch}`);
      } else {
        t.equal(roundDistance(got), want.find_distance, `${c.label}/${m}: rounded as find_distance`);
        const u = value(want.unrounded);
        t.ok(Math.abs(got - u) <= 1e-12 * Math.max(1, Math.abs(u)), `${c.label}/${m}: ${got} vs DeepFace's unrounded ${u}`);
      }
      compared++;
    }
  }
  t.equal(compared, fx.cases.length * 4);
});

t.test('the native compare agrees with distance.ts on the same float32 vectors, zero vectors included', async (t) => {
  for (const c of fx.cases) {
    const a = Float32Array.from(c.a);
    const b = Float32Array.from(c.b);
    for (const m of METRICS) {
      const native = (await compareOneToMany(a, b, a.length, m)).distances[0]!;
      const ts = distance(a, b, m);
      // The native euclidean_l2 expands the square (one pass over each target), which costs up to 3e-8
      // near 0 (compare/metric.rs); arccos near 1 magnifies the last bits of the cosine as much.
      t.ok(Math.abs(native - ts) <= 1e-7 + 1e-9 * Math.abs(ts), `${c.label}/${m}: native ${native} vs distance.ts ${ts}`);
      if ((isZero(c.a) || isZero(c.b)) && (m === 'cosine' || m === 'angular')) t.equal(native, ts, `${c.label}/${m}: a zero vector gives the same value on both paths`);
    }
  }
});

t.test("verify's decision: DeepFace's where its distance is finite; not verified, with a finite distance, where it is inf", async (t) => {
  for (const v of fx.verify) {
    const d = decide(distance(v.a, v.b, v.metric), v.model, v.metric);
    const label = `${v.label} ${v.model}/${v.metric}`;
    t.equal(d.threshold, v.threshold, `${label}: threshold`);
    t.equal(d.verified, v.verified, `${label}: verified`);
    if (v.distance === 'inf') {
      // DeepFace: NaN for the only pair, which its minimum never keeps, so distance inf and confidence 0.
      // JSON has no inf; ours is the batch form's distance and its calibrated confidence.
      t.equal(d.distance, v.metric === 'cosine' ? 1 : 0.5, `${label}: the batch form's distance`);
      t.ok(d.confidence < 49, `${label}: a not-verified confidence (${d.confidence})`);
    } else {
      t.equal(d.distance, v.distance, `${label}: distance`);
      t.equal(d.confidence, v.confidence, `${label}: confidence`);
    }
  }
});
