/**
 * What the MCP endpoint's docs cost, in one process without HTTP: building the corpus (reading and
 * splitting docs/, indexing its sections: once per endpoint start) and one search_docs call per kind
 * of query, as ratios to a typical question measured in the same run. search_docs is free for the
 * caller and bounded only by the rate limit, so its worst case is what matters: a query is at most 500
 * characters and is searched as at most 24 distinct terms (src/docs-index/search.ts).
 * Median ms of --rounds searches each (limit 20), interleaved; the load average is written beside them.
 *
 *   node --import tsx bench/profile/docs-search.ts [--rounds 30] [--out bench/results/docs-search.json]
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createDocsCorpus } from '../../src/mcp/docs-tools.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { loadAverage } from '../lib/proc.js';
import { cpus } from 'node:os';
import { simdInfo } from '../lib/machine.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '30' }, out: { type: 'string', default: 'bench/results/docs-search.json' } } });
const ROUNDS = Number(values.rounds);
const urls = { console: 'https://console.example', base: 'https://api.example', mcp: 'https://mcp.example/mcp' };

const builds: number[] = [];
let corpus = createDocsCorpus(resolve(PACKAGE_ROOT, 'docs'), urls);
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  corpus = createDocsCorpus(resolve(PACKAGE_ROOT, 'docs'), urls);
  builds.push(performance.now() - t0);
}

let seed = 7;
const letters = (n: number) =>
  Array.from({ length: n }, () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return 'abcdefghijklmnopqrstuvwxyz'[seed % 26];
  }).join('');
const QUERIES: Record<string, string> = {
  typical: 'what does queue_full mean',
  'common words repeated (500 chars)': 'threshold verification embedding detector configuration deployment '.repeat(8).slice(0, 500),
  '60 random words (500 chars)': Array.from({ length: 60 }, () => letters(7)).join(' ').slice(0, 500),
  'one 500-letter word': letters(500),
  '120 words joined by _ (500 chars)': Array.from({ length: 125 }, () => letters(3)).join('_').slice(0, 500),
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(QUERIES).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, query] of Object.entries(QUERIES)) {
    const t0 = performance.now();
    corpus.call('search_docs', { query, limit: 20 });
    times[name]!.push(performance.now() - t0);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const typical = median(times['typical']!);
const searches = Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, { median_ms: +median(xs).toFixed(3), ratio_to_typical: +(median(xs) / typical).toFixed(2) }]));
const result = {
  pages: corpus.pages.length,
  build_ms_median: +median(builds).toFixed(1),
  rounds: ROUNDS,
  searches,
  load_average: loadAverage(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  simd: simdInfo(),
  at: new Date().toISOString(),
};
writeFileSync(values.out!, JSON.stringify(result, null, 2) + '\n');
console.log(JSON.stringify(result, null, 2));
