/**
 * docs/benchmarks.md's adversary table, rendered from bench/results/adversary.json (written by
 * `npm run bench:adversary`), so the figures a reader sees are the run's and change only with it.
 * tools/docs/blocks.ts names the block `adversary-table`; test/readme-figures.test.ts holds it.
 */
import { results } from '../parity/figures.js';

interface Answer { status: number; code: string; ms: number }
interface Proc { role: string; rise_mb: number; longest_stall_ms: number; busy_ms?: number | null; alive: boolean }
interface Attack {
  attack: string;
  answers: Answer[];
  processes: Proc[];
  idle_node_stall_ms: number;
  died: boolean;
  client: { n: number; p50_ms: number; p99_ms: number; errors: number };
}
interface Adversary {
  machine: { cpu: string; cores: number; date: string };
  load_average: { at_start: number[] };
  baseline: { n: number; p50_ms: number; p99_ms: number; errors: number };
  results: Attack[];
}

export const ADVERSARY_FILE = 'bench/results/adversary.json';

const cell = (s: string) => s.replace(/\|/g, '\\|');
/** MCP tools answer inside an HTTP 200 (the code says "tool error"); every other answer is its status and code. */
const answer = (a: Answer) => (a.status === 200 && a.code.startsWith('tool error') ? a.code : `${a.status} ${a.code}`);
const stall = (ms: number) => String(Math.round(ms));
/** Runs before the probe measured it have no busy figure. */
const busy = (p: Proc) => (p.busy_ms === undefined || p.busy_ms === null ? '–' : String(Math.round(p.busy_ms)));
const proc = (r: Attack, role: string) => {
  const p = r.processes.find((x) => x.role === role);
  if (!p) throw new Error(`${ADVERSARY_FILE}: "${r.attack}" has no ${role} process`);
  return p;
};

export function adversaryTable(): string {
  const d = results<Adversary>(ADVERSARY_FILE);
  const when = d.machine.date.slice(0, 16).replace('T', ' ');
  const b = d.baseline;
  const head =
    `Run ${when} UTC (${ADVERSARY_FILE} records the commit), ${d.machine.cpu}, ${d.machine.cores} cores, shared with ` +
    `other sessions: 1-minute load average ${d.load_average.at_start[0]} at the start. The client without attack: ` +
    `p50 ${b.p50_ms} ms, p99 ${b.p99_ms} ms, ${b.errors} errors (${b.n} requests).`;
  const rows = d.results.map((r) => {
    const answers = [...new Set(r.answers.map(answer))].join(', ') || 'nothing sent (control)';
    const serve = proc(r, 'serve');
    const model = proc(r, 'model-server');
    return `| ${cell(r.attack)} | ${cell(answers)} | ${r.answers.map((a) => a.ms).join('/')} | ${serve.rise_mb} / ${model.rise_mb} | ` +
      `${stall(serve.longest_stall_ms)} / ${stall(model.longest_stall_ms)} / ${stall(r.idle_node_stall_ms)} | ${busy(serve)} / ${busy(model)} | ${r.died ? '**yes**' : 'no'} | ` +
      `${r.client.p50_ms} / ${r.client.p99_ms}, ${r.client.errors} |`;
  });
  return [
    head,
    '',
    '| attack | answer | ms | RSS rise serve / model server (MiB) | longest stall serve / model server / idle Node (ms) | busiest JS-thread span serve / model server (ms) | died | client p50 / p99 (ms), errors |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
