/**
 * The second round's attacks (issue 37; bench/adversary/attacks.ts, the rows named "round 2"), run on
 * their own with `npm run bench:adversary -- --only 'round 2' --out bench/results/adversary-round2.json`:
 * docs/security.md's table is this file's rows, each attack's answer beside the other tenant's
 * /verify in the same window, and every row got its expected answer with no process dead.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { ERROR_STATUS } from '../src/errors/index.js';

interface Row {
  attack: string;
  expect: string;
  answers: { status: number; code: string; ms: number }[];
  processes: { role: string; rise_mb: number }[];
  died: boolean;
  client: { p50_ms: number; p99_ms: number; errors: number };
}
const run = JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/adversary-round2.json'), 'utf8')) as { baseline: { p50_ms: number; p99_ms: number }; results: Row[] };

/** The table docs/security.md shows, from the run. */
export function round2Table(): string {
  const rise = (r: Row, role: string) => r.processes.find((p) => p.role === role)?.rise_mb;
  const lines = [
    `| attack | answer | ms | RSS rise serve / model server (MiB) | died | other tenant's /verify p50 / p99 (ms), errors |`,
    '|---|---|---|---|---|---|',
    ...run.results.map((r) => {
      const a = r.answers[r.answers.length - 1]!;
      // "200, rate_limited (…)": the HTTP status of a batch whose elements were refused, not the code's.
      const lead = /^[a-z_]+/.exec(a.code)?.[0] ?? '';
      const sep = (ERROR_STATUS as Record<string, number>)[lead] === a.status || !(lead in ERROR_STATUS) ? ' ' : ', ';
      return `| ${r.attack.replace(/^round 2: /, '')} | ${a.status}${sep}${a.code} | ${r.answers.map((x) => x.ms).join('/')} | ${rise(r, 'serve')} / ${rise(r, 'model-server')} | ${r.died ? 'yes' : 'no'} | ${r.client.p50_ms} / ${r.client.p99_ms}, ${r.client.errors} |`;
    }),
  ];
  return lines.join('\n');
}

t.test('every round-2 attack got its expected answer; nobody died; the other tenant saw no error', async (t) => {
  t.ok(run.results.length >= 6, 'the round-2 rows');
  for (const r of run.results) {
    t.notOk(r.died, `${r.attack}: no process died`);
    t.equal(r.client.errors, 0, `${r.attack}: the other tenant's /verify saw no error`);
    const a = r.answers[r.answers.length - 1]!;
    t.ok(r.expect.startsWith(`${a.status} `) || r.expect.includes(a.code.split(' (')[0]!), `${r.attack}: ${a.status} ${a.code} is what it expects (${r.expect})`);
  }
});

t.test("docs/security.md shows the run's table", async (t) => {
  const page = readFileSync(resolve(REPO_ROOT, 'docs/security.md'), 'utf8');
  t.ok(page.includes(round2Table()), 'the table is the run\'s rows');
  t.ok(page.includes(`p50 ${run.baseline.p50_ms} ms and p99 ${run.baseline.p99_ms} ms without attack`), 'the baseline');
  const flat = page.replace(/\s+/g, ' ');
  const worst = Math.max(...run.results.map((r) => r.client.p99_ms));
  t.ok(flat.includes(`(the largest: ${worst} ms, ${(worst / run.baseline.p99_ms).toFixed(1)}×)`), `the largest p99 in a window: ${worst} ms`);
  t.ok(run.results.every((r) => r.client.p99_ms <= 2 * run.baseline.p99_ms), 'within 2x in every window, as the prose says');
  t.ok(flat.includes('with its p99 within 2× of its p99 without attack in every one'));
  const row = (name: string) => run.results.find((r) => r.attack.includes(name))!;
  const serveRise = (name: string) => row(name).processes.find((p) => p.role === 'serve')!.rise_mb;
  t.ok(flat.includes(`\`serve\` +${serveRise('MCP, 300 batches')} MiB`), 'the MCP batches row');
  t.ok(flat.includes(`for \`serve\` +${serveRise('one targets row')} MiB, and the one-number rows`), 'the single row');
  t.ok(run.results.every((r) => r.processes.every((p) => p.role !== 'serve' || p.rise_mb <= 64)), 'serve rose at most 64 MiB in every window');
  const resets = Number(/(\d+) reset before/.exec(row('unknown paths').answers[0]!.code)![1]);
  t.equal(resets, 0, 'no sender to an unknown route lost its answer to a reset');
  t.ok(flat.includes('Each of the 80 senders to unknown routes read its 404 or 405'), 'as the prose says');
  const slowest = Math.max(...run.results.flatMap((r) => (r.attack.includes('MCP, 300 batches') ? [] : r.answers.map((a) => a.ms))));
  t.ok(slowest <= 2000, `every answer within 2 s (the slowest: ${slowest} ms; the MCP row's figure is its 300 batches together)`);
});
