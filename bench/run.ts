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
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { machineInfo } from './lib/machine.js';
import { DEEPFACE_PYTHON, REPO_ROOT, RESULTS_DIR } from './lib/paths.js';
import { loadAverage, logDir, sampleLoad } from './lib/proc.js';
import type { SuiteContext } from './suites/context.js';

export const SUITES = ['ort', 'library', 'service', 'coldstart', 'memory', 'compare', 'batching', 'detectors'] as const;
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
  detectors: async () => (await import('./suites/detectors.js')).detectorsSuite,
};

/** Suites that run DeepFace itself (its venv, `npm run bench:setup`); the others run without it. */
export const DEEPFACE_SUITES: readonly SuiteName[] = ['library', 'service', 'coldstart', 'memory', 'detectors'];

export interface SuiteEntry {
  ran_at: string;
  seconds: number;
  loadavg_before: number[];
  loadavg_after: number[];
  /** The 1-minute load average sampled every 5 s while the suite ran. */
  loadavg_during?: { samples: number; min: number; max: number; mean: number } | null;
  /** The machine this suite ran on (the top-level `machine` is only the last run's). */
  machine?: ReturnType<typeof machineInfo>;
  commit: string;
  ours_entry: string;
  result?: Record<string, unknown>;
  error?: string;
}

export interface BenchFile {
  /** The machine of the most recent run; each suite records its own in `suites.<name>.machine`. */
  machine: ReturnType<typeof machineInfo>;
  suites: Partial<Record<SuiteName, SuiteEntry>>;
}

/**
 * Why the DeepFace baseline cannot run, or null when it can: the venv's Python exists and finds
 * deepface and gunicorn (found, not imported: importing TensorFlow takes seconds).
 */
export function deepFaceProblem(python: string = DEEPFACE_PYTHON): string | null {
  const fix = 'Create it with `npm run bench:setup` (DeepFace 0.0.100, TensorFlow CPU and OpenCV 4.11 from PyPI, pinned in bench/deepface/requirements.lock; about 2 minutes; it also makes the venv of DeepFace 0.0.103 on ONNX Runtime, the second baseline of the service suite, about 5 more), or set DEEPFACE_PYTHON to the Python of an existing one.';
  if (!existsSync(python)) return `The DeepFace baseline venv is missing: ${python} does not exist.\n${fix}`;
  const probe = spawnSync(python, ['-c', 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("deepface") and u.find_spec("gunicorn") else 3)'], { encoding: 'utf8', timeout: 60_000 });
  if (probe.error || probe.status !== 0) return `The DeepFace baseline venv at ${python} is not usable (${probe.error ? probe.error.message : probe.status === 3 ? 'deepface or gunicorn is not installed' : `exit ${probe.status}: ${probe.stderr.trim().slice(0, 200)}`}).\n${fix}`;
  return null;
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
  const needDeepFace = selected.filter((s) => DEEPFACE_SUITES.includes(s));
  if (needDeepFace.length > 0) {
    // Stop before anything runs or is written: a suite without its baseline has no ratio to report.
    const problem = deepFaceProblem();
    if (problem) {
      process.stderr.write(`bench: ${problem}\nSuites that need it: ${needDeepFace.join(', ')}. Without it: npm run bench -- ${SUITES.filter((s) => !DEEPFACE_SUITES.includes(s)).join(' ')}\n`);
      return 2;
    }
  }
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
    const during = sampleLoad();
    const entry: SuiteEntry = { ran_at: new Date().toISOString(), seconds: 0, loadavg_before: before, loadavg_after: [], machine, commit: machine.commit, ours_entry: oursEntry() };
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
    entry.loadavg_during = during.stop();
    // A failed re-run keeps the previous figures visible next to its error.
    const prev = bench.suites[name];
    bench.suites[name] = entry.error && prev?.result ? { ...prev, error: `${entry.error} (figures are from ${prev.ran_at})` } : entry;
    writeAtomic(benchPath, `${JSON.stringify(bench, null, 1)}\n`);
    const { writeReport } = await import('./report.js');
    writeReport(bench, outDir);
    process.stdout.write(`${name}: ${entry.seconds}s, load ${before.join(' ')} -> ${entry.loadavg_after.join(' ')} (1-min load during: ${entry.loadavg_during ? `${entry.loadavg_during.min}-${entry.loadavg_during.max}, mean ${entry.loadavg_during.mean}` : 'n/a'})\n`);
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
