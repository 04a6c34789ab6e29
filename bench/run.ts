/**
 * `npm run bench` / `facecompute bench`: facecompute against DeepFace 0.0.100 on this machine.
 *
 *   npm run bench                       # every suite, about 15 minutes on 2 busy cores
 *   npm run bench -- service compare    # some suites; results of the others in bench.json are kept
 *   npm run bench -- --quick ort        # shorter cells, a smoke run; written to bench/results/quick/
 *
 * Suites: ort, library, service, coldstart, memory, compare, batching (event-loop delay is
 * measured inside service and batching). Every suite measures DeepFace (or our own baseline) in the
 * same run, interleaved, and reports ratios. Results: bench/results/bench.json (every figure),
 * summary.json, summary.md and SVG charts, regenerated from bench.json after each suite.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { machineInfo } from './lib/machine.js';
import { REPO_ROOT, RESULTS_DIR } from './lib/paths.js';
import { loadAverage, logDir } from './lib/proc.js';
import type { SuiteContext } from './suites/context.js';

export const SUITES = ['ort', 'library', 'service', 'coldstart', 'memory', 'compare', 'batching'] as const;
export type SuiteName = (typeof SUITES)[number];

type SuiteFn = (ctx: SuiteContext) => Promise<Record<string, unknown>>;

// Loaded lazily: a suite whose dependencies are missing fails alone, the others still run.
const LOADERS: Record<SuiteName, () => Promise<SuiteFn>> = {
  ort: async () => (await import('./suites/ort.js')).ortSuite,
  library: async () => (await import('./suites/library.js')).librarySuite,
  service: async () => (await import('./suites/service.js')).serviceSuite,
  coldstart: async () => (await import('./suites/coldstart.js')).coldStartSuite,
  memory: async () => (await import('./suites/coldstart.js')).memorySuite,
  compare: async () => (await import('./suites/compare.js')).compareSuite,
  batching: async () => (await import('./suites/batching.js')).batchingSuite,
};

export interface BenchFile {
  machine: ReturnType<typeof machineInfo>;
  suites: Partial<Record<SuiteName, { ran_at: string; seconds: number; loadavg_before: number[]; loadavg_after: number[]; commit: string; ours_entry: string; result?: Record<string, unknown>; error?: string }>>;
}

function table(header: string[], rows: Array<Array<string | number>>): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  process.stdout.write(`${line(header)}\n| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |\n${rows.map((r) => line(r.map(String))).join('\n')}\n`);
}

/** What bin/facecompute.js runs: the bundle, else the tsc build, else the sources through tsx. */
export function oursEntry(): string {
  if (existsSync(join(REPO_ROOT, 'dist', 'bundle', 'main.js'))) return 'bundled (dist/bundle/)';
  return existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js')) ? 'built (dist/src/)' : 'source checkout (tsx)';
}

function readBench(path: string): BenchFile | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as BenchFile;
  } catch {
    return null;
  }
}

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

export async function run(args: string[]): Promise<number> {
  const quick = args.includes('--quick');
  const names = args.filter((a) => !a.startsWith('--'));
  const unknown = names.filter((n) => !(SUITES as readonly string[]).includes(n));
  if (unknown.length > 0 || args.includes('--help')) {
    process.stderr.write(`usage: npm run bench -- [--quick] [${SUITES.join('|')} ...]\n`);
    return unknown.length > 0 ? 2 : 0;
  }
  const selected = (names.length > 0 ? SUITES.filter((s) => names.includes(s)) : [...SUITES]) as SuiteName[];
  const machine = machineInfo();
  // A --quick smoke run never overwrites the committed figures.
  const outDir = quick ? join(RESULTS_DIR, 'quick') : RESULTS_DIR;
  mkdirSync(outDir, { recursive: true });
  const benchPath = join(outDir, 'bench.json');
  const bench: BenchFile = readBench(benchPath) ?? { machine, suites: {} };
  bench.machine = machine;
  const logs = logDir();
  const ctx: SuiteContext = {
    quick,
    machine,
    logDir: logs,
    log: (line) => process.stdout.write(`${line}\n`),
    table,
  };
  process.stdout.write(`facecompute bench on ${machine.cpu} (${machine.cores} cores, ${machine.memory_gb} GB), commit ${machine.commit}, load ${loadAverage().join(' ')}\n`);
  process.stdout.write(`No GPU here: the CUDA execution provider is not measured. facecompute runs as: ${oursEntry()}.\n`);
  let failed = 0;
  const t0 = performance.now();
  for (const name of selected) {
    process.stdout.write(`\n== ${name}\n`);
    const started = performance.now();
    const before = loadAverage();
    const entry: NonNullable<BenchFile['suites'][SuiteName]> = { ran_at: new Date().toISOString(), seconds: 0, loadavg_before: before, loadavg_after: [], commit: machine.commit, ours_entry: oursEntry() };
    try {
      const fn = await LOADERS[name]();
      entry.result = await fn(ctx);
    } catch (err) {
      failed++;
      entry.error = err instanceof Error ? err.message : String(err);
      process.stdout.write(`${name} FAILED: ${entry.error}\n`);
    }
    entry.seconds = Math.round((performance.now() - started) / 100) / 10;
    entry.loadavg_after = loadAverage();
    // A failed re-run keeps the previous figures visible next to its error.
    const prev = bench.suites[name];
    bench.suites[name] = entry.error && prev?.result ? { ...prev, error: `${entry.error} (figures are from ${prev.ran_at})` } : entry;
    writeAtomic(benchPath, `${JSON.stringify(bench, null, 1)}\n`);
    const { writeReport } = await import('./report.js');
    writeReport(bench, outDir);
    process.stdout.write(`${name}: ${entry.seconds}s, load ${before.join(' ')} -> ${entry.loadavg_after.join(' ')}\n`);
  }
  process.stdout.write(`\nwrote ${outDir}/{bench.json,summary.json,summary.md,*.svg} in ${Math.round((performance.now() - t0) / 1000)}s; service logs in ${logs}\n`);
  return failed > 0 ? 1 : 0;
}

// `node --import tsx bench/run.ts` runs it directly; `facecompute bench` imports it.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  run(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
