/**
 * The simulator behind docs/scaling.md's curves (bench/scaling/simulate.ts) against queueing theory:
 * an M/M/c queue's mean wait is Erlang C's, and a tier past capacity is reported saturated.
 */
import t from 'tap';
import { rng, simulate, maxLoadWithin, type TierSpec } from '../bench/scaling/simulate.js';

/** Exponential service-time samples with mean `meanMs`. */
function expSamples(meanMs: number, n = 50_000): number[] {
  const r = rng(99);
  return Array.from({ length: n }, () => -Math.log(1 - r()) * meanMs);
}

/** Erlang C: the probability of waiting, and the mean wait in an M/M/c queue. */
function erlangC(c: number, lambda: number, mu: number): { pWait: number; meanWait: number } {
  const a = lambda / mu;
  let sum = 0;
  let term = 1;
  for (let k = 0; k < c; k++) {
    if (k > 0) term *= a / k;
    sum += term;
  }
  const last = (term * a) / c; // a^c / c!
  const pWait = (last * (c / (c - a))) / (sum + last * (c / (c - a)));
  return { pWait, meanWait: pWait / (c * mu - lambda) };
}

t.test('one tier of c servers with exponential times waits as Erlang C says', async (t) => {
  for (const [c, rho] of [[1, 0.7], [2, 0.8], [4, 0.85]] as const) {
    const meanMs = 50;
    const mu = 1 / meanMs; // per ms
    const lambda = rho * c * mu;
    const tiers: TierSpec[] = [{ name: 'q', replicas: 1, cores: c, samples: expSamples(meanMs) }];
    const r = simulate(tiers, lambda * 1000, 200_000, 3);
    const want = erlangC(c, lambda, mu).meanWait;
    const got = r.tiers[0]!.mean_wait_ms;
    t.ok(Math.abs(got - want) / want < 0.08, `c=${c} ρ=${rho}: mean wait ${got.toFixed(1)} ms, Erlang C ${want.toFixed(1)} ms`);
    t.ok(Math.abs(r.tiers[0]!.utilization - rho) < 0.02, `utilization ${r.tiers[0]!.utilization.toFixed(3)} ≈ ${rho}`);
    t.notOk(r.saturated);
  }
});

t.test('past capacity, the tier is saturated; replicas add capacity', async (t) => {
  const tiers = (replicas: number): TierSpec[] => [{ name: 'ms', replicas, cores: 2, samples: expSamples(100) }];
  t.ok(simulate(tiers(1), 25, 20_000).saturated, '25 req/s against 20 req/s of capacity');
  t.notOk(simulate(tiers(2), 25, 20_000).saturated, 'two replicas carry it');
  const one = maxLoadWithin(tiers(1), 1000, 40).rps;
  const four = maxLoadWithin(tiers(4), 1000, 160).rps;
  t.ok(one > 10 && one < 20, `one replica: ${one.toFixed(1)} req/s within a 1 s p99`);
  t.ok(four > 3.5 * one, `four replicas: ${four.toFixed(1)} req/s (pooling gains a little more than 4x)`);
});
