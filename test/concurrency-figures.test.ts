/**
 * docs/benchmarks.md's "c4 against c16" bullet states the figures of bench/results/concurrency.json
 * (bench/scaling/concurrency.ts): the run's date, its rounds and cell length, and per model the range
 * over rounds of c16's requests/s and CPU per request over c4's, rounded as the page prints them.
 * A rerun that changes them fails here until the page says what the run measured.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

interface Ratio {
  model: string;
  round: number;
  rps_c16_over_c4: number;
  cpu_c16_over_c4: number;
}
interface Run {
  machine: { cpu: string; cores: number; date: string };
  seconds_per_cell: number;
  ratios: Ratio[];
}

const run = JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/concurrency.json'), 'utf8')) as Run;
const page = readFileSync(resolve(REPO_ROOT, 'docs/benchmarks.md'), 'utf8');
const start = page.indexOf('- c4 against c16');
const bullet = page.slice(start, page.indexOf('\n- ', start + 1)).replace(/\s+/g, ' ');

/** `lo–hi` of `values` to two decimals, or the one value when both round alike. */
function range(values: number[]): string {
  const [lo, hi] = [Math.min(...values), Math.max(...values)].map((v) => v.toFixed(2));
  return lo === hi ? lo! : `${lo}–${hi}`;
}

t.ok(start >= 0, 'docs/benchmarks.md has the "c4 against c16" bullet');

t.test('the bullet names the run', async (t) => {
  const rounds = new Set(run.ratios.map((r) => r.round)).size;
  t.ok(bullet.includes(`${rounds} rounds of ${run.seconds_per_cell} s cells`), `${rounds} rounds of ${run.seconds_per_cell} s cells`);
  const when = run.machine.date.slice(0, 16).replace('T', ' ');
  t.ok(bullet.includes(`${when} UTC`), `ran ${when} UTC`);
  t.ok(bullet.includes('`bench/results/concurrency.json`'), 'it names the results file');
});

t.test('per model, the c16-over-c4 ranges are the run\'s', async (t) => {
  const models = [...new Set(run.ratios.map((r) => r.model))];
  t.ok(models.length >= 2, 'both bench models were measured');
  for (const model of models) {
    const rows = run.ratios.filter((r) => r.model === model);
    const text = `${model} ${range(rows.map((r) => r.rps_c16_over_c4))}× the requests/s at ${range(rows.map((r) => r.cpu_c16_over_c4))}× the CPU per request`;
    t.ok(bullet.includes(text), text);
  }
});
