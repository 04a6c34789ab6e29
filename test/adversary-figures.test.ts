/**
 * The adversary suite's prose in docs/benchmarks.md states figures of bench/results/adversary.json (the
 * table above it is rendered from the same file and checked by readme-figures.test.ts): each is
 * recomputed here, so a rerun that changes them fails until the prose says what the run measured.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

interface Row {
  attack: string;
  expect: string;
  answers: { status: number; code: string }[];
  processes: { role: string; rise_mb: number; peak_rss_mb: number; longest_stall_ms: number }[];
  idle_node_stall_ms: number;
  died: boolean;
  client: { p99_ms: number; errors: number };
}
const run = JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/adversary.json'), 'utf8')) as { baseline: { p99_ms: number }; results: Row[] };
const page = readFileSync(resolve(REPO_ROOT, 'docs/benchmarks.md'), 'utf8');
const prose = page.slice(page.indexOf('<!-- adversary-table:end -->'), page.indexOf('## ', page.indexOf('<!-- adversary-table:end -->')));

t.test('every attack got its expected answer, no process died, the client saw no error', async (t) => {
  for (const r of run.results) {
    t.notOk(r.died, `${r.attack}: no process died`);
    t.equal(r.client.errors, 0, `${r.attack}: no client error`);
    for (const a of r.answers) t.ok(r.expect.startsWith(`${a.status} `) || r.expect.includes(a.code.split(' (')[0]!), `${r.attack}: ${a.status} ${a.code} is what it expects (${r.expect})`);
  }
  t.ok(prose.includes('no process died, and the client saw no error in any window'));
});

t.test('the client p99 figures', async (t) => {
  const base = Math.round(run.baseline.p99_ms);
  const worst = Math.round(Math.max(...run.results.map((r) => r.client.p99_ms)));
  t.ok(prose.includes(`(${base} ms) in every one (the largest: ${worst} ms)`), `p99 without attack ${base} ms, the largest in a window ${worst} ms`);
  t.ok(worst <= 2 * run.baseline.p99_ms, 'within 2x, as the prose says');
});

t.test('the RSS figures', async (t) => {
  const rise = (r: Row) => Math.max(...r.processes.map((p) => p.rise_mb));
  // The accepted requests' model-server memory is bounded by its budget, not by the 64 MiB goal.
  const accepted = run.results.filter((r) => r.attack.startsWith('largest accepted'));
  const b64 = run.results.find((r) => r.attack.includes('valid targets_b64'))!;
  t.equal(accepted.length, 2, 'the two accepted-request rows');
  const others = Math.max(...run.results.filter((r) => !accepted.includes(r) && r !== b64).map(rise));
  for (const r of accepted) {
    const ms = r.processes.find((p) => p.role === 'model-server')!;
    t.ok(ms.peak_rss_mb <= 2048, `${r.attack}: the model server peaked within its 2 GiB budget`);
    t.ok(prose.includes(`${Math.round(ms.peak_rss_mb)} MiB`), `${r.attack}: its peak is in the prose`);
  }
  t.ok(prose.includes(`RSS rose at most ${others} MiB in every window`), `the largest rise of the other windows: ${others} MiB`);
  t.ok(prose.includes(`the 64 MiB \`targets_b64\` (+${rise(b64)} MiB; not an attack)`), `targets_b64's: ${rise(b64)} MiB`);
  t.ok(others <= 64, 'within the goal of 64 MiB, as the prose implies');
});

t.test('the busy and stall figures', async (t) => {
  const serve = (r: Row) => r.processes.find((p) => p.role === 'serve')!;
  const busy = run.results.map((r) => (serve(r) as { busy_ms?: number }).busy_ms!);
  t.ok(busy.every((b) => typeof b === 'number'), 'every window has a busy figure');
  t.ok(prose.includes(`was at most ${Math.round(Math.max(...busy))} ms in every window`), `the busiest span: ${Math.max(...busy)} ms`);
  const control = run.results.find((r) => r.attack.startsWith('control'))!;
  t.ok(prose.includes(`(the\ncontrol, with no attack, ${Math.round((serve(control) as { busy_ms?: number }).busy_ms!)} ms)`), 'the control row');
  const span = (xs: number[]) => `${Math.min(...xs)}-${Math.max(...xs)} ms`;
  const stalls = run.results.map((r) => Math.round(serve(r).longest_stall_ms));
  const idle = run.results.map((r) => Math.round(r.idle_node_stall_ms));
  t.ok(prose.includes(`stalls beside it (${span(stalls)}, and ${span(idle)} for an idle Node process`), `stalls ${span(stalls)}, idle ${span(idle)}`);
});

t.test('the before-and-after figures', async (t) => {
  const before = JSON.parse(readFileSync(resolve(REPO_ROOT, 'bench/results/adversary-before-lift.json'), 'utf8')) as { results: Row[] };
  const serve = (r: Row | undefined) => r!.processes.find((p) => p.role === 'serve')! as Row['processes'][number] & { busy_ms: number };
  const of = (rows: Row[], prefix: string) => serve(rows.find((r) => r.attack.startsWith(prefix)));
  const rows = ['gateway: 64 MiB of valid JSON targets', 'gateway: 64 MiB of valid targets_b64', 'gateway: 64 MiB of numbers outside targets'];
  const text = prose.replace(/\s+/g, ' ');
  for (const prefix of rows) {
    const b = of(before.results, prefix);
    const n = of(run.results, prefix);
    t.ok(text.includes(`${Math.round(b.busy_ms)} ms`) && text.includes(`+${b.rise_mb} MiB`), `${prefix} before: ${Math.round(b.busy_ms)} ms, +${b.rise_mb} MiB`);
    t.ok(text.includes(`now ${Math.round(n.busy_ms)} ms`) && text.includes(`+${n.rise_mb} MiB`), `${prefix} now: ${Math.round(n.busy_ms)} ms, +${n.rise_mb} MiB`);
  }
});
