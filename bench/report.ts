/**
 * Turns bench/results/bench.json into summary.json, summary.md, ort-settings.json and the SVG
 * charts. Pure: it reads only what the suites recorded, so a single-suite re-run refreshes the
 * report with the other suites' last figures (each suite says when it ran).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DetectorRow, LargeImageRow } from './suites/detectors.js';
import type { BenchFile } from './run.js';
import { barChart, lineChart } from './lib/svg.js';
import { eldLabel } from './suites/service.js';

/* The shapes the suites write (only the fields the report reads). */
interface LoadCell {
  rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Record<string, number>;
  cpu_ms_per_request: number | null;
}
interface EventLoop {
  pid: number;
  argv: string;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}
interface ServiceLevel {
  connections: number;
  ours: LoadCell;
  /** DeepFace's API, one gunicorn worker (its Dockerfile). */
  deepface: LoadCell;
  /** DeepFace's API, two gunicorn workers (one per core); absent in results older than issue 17. */
  deepface_2w?: LoadCell;
  /** DeepFace 0.0.103 (ONNX Runtime engine), one and two workers; absent before issue 41. */
  deepface103?: LoadCell;
  deepface103_2w?: LoadCell;
  event_loop: EventLoop[];
}
interface ServiceModel {
  model: string;
  levels: ServiceLevel[];
  /** Older results measured the one-worker API here; newer ones the two-worker API. */
  yunet_c16?: { ours: LoadCell; deepface?: LoadCell; deepface_2w?: LoadCell; deepface103_2w?: LoadCell } | null;
  agreement: unknown;
}
interface ServiceResult {
  /** One entry per model (issue 17); older results had one model's fields at the top level. */
  models?: ServiceModel[];
  levels?: ServiceLevel[];
  yunet_c16?: ServiceModel['yunet_c16'];
  agreement?: unknown;
  memory_after_load: { ours_peak_rss_mb: number; deepface_peak_rss_mb: number; deepface_2w_peak_rss_mb?: number };
}
interface Lat {
  p50: number;
  p99: number;
}
interface LibraryResult {
  stages?: Array<Record<string, string | number>>;
  rows: Array<{
    /** Absent in results older than issue 17 (Dlib only then). */
    model?: string;
    detector: string;
    represent_ms: { ours: Lat; deepface: Lat };
    verify_ms: { ours: Lat; deepface: Lat };
    sustained: { ours: { images_per_s: number }; ours_concurrency_4: { images_per_s: number }; deepface: { images_per_s: number } };
    ratios: Record<string, number>;
  }>;
}
interface ColdRow {
  model: string;
  ours_ready_s: number;
  ours_first_verify_s: number;
  deepface_first_verify_s: number;
  ratio: number;
}
interface ColdResult extends Partial<Omit<ColdRow, 'model'>> {
  models?: ColdRow[];
}
interface Rss {
  idle_rss_mb: number;
  peak_rss_mb: number;
}
interface MemoryRow {
  model: string;
  ours: Rss;
  deepface: Rss;
  deepface_2w?: Rss;
  /** ours / DeepFace with one worker (the smaller: the stricter comparison). */
  ratio: number;
  ratio_2w?: number;
}
interface MemoryResult {
  models?: MemoryRow[];
  ours?: Rss;
  deepface?: Rss;
  ratio?: number;
}

/** Results written before issue 17 measured Dlib only, with its fields at the top level. */
export function serviceModels(r: ServiceResult | null): ServiceModel[] {
  if (!r) return [];
  if (r.models) return r.models;
  return r.levels ? [{ model: 'Dlib', levels: r.levels, yunet_c16: r.yunet_c16 ?? null, agreement: r.agreement }] : [];
}
export function coldRows(r: ColdResult | null): ColdRow[] {
  if (!r) return [];
  if (r.models) return r.models;
  return r.ratio !== undefined ? [{ model: 'Dlib', ours_ready_s: r.ours_ready_s ?? NaN, ours_first_verify_s: r.ours_first_verify_s ?? NaN, deepface_first_verify_s: r.deepface_first_verify_s ?? NaN, ratio: r.ratio }] : [];
}
export function memoryRows(r: MemoryResult | null): MemoryRow[] {
  if (!r) return [];
  if (r.models) return r.models;
  return r.ours && r.deepface && r.ratio !== undefined ? [{ model: 'Dlib', ours: r.ours, deepface: r.deepface, ratio: r.ratio }] : [];
}
interface CompareResult {
  top_k?: number;
  rows: Array<{ n: number; sources?: number; mode: string; p50_ms: number; targets_per_s: number; body_mb: number; server_cpu_ms_per_request?: number | null }>;
  native?: { rows: Array<{ n: number; impl: string; vectors_per_s: number }> } | null;
  goals?: { binary_p50_ms: number; roofline_p50_ms: number; binary_over_roofline: number; binary_cpu_ms?: number | null; roofline_cpu_ms?: number | null; b64_over_binary: number; met: { binary_p50_le_60ms: boolean; within_2x_roofline: boolean; binary_5x_b64: boolean } } | null;
  many?: { sources: number; targets: number; top_k: number; p50_ms: number; single_requests_ms: number; speedup_vs_single_requests: number } | null;
  /** The binary gateway's CPU per binary request, its main thread against its other threads. */
  binary_gateway_threads?: Array<{ n: number; main_ms: number; others_ms: number }>;
}
interface BatchingResult {
  rps: { on: number; off: number };
  cpu_ms_per_request: { on: number; off: number };
  gain: number;
  skip_detector?: { rps: { on: number; off: number }; gain: number; cpu_ms_per_request: { on: number; off: number } };
  /** Facenet with random test weights and detector skip: inference is most of the request. */
  inference_bound?: { model: string; rps: { on: number; off: number }; gain: number; cpu_ms_per_request: { on: number; off: number } };
  cells: Record<'on' | 'off', Array<LoadCell & { event_loop: EventLoop[] }>>;
}
interface OrtResult {
  rows: Array<{ variant: string; what: string; batch: number; embeddings_per_s: number; p50_ms: number; vs_production: number; spread: number }>;
  rounds: number;
  seconds_per_cell: number;
}

/**
 * Goals per model, each ours against DeepFace measured in the same run (issues 8 and 17). The
 * service goals are against DeepFace's API with two gunicorn workers, one per core, as a user of this
 * 2-core machine would run it; the one-worker figures are reported beside them. Peak RSS is against
 * the one-worker API, the smaller of the two.
 */
export const MODEL_GOALS = {
  verify_rps_ratio_c16: { op: '>=', value: 8, text: '/verify throughput at c16 ≥ 8× DeepFace API (2 workers)' },
  verify_p50_ratio_c1: { op: '<=', value: 1 / 6, text: '/verify p50 at c1 ≤ 1/6 of DeepFace API (2 workers)' },
  cpu_per_request_ratio_c16: { op: '<=', value: 0.125, text: 'CPU per /verify at c16 ≤ 0.125 of DeepFace API (2 workers)' },
  // Issue 41: the same bars against DeepFace 0.0.103 on its ONNX Runtime engine, what a user installs today.
  verify_rps_ratio_c16_103: { op: '>=', value: 8, text: '/verify throughput at c16 ≥ 8× DeepFace 0.0.103 API (ONNX, 2 workers)' },
  cpu_per_request_ratio_c16_103: { op: '<=', value: 0.125, text: 'CPU per /verify at c16 ≤ 0.125 of DeepFace 0.0.103 API (ONNX, 2 workers)' },
  yunet_rps_ratio_c16: { op: '>=', value: 5, text: '/verify throughput at c16 with yunet ≥ 5× DeepFace API (2 workers)' },
  peak_rss_ratio: { op: '<=', value: 1, text: 'peak RSS ≤ DeepFace API (1 worker)' },
  cold_start_ratio: { op: '<=', value: 1 / 5, text: 'cold start ≤ 1/5 of DeepFace' },
} as const;
export type ModelGoal = keyof typeof MODEL_GOALS;
const GOALS = {
  // Not one of the issues' goals: our own target, after InsightFace-REST's batch-64 figure.
  batching_gain_c16: { op: '>=', value: 1.5, text: 'batching gain at c16 ≥ 1.5× (own target, not an issue goal; needs inference-bound requests, e.g. a GPU)' },
} as const;
type GoalName = keyof typeof GOALS;

type Goal = { op: '>=' | '<='; value: number };
export function goalMet(g: Goal, v: number | null | undefined): boolean | null {
  if (v === null || v === undefined || !Number.isFinite(v)) return null;
  return g.op === '>=' ? v >= g.value : v <= g.value;
}

const ratio = (a: number | null | undefined, b: number | null | undefined): number | null => (a === null || a === undefined || b === null || b === undefined || !(b > 0) || !Number.isFinite(a) ? null : a / b);

/** Every per-model ratio, against both DeepFace API configurations where the suite ran both. */
export function modelRatios(model: string, r: { service: ServiceResult | null; library: LibraryResult | null; cold: ColdResult | null; memory: MemoryResult | null }): Record<string, number | null> & Record<ModelGoal, number | null> {
  const sm = serviceModels(r.service).find((m) => m.model === model);
  const level = (c: number) => sm?.levels.find((l) => l.connections === c);
  const l1 = level(1);
  const l16 = level(16);
  const cold = coldRows(r.cold).find((x) => x.model === model);
  const mem = memoryRows(r.memory).find((x) => x.model === model);
  return {
    verify_rps_ratio_c16: ratio(l16?.ours.rps, l16?.deepface_2w?.rps),
    verify_p50_ratio_c1: ratio(l1?.ours.p50_ms, l1?.deepface_2w?.p50_ms),
    cpu_per_request_ratio_c16: ratio(l16?.ours.cpu_ms_per_request, l16?.deepface_2w?.cpu_ms_per_request),
    verify_rps_ratio_c16_103: ratio(l16?.ours.rps, l16?.deepface103_2w?.rps),
    cpu_per_request_ratio_c16_103: ratio(l16?.ours.cpu_ms_per_request, l16?.deepface103_2w?.cpu_ms_per_request),
    yunet_rps_ratio_c16: ratio(sm?.yunet_c16?.ours.rps, sm?.yunet_c16?.deepface_2w?.rps),
    peak_rss_ratio: mem ? mem.ratio : null,
    cold_start_ratio: cold ? cold.ratio : null,
    verify_rps_ratio_c16_103_1w: ratio(l16?.ours.rps, l16?.deepface103?.rps),
    verify_p50_ratio_c1_103: ratio(l1?.ours.p50_ms, l1?.deepface103_2w?.p50_ms),
    yunet_rps_ratio_c16_103: ratio(sm?.yunet_c16?.ours.rps, sm?.yunet_c16?.deepface103_2w?.rps),
    verify_rps_ratio_c16_1w: ratio(l16?.ours.rps, l16?.deepface.rps),
    verify_p50_ratio_c1_1w: ratio(l1?.ours.p50_ms, l1?.deepface.p50_ms),
    cpu_per_request_ratio_c16_1w: ratio(l16?.ours.cpu_ms_per_request, l16?.deepface.cpu_ms_per_request),
    peak_rss_ratio_2w: mem?.ratio_2w ?? null,
    verify_rps_ratio_c1_2w: ratio(level(1)?.ours.rps, level(1)?.deepface_2w?.rps),
    verify_rps_ratio_c4_2w: ratio(level(4)?.ours.rps, level(4)?.deepface_2w?.rps),
    deepface_2w_over_1w_rps_c16: ratio(l16?.deepface_2w?.rps, l16?.deepface.rps),
  };
}

/** The models any of the per-model suites measured, Dlib first. */
export function reportModels(r: { service: ServiceResult | null; library: LibraryResult | null; cold: ColdResult | null; memory: MemoryResult | null }): string[] {
  const seen = new Set<string>([...serviceModels(r.service).map((m) => m.model), ...(r.library?.rows.map((x) => x.model ?? 'Dlib') ?? []), ...coldRows(r.cold).map((x) => x.model), ...memoryRows(r.memory).map((x) => x.model)]);
  return [...seen].sort((a, b) => (a === 'Dlib' ? -1 : b === 'Dlib' ? 1 : a.localeCompare(b)));
}

function result<T>(b: BenchFile, name: keyof BenchFile['suites']): T | null {
  return (b.suites[name]?.result as T | undefined) ?? null;
}

const r2 = (x: number | null | undefined, d = 2): number | null => (x === null || x === undefined || !Number.isFinite(x) ? null : Math.round(x * 10 ** d) / 10 ** d);
const fx = (x: number | null | undefined, d = 2): string => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(d));

/**
 * Where our CPU per /verify goes, for "where we lose": the service suite's CPU ms per request at c16
 * set against the library suite's in-process stage CPU for the same two images (img5 + img6) and
 * model, with the opencv detector. What the stages do not cover is the HTTP and service overhead.
 */
export function cpuSplit(sm: ServiceModel, stages: Array<Record<string, string | number>>): string[] {
  const l16 = sm.levels.find((l) => l.connections === 16);
  const ours = l16?.ours.cpu_ms_per_request;
  const d2 = l16?.deepface_2w?.cpu_ms_per_request ?? l16?.deepface.cpu_ms_per_request;
  const rows = stages.filter((r) => (r['model'] ?? 'Dlib') === sm.model && r['detector'] === 'opencv' && (r['image'] === 'img5.jpg' || r['image'] === 'img6.jpg'));
  if (!ours || rows.length !== 2) return [];
  const sum = (k: string) => rows.reduce((a, r) => a + (typeof r[k] === 'number' ? (r[k] as number) : NaN), 0);
  const detect = sum('detect_cpu_ms');
  const embed = sum('embed_cpu_ms');
  const haarDf = sum('opencv_haar_ms');
  const haarDfCpu = sum('opencv_haar_cpu_ms');
  if (!Number.isFinite(detect) || !Number.isFinite(embed)) return [];
  const pct = (x: number) => `${Math.round((x / ours) * 100)}%`;
  const rest = Math.max(0, ours - detect - embed);
  return [
    `- Where our CPU goes, ${sm.model}: ${fx(ours, 0)} CPU ms per /verify at c16 (DeepFace ${fx(d2, 0)}). In-process, the Haar scan of the two images takes ${fx(detect, 0)} CPU ms (${pct(detect)}), the ${sm.model} network ${fx(embed, 0)} ms (${pct(embed)}); the remaining ${fx(rest, 0)} ms (${pct(rest)}) is decoding, alignment, base64 and JSON, HTTP and the hop to the model server. OpenCV's own cascade, which DeepFace runs, takes ${Number.isFinite(haarDfCpu) ? `${fx(haarDfCpu, 0)} CPU ms` : `${fx(haarDf, 0)} ms (wall)`} on the same two bordered images.`,
  ];
}

/** The perf profile bench/profile/verify-perf.ts left beside the results, if any, in one line. */
export function perfLine(dir: string, model: string): string[] {
  const path = join(dir, `profile-verify-${model}-opencv.json`);
  if (!existsSync(path)) return [];
  try {
    const p = JSON.parse(readFileSync(path, 'utf8')) as { ran_at: string; connections: number; loadavg: string; shares: Record<string, number> };
    const sorted = Object.entries(p.shares).sort((a, b) => b[1] - a[1]);
    const parts = sorted.filter(([, v]) => v >= 1).map(([k, v]) => `${k} ${v}%`);
    const top = sorted[0]?.[0];
    const verdict = top === 'haar' ? 'The Haar scan is the largest share: the next CPU gain must come from it.' : `The largest share is ${top}.`;
    return [`- Profiled, ${model}: \`perf record\` of our gateway and model server under /verify ${model} opencv at c${p.connections} (\`node --import tsx bench/profile/verify-perf.ts --model ${model}\`, ${p.ran_at.slice(0, 16).replace('T', ' ')} UTC, load ${p.loadavg.split(' ')[0]}): ${parts.join(', ')} of all samples. ${verdict}`];
  } catch {
    return [];
  }
}

export function writeReport(b: BenchFile, dir: string): void {
  const service = result<ServiceResult>(b, 'service');
  const library = result<LibraryResult>(b, 'library');
  const cold = result<ColdResult>(b, 'coldstart');
  const memory = result<MemoryResult>(b, 'memory');
  const compare = result<CompareResult>(b, 'compare');
  const batching = result<BatchingResult>(b, 'batching');
  const ortR = result<OrtResult>(b, 'ort');
  const detectors = result<{ images: string[]; rows: DetectorRow[]; large_image?: LargeImageRow[] }>(b, 'detectors');
  const per = { service, library, cold, memory };
  const models = reportModels(per);
  const byModel = Object.fromEntries(models.map((m) => [m, modelRatios(m, per)]));
  const ratios: Record<GoalName, number | null> = { batching_gain_c16: batching ? batching.gain : null };
  const met = (k: GoalName): boolean | null => goalMet(GOALS[k], ratios[k]);
  const summary = {
    commit: b.machine.commit,
    cpu: b.machine.cpu,
    cores: b.machine.cores,
    memory_gb: b.machine.memory_gb,
    node: b.machine.node,
    date: b.machine.date,
    // Which SIMD kernels ran (absent in results from before issue 41).
    simd: b.machine.simd ?? 'not recorded',
    gpu: 'none: the CUDA execution provider is not measured',
    // Issue 17: the per-model ratios, ours over DeepFace (throughput: ours / DeepFace, so > 1 is
    // better for us; latency, CPU, memory and start time: ours / DeepFace, so < 1 is better).
    models: Object.fromEntries(
      models.map((m) => [
        m,
        {
          ...Object.fromEntries(Object.entries(byModel[m] ?? {}).map(([k, v]) => [k, r2(v, 3)])),
          library_verify_p50_speedup: library ? Object.fromEntries(library.rows.filter((r) => (r.model ?? 'Dlib') === m).map((r) => [r.detector, r2(r.ratios['verify_p50_speedup'])])) : null,
          library_represent_p50_speedup: library ? Object.fromEntries(library.rows.filter((r) => (r.model ?? 'Dlib') === m).map((r) => [r.detector, r2(r.ratios['represent_p50_speedup'])])) : null,
          goals: Object.fromEntries((Object.keys(MODEL_GOALS) as ModelGoal[]).map((k) => [k, { goal: MODEL_GOALS[k].text, met: goalMet(MODEL_GOALS[k], byModel[m]?.[k]) }])),
        },
      ]),
    ),
    ...Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, r2(v, 3)])),
    goals: Object.fromEntries((Object.keys(GOALS) as GoalName[]).map((k) => [k, { goal: GOALS[k].text, met: met(k) }])),
    extra: {
      batching_gain_c16_skip: batching?.skip_detector ? r2(batching.skip_detector.gain) : null,
      batching_gain_c16_facenet_test_weights_skip: batching?.inference_bound ? r2(batching.inference_bound.gain) : null,
    },
    // Issue 17: /compare over HTTP at 100,000 × 128, top_k 10 (bench/suites/compare.ts).
    compare: compare?.goals
      ? {
          binary_p50_ms: r2(compare.goals.binary_p50_ms, 1),
          roofline_p50_ms: r2(compare.goals.roofline_p50_ms, 1),
          binary_over_roofline: r2(compare.goals.binary_over_roofline),
          b64_over_binary: r2(compare.goals.b64_over_binary),
          many_to_many_speedup_vs_single_requests: compare.many ? r2(compare.many.speedup_vs_single_requests, 1) : null,
          goals: {
            binary_p50_le_60ms: { goal: 'binary targets, 100,000 × 128, top_k 10: p50 ≤ 60 ms on 2 cores', met: compare.goals.met.binary_p50_le_60ms },
            within_2x_roofline: { goal: 'that p50 ≤ 2× the roofline (same bytes to a read-and-discard endpoint)', met: compare.goals.met.within_2x_roofline },
            binary_5x_b64: { goal: 'binary targets ≥ 5× faster than targets_b64', met: compare.goals.met.binary_5x_b64 },
          },
        }
      : null,
    suites_ran_at: Object.fromEntries(Object.entries(b.suites).map(([k, v]) => [k, { ran_at: v?.ran_at, commit: v?.commit, cpu: v?.machine?.cpu ?? null, loadavg_before: v?.loadavg_before, loadavg_during: v?.loadavg_during ?? null, error: v?.error ?? null }])),
  };
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 1)}\n`);

  if (ortR) {
    writeFileSync(
      join(dir, 'ort-settings.json'),
      `${JSON.stringify({ machine: b.suites.ort?.machine ?? 'not recorded (before per-suite machines)', ran_at: b.suites.ort?.ran_at, loadavg_before: b.suites.ort?.loadavg_before, model: 'Dlib', rounds: ortR.rounds, seconds_per_cell: ortR.seconds_per_cell, rows: ortR.rows.map((r) => ({ ...r, embeddings_per_s: r2(r.embeddings_per_s, 1), p50_ms: r2(r.p50_ms, 1), vs_production: r2(r.vs_production), spread: r2(r.spread) })) }, null, 1)}\n`,
    );
  }

  writeCharts(dir, { service, library, cold, memory, compare, batching, ortR });

  // summary.md
  const md: string[] = [];
  md.push('# facecompute vs DeepFace 0.0.100: benchmark summary', '');
  // Each suite records its own machine: a single-suite re-run elsewhere must not relabel the others.
  const machines = [...new Set(Object.values(b.suites).map((v) => v?.machine?.cpu ?? null))];
  if (machines.length <= 1) md.push(`Machine: ${machines[0] ?? b.machine.cpu}, ${b.machine.cores} cores, ${b.machine.memory_gb} GB, Node ${b.machine.node}; no GPU (the CUDA path is not measured). Commits per suite below.`);
  else md.push(`Machines: the suites ran on different machines (${machines.map((m) => m ?? 'not recorded').join('; ')}); see the table below. No GPU (the CUDA path is not measured).`);
  md.push('The machine was shared with other builds while this ran; every ratio compares sides measured in the same run, interleaved, and CPU time per request is given next to wall-clock figures because it moves much less with load.', '');
  md.push('| suite | ran at (UTC) | commit | machine | load (1 min) before → after | during: min–max (mean) | seconds | SIMD kernels (Haar / compare) |', '|---|---|---|---|---|---|---|---|');
  for (const [k, v] of Object.entries(b.suites)) {
    if (!v) continue;
    const d = v.loadavg_during;
    const simd = v.machine?.simd;
    const kernels = simd ? `${simd.haar} / ${simd.compare}${simd.forced ? ` (FACECOMPUTE_SIMD=${simd.forced})` : ''}` : 'not recorded';
    md.push(`| ${k} | ${v.ran_at.slice(0, 16).replace('T', ' ')} | ${v.commit} | ${v.machine ? `${v.machine.cpu}, ${v.machine.cores} cores` : 'not recorded'} | ${v.loadavg_before[0] ?? '?'} → ${v.loadavg_after[0] ?? '?'} | ${d ? `${d.min}–${d.max} (${d.mean})` : 'not recorded'} | ${v.seconds} | ${kernels} |`);
  }
  md.push('');
  const yesNo = (m: boolean | null) => (m === null ? 'not measured' : m ? 'met' : '**not met**');
  md.push('## Goals', '', 'Each ours against DeepFace in the same run. "DeepFace API (2 workers)": its Flask API under gunicorn with one sync worker per core, as a user of this 2-core machine would run it; its Dockerfile runs one (the "1 worker" figures beside).', '');
  md.push('| Goal | Model | Measured (ours / DeepFace) | vs 1 worker | Met |', '|---|---|---|---|---|');
  const oneWorker: Partial<Record<ModelGoal, string>> = { verify_rps_ratio_c16: 'verify_rps_ratio_c16_1w', verify_p50_ratio_c1: 'verify_p50_ratio_c1_1w', cpu_per_request_ratio_c16: 'cpu_per_request_ratio_c16_1w', verify_rps_ratio_c16_103: 'verify_rps_ratio_c16_103_1w' };
  for (const k of Object.keys(MODEL_GOALS) as ModelGoal[]) {
    for (const m of models) {
      const v = byModel[m]?.[k];
      const alt = oneWorker[k] ? byModel[m]?.[oneWorker[k] as string] : k === 'peak_rss_ratio' ? null : undefined;
      md.push(`| ${MODEL_GOALS[k].text} | ${m} | \`${k}\` = ${fx(v, 3)} | ${alt === undefined ? '-' : k === 'peak_rss_ratio' ? `(2 workers: ${fx(byModel[m]?.['peak_rss_ratio_2w'], 3)})` : fx(alt, 3)} | ${yesNo(goalMet(MODEL_GOALS[k], v))} |`);
    }
  }
  for (const k of Object.keys(GOALS) as GoalName[]) md.push(`| ${GOALS[k].text} | - | \`${k}\` = ${fx(ratios[k], 3)} | - | ${yesNo(met(k))} |`);
  md.push('');
  for (const sm of serviceModels(service)) {
    const two = sm.levels.some((l) => l.deepface_2w);
    md.push(`## Service level: POST /verify (${sm.model}, opencv, img5.jpg + img6.jpg as base64 data URIs)`, '');
    md.push('DeepFace 0.0.100 (TensorFlow) and, in the last columns, DeepFace 0.0.103 (ONNX Runtime engine; for Facenet it runs our converted Facenet ONNX as its stand-in facenet_weights.onnx, the same Keras weights), each API under gunicorn with 1 and 2 workers, in the same run.', '');
    md.push('| c | ours req/s | DeepFace req/s 1 / 2 workers | × 1w / 2w | ours p50 / p99 ms | DeepFace 1w p50 / p99 ms | DeepFace 2w p50 / p99 ms | CPU ms/req ours / 1w / 2w | errors ours / 1w / 2w | 0.0.103 req/s 1 / 2 workers | × 1w / 2w | 0.0.103 2w p50 / p99 ms | 0.0.103 CPU ms/req 1w / 2w |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const l of sm.levels) {
      const d2 = l.deepface_2w;
      const [n1, n2] = [l.deepface103, l.deepface103_2w];
      const errs = (c: LoadCell | undefined) => (c ? String(c.non2xx + c.errors + c.timeouts) : '-');
      md.push(`| ${l.connections} | ${fx(l.ours.rps)} | ${fx(l.deepface.rps)} / ${fx(d2?.rps)} | ${fx(l.ours.rps / l.deepface.rps, 1)} / ${fx(ratio(l.ours.rps, d2?.rps), 1)} | ${fx(l.ours.p50_ms, 0)} / ${fx(l.ours.p99_ms, 0)} | ${fx(l.deepface.p50_ms, 0)} / ${fx(l.deepface.p99_ms, 0)} | ${fx(d2?.p50_ms, 0)} / ${fx(d2?.p99_ms, 0)} | ${fx(l.ours.cpu_ms_per_request, 0)} / ${fx(l.deepface.cpu_ms_per_request, 0)} / ${fx(d2?.cpu_ms_per_request, 0)} | ${errs(l.ours)} / ${errs(l.deepface)} / ${errs(d2)} | ${fx(n1?.rps)} / ${fx(n2?.rps)} | ${fx(ratio(l.ours.rps, n1?.rps), 1)} / ${fx(ratio(l.ours.rps, n2?.rps), 1)} | ${fx(n2?.p50_ms, 0)} / ${fx(n2?.p99_ms, 0)} | ${fx(n1?.cpu_ms_per_request, 0)} / ${fx(n2?.cpu_ms_per_request, 0)} |`);
    }
    if (!sm.levels.some((l) => l.deepface103_2w)) md.push('', '(No DeepFace 0.0.103 baseline in this run: `npm run bench:setup` makes its venv, .venvs/deepface-0.0.103.)');
    if (!two) md.push('', '(This run predates the two-worker baseline: re-run `npm run bench -- service`.)');
    const y = sm.yunet_c16;
    const yd = y?.deepface_2w ?? y?.deepface;
    if (y && yd) md.push('', `Same pair with the yunet detector at c16: ours ${fx(y.ours.rps)} req/s (p50 ${fx(y.ours.p50_ms, 0)} ms, ${fx(y.ours.cpu_ms_per_request, 0)} CPU ms/req) vs DeepFace's API with ${y.deepface_2w ? '2 workers' : '1 worker'} ${fx(yd.rps)} req/s (p50 ${fx(yd.p50_ms, 0)} ms, ${fx(yd.cpu_ms_per_request, 0)} CPU ms/req): ${fx(ratio(y.ours.rps, yd.rps), 1)}×${y.deepface103_2w ? `; DeepFace 0.0.103 with 2 workers ${fx(y.deepface103_2w.rps)} req/s (${fx(y.deepface103_2w.cpu_ms_per_request, 0)} CPU ms/req): ${fx(ratio(y.ours.rps, y.deepface103_2w.rps), 1)}×` : ''}.`);
    const eld = sm.levels.flatMap((l) => l.event_loop.map((e) => `| ${l.connections} | ${eldLabel(e.argv)} | ${e.p50_ms} | ${e.p99_ms} | ${e.max_ms} |`));
    if (eld.length) md.push('', 'Event-loop delay during each load (perf_hooks.monitorEventLoopDelay beyond its 5 ms sampling period; the idle Node process shows what the busy machine alone adds):', '', '| c | process | p50 ms | p99 ms | max ms |', '|---|---|---|---|---|', ...eld);
    md.push('');
  }
  if (service) {
    const m = service.memory_after_load;
    md.push(`Peak RSS of the service suite's processes after all of its load: ours ${fx(m.ours_peak_rss_mb, 0)} MB, DeepFace 1 worker ${fx(m.deepface_peak_rss_mb, 0)} MB${m.deepface_2w_peak_rss_mb !== undefined ? `, 2 workers ${fx(m.deepface_2w_peak_rss_mb, 0)} MB` : ''} (every measured model loaded on each side).`, '');
  }
  if (library) {
    md.push('## Library level (in-process pipeline vs DeepFace as a library)', '', '| model | detector | represent p50 ms ours / DeepFace | × | verify p50 ms ours / DeepFace | × | images/s ours c1 / c4 / DeepFace |', '|---|---|---|---|---|---|---|');
    for (const r of library.rows) {
      md.push(`| ${r.model ?? 'Dlib'} | ${r.detector} | ${fx(r.represent_ms.ours.p50, 0)} / ${fx(r.represent_ms.deepface.p50, 0)} | ${fx(r.ratios['represent_p50_speedup'], 1)} | ${fx(r.verify_ms.ours.p50, 0)} / ${fx(r.verify_ms.deepface.p50, 0)} | ${fx(r.ratios['verify_p50_speedup'], 1)} | ${fx(r.sustained.ours.images_per_s)} / ${fx(r.sustained.ours_concurrency_4.images_per_s)} / ${fx(r.sustained.deepface.images_per_s)} |`);
    }
    md.push('');
  }
  if (detectors) {
    md.push(`## Detectors: DeepFace's MTCNN backends (extract_faces per image, ${detectors.images.length} DeepFace images, in process vs DeepFace as a library)`, '', '| detector | ms/image ours / DeepFace | × | CPU ms/image ours / DeepFace | × | faces ours / DeepFace |', '|---|---|---|---|---|---|');
    for (const r of detectors.rows) {
      md.push(r.deepface ? `| ${r.detector} | ${fx(r.ours.ms_per_image, 0)} / ${fx(r.deepface.ms_per_image, 0)} | ${fx(r.speedup, 1)} | ${fx(r.ours.cpu_ms_per_image, 0)} / ${fx(r.deepface.cpu_ms_per_image, 0)} | ${fx(r.cpu_ratio, 1)} | ${r.ours.faces} / ${r.deepface.faces} |` : `| ${r.detector} | ${fx(r.ours.ms_per_image, 0)} / - | - | - | - | ${r.skipped ?? 'no baseline'} |`);
    }
    md.push('');
    if (detectors.large_image?.length) {
      md.push('One large image (DeepFace\'s img40 scaled, on the align border), peak resident memory of a fresh process with the run limits (PNet in bands, RNet and ONet in batches) and with them lifted:', '', '| detector | image | peak RSS MiB, limits / lifted | × | seconds, limits / lifted |', '|---|---|---|---|---|');
      for (const r of detectors.large_image) md.push(`| ${r.detector} | ${r.width}x${r.height} | ${fx(r.served.peak_rss_mib, 0)} / ${fx(r.whole.peak_rss_mib, 0)} | ${fx(r.peak_ratio, 2)} | ${fx(r.served.seconds[0], 1)} / ${fx(r.whole.seconds[0], 1)} |`);
      md.push('');
    }
  }
  if (library?.stages?.length) {
    md.push('Where one of our requests spends its time (median ms per stage, in-process; "CPU" columns: the process\'s CPU time over the stage, every thread; "OpenCV haar" is cv2 detectMultiScale on the same bordered image, what DeepFace runs, wall and CPU):', '', '| model | detector | image | size | decode | border | detect | detect CPU | OpenCV haar | OpenCV haar CPU | extract_faces | to_tensor | embed | embed CPU |', '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of library.stages) md.push(`| ${r['model'] ?? 'Dlib'} | ${['detector', 'image', 'size', 'decode_ms', 'border_ms', 'detect_ms', 'detect_cpu_ms', 'opencv_haar_ms', 'opencv_haar_cpu_ms', 'extract_faces_ms', 'to_tensor_ms', 'embed_ms', 'embed_cpu_ms'].map((k) => (r[k] === undefined || r[k] === null ? '-' : r[k])).join(' | ')} |`);
    md.push('');
  }
  const colds = coldRows(cold);
  const mems = memoryRows(memory);
  if (colds.length || mems.length) {
    md.push('## Cold start and memory (each side serving the one model measured)', '');
    for (const c of colds) md.push(`- Cold start, ${c.model} (facecompute run as ${b.suites.coldstart?.ours_entry ?? 'unknown'}): ours ${fx(c.ours_ready_s, 1)} s to /readiness 200 (${fx(c.ours_first_verify_s, 1)} s to the first verify answered), DeepFace ${fx(c.deepface_first_verify_s, 1)} s to the first verify answered: ratio ${fx(c.ratio, 3)}.`);
    for (const m of mems) md.push(`- Peak RSS after /verify at c4, ${m.model}: ours ${fx(m.ours.peak_rss_mb, 0)} MB (gateway + model server), DeepFace ${fx(m.deepface.peak_rss_mb, 0)} MB with 1 worker${m.deepface_2w ? `, ${fx(m.deepface_2w.peak_rss_mb, 0)} MB with 2` : ''} (gunicorn master + workers): ratio ${fx(m.ratio)}${m.ratio_2w !== undefined ? ` (${fx(m.ratio_2w)} against 2 workers)` : ''}. Idle: ${fx(m.ours.idle_rss_mb, 0)} vs ${fx(m.deepface.idle_rss_mb, 0)} MB.`);
    md.push('');
  }
  if (batching) {
    md.push('## Cross-request micro-batching', '', `/verify at c16: ${fx(batching.rps.on)} req/s with batching (window 1 ms, max 32) vs ${fx(batching.rps.off)} without: gain ${fx(batching.gain)}×; CPU ms per request ${fx(batching.cpu_ms_per_request.on, 0)} vs ${fx(batching.cpu_ms_per_request.off, 0)}.`, '');
    const sk = batching.skip_detector;
    if (sk) md.push(`The same pair with detector skip (no Haar scan; decode, tensor and Dlib are what is left): ${fx(sk.rps.on)} vs ${fx(sk.rps.off)} req/s, gain ${fx(sk.gain)}×; CPU ms per request ${fx(sk.cpu_ms_per_request.on, 0)} vs ${fx(sk.cpu_ms_per_request.off, 0)}.`, '');
    const ib = batching.inference_bound;
    if (ib) md.push(`Where inference is most of a request — ${ib.model}, detector skip, the same pair (the run's cost does not depend on the weights' values; no real Facenet weights here): ${fx(ib.rps.on)} vs ${fx(ib.rps.off)} req/s, gain ${fx(ib.gain)}×; CPU ms per request ${fx(ib.cpu_ms_per_request.on, 0)} vs ${fx(ib.cpu_ms_per_request.off, 0)}.`, '');
  }
  if (compare) {
    md.push(`## /compare over HTTP (128-d, cosine, top_k ${compare.top_k ?? 1})`, '', '| targets | sources | encoding | body MB | p50 ms | targets/s | server CPU ms/request |', '|---|---|---|---|---|---|---|');
    for (const r of compare.rows) md.push(`| ${r.n} | ${r.sources ?? 1} | ${r.mode} | ${r.body_mb} | ${fx(r.p50_ms, 1)} | ${r.targets_per_s.toExponential(2)} | ${typeof r.server_cpu_ms_per_request === 'number' ? fx(r.server_cpu_ms_per_request, 0) : '-'} |`);
    const g = compare.goals;
    if (g) {
      const yes = (x: boolean) => (x ? 'met' : '**not met**');
      md.push('', '`roofline`: the same multipart bytes posted to an endpoint that only reads and discards them (a bare node:http server), interleaved with `binary`. `binary` and many-to-many run on one gateway, `b64` and `json` on a second one, so that the text encodings\' garbage is not collected during binary requests. CPU per request is that of the serving process tree (10 ms ticks averaged).', '');
      md.push(`- binary targets, 100,000 × 128, top_k 10: p50 ${fx(g.binary_p50_ms, 1)} ms (goal ≤ 60 ms on 2 cores): ${yes(g.met.binary_p50_le_60ms)}`);
      md.push(`- against the roofline (${fx(g.roofline_p50_ms, 1)} ms): ${fx(g.binary_over_roofline)}× (goal ≤ 2×): ${yes(g.met.within_2x_roofline)}${g.binary_cpu_ms && g.roofline_cpu_ms ? `; server CPU per request ${fx(g.binary_cpu_ms, 0)} vs ${fx(g.roofline_cpu_ms, 0)} ms (${fx(g.binary_cpu_ms / g.roofline_cpu_ms)}×), which moves less with the machine's load` : ''}`);
      md.push(`- targets_b64 / binary: ${fx(g.b64_over_binary, 1)}× (goal ≥ 5×): ${yes(g.met.binary_5x_b64)}`);
    }
    const split = compare.binary_gateway_threads?.find((x) => x.n === 100_000);
    if (split) md.push(`- where the binary gateway's CPU goes at 100,000 targets: ${fx(split.main_ms, 0)} ms per request on its main thread (node:http's reading and copying of the body's 64 KiB chunks, then per chunk the native delimiter search and the scoring of its rows, auth, the answer) and ${fx(split.others_ms, 0)} ms on its other threads (V8's garbage-collector workers; on the buffered path also the kernel's half on the libuv pool)`);
    if (compare.many) md.push(`- many-to-many: ${compare.many.sources} sources × ${compare.many.targets} targets in one request, p50 ${fx(compare.many.p50_ms, 0)} ms, against ${fx(compare.many.single_requests_ms, 0)} ms for ${compare.many.sources} single-source requests (${fx(compare.many.speedup_vs_single_requests, 1)}×)`);
    if (compare.native?.rows.length) md.push('', `Native kernel (bench/results/compare.json): ${compare.native.rows.map((r) => `${r.impl} n=${r.n}: ${r.vectors_per_s.toExponential(2)}/s`).join('; ')}.`);
    md.push('');
  }
  if (ortR) {
    md.push('## ONNX Runtime settings (Dlib; embeddings/s relative to the production setting, same rounds)', '', '| variant | batch 1 | batch 8 |', '|---|---|---|');
    const variants = [...new Set(ortR.rows.map((r) => r.variant))];
    for (const v of variants) {
      const at = (bt: number) => ortR.rows.find((r) => r.variant === v && r.batch === bt);
      md.push(`| ${v} (${at(1)?.what ?? ''}) | ${fx(at(1)?.embeddings_per_s, 1)}/s (${fx(at(1)?.vs_production)}×) | ${fx(at(8)?.embeddings_per_s, 1)}/s (${fx(at(8)?.vs_production)}×) |`);
    }
    md.push('');
  }
  md.push('## Where we lose', '');
  const losses: string[] = [];
  for (const k of Object.keys(GOALS) as GoalName[]) if (met(k) === false) losses.push(`- Goal missed: ${GOALS[k].text} (measured ${fx(ratios[k], 3)}).`);
  for (const m of models) {
    for (const k of Object.keys(MODEL_GOALS) as ModelGoal[]) if (goalMet(MODEL_GOALS[k], byModel[m]?.[k]) === false) losses.push(`- Goal missed, ${m}: ${MODEL_GOALS[k].text} (measured ${fx(byModel[m]?.[k], 3)}).`);
  }
  for (const sm of serviceModels(service)) {
    for (const l of sm.levels) {
      for (const [name, d] of [['1 worker', l.deepface], ['2 workers', l.deepface_2w]] as const) if (d && l.ours.rps < d.rps) losses.push(`- /verify ${sm.model} c${l.connections}: DeepFace's API with ${name} served more requests per second (${fx(d.rps)} vs ${fx(l.ours.rps)}).`);
      if (l.ours.non2xx + l.ours.errors + l.ours.timeouts > 0) losses.push(`- /verify ${sm.model} c${l.connections}: ${l.ours.non2xx} non-2xx (${JSON.stringify(l.ours.statuses)}) and ${l.ours.errors + l.ours.timeouts} errors/timeouts on our side.`);
    }
    losses.push(...cpuSplit(sm, library?.stages ?? []));
    losses.push(...perfLine(dir, sm.model));
  }
  if (library) for (const r of library.rows) for (const [k, v] of Object.entries(r.ratios)) if (v < 1) losses.push(`- library ${r.model ?? 'Dlib'} ${r.detector}: ${k} = ${fx(v)} (DeepFace faster).`);
  if (ortR) for (const r of ortR.rows) if (r.variant !== 'production' && r.vs_production > 1.1) losses.push(`- ONNX Runtime: \`${r.variant}\` beat the production setting by ${fx(r.vs_production)}× at batch ${r.batch} (${r.what}) on this run.`);
  // Causes, from the stage breakdown and the event-loop figures.
  const stageSum = (r: Record<string, string | number>) => ['decode_ms', 'border_ms', 'detect_ms', 'extract_faces_ms', 'to_tensor_ms', 'embed_ms'].reduce((a, k) => a + (typeof r[k] === 'number' ? (r[k] as number) : 0), 0);
  // The detector's stages do not depend on the model: one model's rows say it.
  const firstModel = library?.stages?.[0]?.['model'];
  for (const r of (library?.stages ?? []).filter((x) => x['model'] === firstModel)) {
    const total = stageSum(r);
    const cpuTotal = Object.entries(r).reduce((acc, [k, v]) => acc + (k.endsWith('_cpu_ms') && !k.startsWith('opencv_') && typeof v === 'number' ? v : 0), 0);
    if (r['detector'] === 'opencv' && typeof r['detect_cpu_ms'] === 'number' && cpuTotal > 0) {
      // CPU time, not wall: on a busy machine a stage's wall time is mostly waiting for a core.
      losses.push(`- Cause: with opencv the Haar cascade is ${Math.round(((r['detect_cpu_ms'] as number) / cpuTotal) * 100)}% of our in-process CPU on ${r['image']} (${r['detect_cpu_ms']} CPU ms, ${r['detect_ms']} ms wall; OpenCV's own cascade on the same bordered image: ${typeof r['opencv_haar_cpu_ms'] === 'number' && Number.isFinite(r['opencv_haar_cpu_ms']) ? `${r['opencv_haar_cpu_ms']} CPU ms, ` : ''}${r['opencv_haar_ms']} ms wall). DeepFace pays the same scan, so the end-to-end ratio is bounded by it.`);
    } else if (r['detector'] === 'opencv' && typeof r['detect_ms'] === 'number' && total > 0) {
      losses.push(`- Cause: with opencv the Haar cascade is ${Math.round(((r['detect_ms'] as number) / total) * 100)}% of our time on ${r['image']} (${r['detect_ms']} ms; OpenCV's own cascade on the same bordered image: ${r['opencv_haar_ms']} ms). DeepFace pays the same scan, so the end-to-end ratio is bounded by it.`);
    }
    if (r['detector'] === 'yunet' && typeof r['extract_faces_ms'] === 'number' && total > 0 && (r['extract_faces_ms'] as number) / total > 0.3) {
      losses.push(`- Cause: with yunet, extract_faces (OpenCV's bicubic rotation of each face's crop, as DeepFace aligns) is ${Math.round(((r['extract_faces_ms'] as number) / total) * 100)}% of our time on ${r['image']} (${r['extract_faces_ms']} ms).`);
    }
  }
  if (service) {
    const all = serviceModels(service).flatMap((m) => m.levels);
    const ms = all.flatMap((l) => l.event_loop.filter((e) => e.argv.includes('model-server')).map((e) => e.p99_ms));
    const base = all.flatMap((l) => l.event_loop.filter((e) => e.argv === '').map((e) => e.p99_ms));
    if (ms.length && Math.max(...ms) > 3 * Math.max(1, ...base)) {
      losses.push(`- The model server's JS thread is not entirely free under load: event-loop delay p99 up to ${Math.max(...ms)} ms (idle Node on the same machine: ${Math.max(...base)} ms). ONNX Runtime runs on the inference worker thread, so what remains is V8's full collections, started by the external memory of decoded images (DeepFace's align border is a padded view built inside native calls, which cut them from 66 to 24 per 10 s at c16; --trace-gc), and waiting for a core while the Haar scan and ONNX Runtime keep both busy.`);
    }
  }
  if (compare) {
    const j = compare.rows.find((r) => r.n === 100_000 && r.mode === 'json');
    const b64 = compare.rows.find((r) => r.n === 100_000 && r.mode === 'b64');
    if (j && b64) losses.push(`- /compare with JSON bodies is bound by parsing, not by the kernel: 100k targets take ${fx(j.p50_ms, 0)} ms as JSON arrays and ${fx(b64.p50_ms, 0)} ms as targets_b64 (${fx(j.body_mb, 0)} and ${fx(b64.body_mb, 0)} MB bodies); send binary targets (multipart application/octet-stream) instead.`);
    const g = compare.goals;
    const split100k = compare.binary_gateway_threads?.find((x) => x.n === 100_000);
    // Within the goal or not, the distance to the roofline is where this path loses: say what it is.
    if (g) {
      losses.push(
        `- /compare with binary targets: p50 ${fx(g.binary_p50_ms, 1)} ms against a roofline of ${fx(g.roofline_p50_ms, 1)} ms for moving the same bytes (${fx(g.binary_over_roofline)}×)${g.binary_cpu_ms && g.roofline_cpu_ms ? `, CPU ${fx(g.binary_cpu_ms, 0)} against ${fx(g.roofline_cpu_ms, 0)} ms per request` : ''}. ` +
          `${split100k ? `The gateway's event loop spent ${fx(split100k.main_ms, 0)} ms per request, its other threads ${fx(split100k.others_ms, 0)}. ` : ''}` +
          `The suite's bodies name source, model_name and distance_metric before the targets part, so each socket chunk's rows are scored as it arrives and the part is never copied (src/native/compare-stream.ts, since 445f19a). Beyond what the roofline does, that costs one native call per 64 KiB chunk: the closing-delimiter search (memchr's memmem, 1.5-1.7 ms per 100k body in isolation) and the kernel (2.3-2.4 ms in isolation, AVX2, rows in pairs; 7-12 ms per request in the server, most of it the first read of each freshly allocated chunk, which the roofline never reads), then auth and the answer. ` +
          `A body whose fields come after the targets takes the buffered path: a second copy of the 49 MB into a pooled buffer (non-temporal stores) and the kernel on the libuv pool after the last byte; bench/profile/compare-http.ts --contiguous times both paths of one build in the same rounds (streamed 0-14% faster in 5 of 6 runs, within this machine's noise in the sixth). ` +
          `V8's full collections are no longer part of it: the external memory of the chunk ArrayBuffers counts against the old generation's limit, and with V8's own growing factor (1.1-1.3× the ~25 MB live heap after a memory-reducing collection) the gateway ran one mark-compact per 100k request (--trace-gc: 29-39 a run); FACECOMPUTE_HEAP_GROWTH_PERCENT (default 300, src/gateway/heap.ts) keeps 4× the live heap and brought that to 5 a run.`,
      );
    }
  }
  md.push(...(losses.length ? losses : ['- Nothing measured here: see the tables.']), '');
  const failed = Object.entries(b.suites).filter(([, v]) => v?.error);
  const missing = (['ort', 'library', 'service', 'coldstart', 'memory', 'compare', 'batching'] as const).filter((s) => !b.suites[s]?.result);
  md.push('## Not measured', '', '- GPU / CUDA execution provider: no GPU on this machine.', "- DeepFace's retinaface detector: its weights (retinaface.h5) are not in the shared mirror; ours uses the MobileNet-0.25 RetinaFace only as the opencv fallback.", `- Models other than ${models.length ? models.join(' and ') : 'Dlib'}: Facenet512, OpenFace and SFace have no real weights here${models.includes('Facenet') ? '' : '; Facenet runs when its weights are installed (`facecompute models fetch Facenet`)'}.`);
  for (const s of missing) md.push(`- Suite \`${s}\`: no result${b.suites[s]?.error ? ` (${b.suites[s]?.error})` : ' (not run yet)'}.`);
  for (const [k, v] of failed) if (!missing.includes(k as (typeof missing)[number])) md.push(`- Suite \`${k}\` last run failed: ${v?.error}.`);
  md.push('', 'Every figure: bench.json. Re-run: `npm run bench` (all, < 20 min) or `npm run bench -- <suite>`.', '');
  writeFileSync(join(dir, 'summary.md'), md.join('\n'));
}

function writeCharts(
  dir: string,
  r: { service: ServiceResult | null; library: LibraryResult | null; cold: ColdResult | null; memory: MemoryResult | null; compare: CompareResult | null; batching: BatchingResult | null; ortR: OrtResult | null },
): void {
  const put = (name: string, svg: string) => writeFileSync(join(dir, name), `${svg}\n`);
  const sms = serviceModels(r.service);
  if (sms.length) {
    // One category per model and level; the 2-worker series is NaN (no bar) for older results.
    const cats = sms.flatMap((m) => m.levels.map((l) => `${m.model} c${l.connections}`));
    const levels = sms.flatMap((m) => m.levels);
    put('service-throughput.svg', barChart({ title: '/verify throughput by model and concurrency (opencv)', yLabel: 'requests/s (log)', logY: true, width: 900 }, cats, [
      { name: 'facecompute', values: levels.map((l) => l.ours.rps) },
      { name: 'DeepFace API, 1 worker', values: levels.map((l) => l.deepface.rps) },
      { name: 'DeepFace API, 2 workers', values: levels.map((l) => l.deepface_2w?.rps ?? NaN) },
    ]));
    put('service-cpu.svg', barChart({ title: 'CPU ms per /verify (server process tree, /proc)', yLabel: 'CPU ms per request (log)', logY: true, width: 900 }, cats, [
      { name: 'facecompute', values: levels.map((l) => l.ours.cpu_ms_per_request ?? NaN) },
      { name: 'DeepFace API, 1 worker', values: levels.map((l) => l.deepface.cpu_ms_per_request ?? NaN) },
      { name: 'DeepFace API, 2 workers', values: levels.map((l) => l.deepface_2w?.cpu_ms_per_request ?? NaN) },
    ]));
    const lcats = sms.flatMap((m) => m.levels.flatMap((l) => [`${m.model} c${l.connections} p50`, `p90`, `p99`]));
    put('service-latency.svg', barChart({ title: '/verify latency distribution (p50 / p90 / p99)', yLabel: 'ms (log)', logY: true, width: 1400 }, lcats, [
      { name: 'facecompute', values: levels.flatMap((l) => [l.ours.p50_ms, l.ours.p90_ms, l.ours.p99_ms]) },
      { name: 'DeepFace API, 1 worker', values: levels.flatMap((l) => [l.deepface.p50_ms, l.deepface.p90_ms, l.deepface.p99_ms]) },
      { name: 'DeepFace API, 2 workers', values: levels.flatMap((l) => (l.deepface_2w ? [l.deepface_2w.p50_ms, l.deepface_2w.p90_ms, l.deepface_2w.p99_ms] : [NaN, NaN, NaN])) },
    ]));
  }
  if (r.library) {
    const cats = r.library.rows.flatMap((x) => [`${x.model ?? 'Dlib'} ${x.detector} represent`, `${x.model ?? 'Dlib'} ${x.detector} verify`]);
    put('library-latency.svg', barChart({ title: 'Library p50 latency (in-process)', yLabel: 'ms (log)', logY: true, width: 1200 }, cats, [
      { name: 'facecompute', values: r.library.rows.flatMap((x) => [x.represent_ms.ours.p50, x.verify_ms.ours.p50]) },
      { name: 'DeepFace', values: r.library.rows.flatMap((x) => [x.represent_ms.deepface.p50, x.verify_ms.deepface.p50]) },
    ]));
  }
  const colds = coldRows(r.cold);
  if (colds.length) {
    put('coldstart.svg', barChart({ title: 'Cold start (process start to ready / first verify)', yLabel: 'seconds' }, colds.flatMap((c) => [`${c.model} to ready`, `${c.model} to first verify`]), [
      { name: 'facecompute', values: colds.flatMap((c) => [c.ours_ready_s, c.ours_first_verify_s]) },
      { name: 'DeepFace API', values: colds.flatMap((c) => [NaN, c.deepface_first_verify_s]) },
    ]));
  }
  const mems = memoryRows(r.memory);
  if (mems.length) {
    put('memory.svg', barChart({ title: 'Resident memory (process tree)', yLabel: 'MB' }, mems.flatMap((m) => [`${m.model} idle`, `${m.model} peak after /verify c4`]), [
      { name: 'facecompute', values: mems.flatMap((m) => [m.ours.idle_rss_mb, m.ours.peak_rss_mb]) },
      { name: 'DeepFace API, 1 worker', values: mems.flatMap((m) => [m.deepface.idle_rss_mb, m.deepface.peak_rss_mb]) },
      { name: 'DeepFace API, 2 workers', values: mems.flatMap((m) => (m.deepface_2w ? [m.deepface_2w.idle_rss_mb, m.deepface_2w.peak_rss_mb] : [NaN, NaN])) },
    ]));
  }
  if (r.compare) {
    const ns = [...new Set(r.compare.rows.map((x) => x.n))].sort((a, b) => a - b);
    const label: Record<string, string> = { json: 'targets (JSON)', b64: 'targets_b64', binary: 'binary targets', roofline: 'roofline (read and discard)' };
    const series = ['json', 'b64', 'binary', 'roofline'].map((mode) => ({ name: `HTTP /compare ${label[mode]}`, values: ns.map((n) => r.compare!.rows.find((x) => x.n === n && x.mode === mode && (x.sources ?? 1) === 1)?.targets_per_s ?? NaN) }));
    const impls = [...new Set(r.compare.native?.rows.map((x) => x.impl) ?? [])];
    for (const impl of impls) series.push({ name: `kernel: ${impl}`, values: ns.map((n) => r.compare!.native!.rows.find((x) => x.n === n && x.impl === impl)?.vectors_per_s ?? NaN) });
    put('compare-roofline.svg', lineChart({ title: '/compare: targets per second, 128-d cosine', yLabel: 'targets/s (log)', logY: true }, ns.map((n) => `${n / 1000}k targets`), series));
  }
  if (r.batching) {
    put('batching.svg', barChart({ title: '/verify at c16: micro-batching on vs off', yLabel: 'requests/s' }, ['req/s'], [
      { name: 'batching on (1 ms, max 32)', values: [r.batching.rps.on] },
      { name: 'batching off', values: [r.batching.rps.off] },
    ]));
    const ib = r.batching.inference_bound;
    if (ib) {
      put('batching-inference-bound.svg', barChart({ title: `/verify at c16, ${ib.model}, detector skip: batching on vs off`, yLabel: 'requests/s' }, ['req/s'], [
        { name: 'batching on (1 ms, max 32)', values: [ib.rps.on] },
        { name: 'batching off', values: [ib.rps.off] },
      ]));
    }
  }
  if (r.ortR) {
    const variants = [...new Set(r.ortR.rows.map((x) => x.variant))];
    put('ort-settings.svg', barChart({ title: 'ONNX Runtime settings, Dlib (× production, same rounds)', yLabel: 'relative throughput', width: 900 }, variants, [1, 8].map((bt) => ({ name: `batch ${bt}`, values: variants.map((v) => r.ortR!.rows.find((x) => x.variant === v && x.batch === bt)?.vs_production ?? NaN) }))));
  }
}
