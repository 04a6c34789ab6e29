// The benchmark harness's own logic (bench/): what it measures is never asserted here (speed is
// measured in bench/, not in tests), only that it computes, attributes and reports it correctly.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuSplit, perfLine, writeReport } from '../bench/report.js';
import { groupPerf } from '../bench/lib/perf.js';
import { deepFaceProblem, type BenchFile } from '../bench/run.js';
import { sampleLoad, settle, treeCpuSeconds } from '../bench/lib/proc.js';
import { rotation } from '../bench/suites/service.js';

const ROOT = resolve(import.meta.dirname, '..');

t.test('without the DeepFace venv the bench stops before running anything, and says how to make it', async (t) => {
  const missing = join(mkdtempSync(join(tmpdir(), 'fc-bench-')), 'no-venv', 'bin', 'python');
  const why = deepFaceProblem(missing);
  t.match(why, /DeepFace baseline venv is missing/);
  t.match(why, missing);
  t.match(why, /npm run bench:setup/);
  t.match(why, /DEEPFACE_PYTHON/);
  // A Python without deepface (the system's) is refused too, without importing TensorFlow.
  const python3 = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();
  t.ok(python3, 'python3 is on PATH (bootstrap needs it for the converters venv)');
  t.match(deepFaceProblem(python3), /not usable \(deepface or gunicorn is not installed\)/);

  const bench = join(ROOT, 'bench', 'results', 'bench.json');
  const before = statSync(bench).mtimeMs;
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'run.ts'), 'service', 'memory'], {
    cwd: ROOT,
    env: { ...process.env, DEEPFACE_PYTHON: missing },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.equal(r.status, 2, r.stderr);
  t.match(r.stderr, /npm run bench:setup/);
  t.match(r.stderr, /Suites that need it: service, memory/);
  t.match(r.stderr, /Without it: npm run bench -- ort compare batching/);
  t.equal(r.stdout, '', 'no suite started');
  t.equal(statSync(bench).mtimeMs, before, 'the committed results are untouched');
});

t.test("a process tree's CPU time includes children that exited and were reaped", async (t) => {
  // The parent runs a child that burns 300 ms of CPU, reaps it, then idles: the child's time is
  // now only in the parent's cutime/cstime (a restarted gunicorn worker, a finished helper).
  const script = `
    const { spawnSync } = require('node:child_process');
    spawnSync(process.execPath, ['-e', 'const c0 = process.cpuUsage(); while (process.cpuUsage(c0).user < 300000) {}']);
    process.stdout.write('reaped\\n');
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    parent.kill('SIGKILL');
  });
  await new Promise<void>((res) => parent.stdout.once('data', () => res()));
  const pid = parent.pid as number;
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const own = (Number(fields[11]) + Number(fields[12])) / 100;
  const tree = treeCpuSeconds(pid);
  t.ok(tree >= own + 0.25, `tree ${tree} s, parent alone ${own} s: the reaped child's ≥ 0.3 s is counted`);
});

t.test('the load average is sampled while a suite runs', async (t) => {
  const s = sampleLoad(10);
  await new Promise((r) => setTimeout(r, 50));
  const got = s.stop();
  t.ok(got && got.samples >= 2, JSON.stringify(got));
  t.ok(got && got.min <= got.mean && got.mean <= got.max);
});

t.test('which side goes first rotates by level', async (t) => {
  t.same(rotation(['a', 'b', 'c'], 0), ['a', 'b', 'c']);
  t.same(rotation(['a', 'b', 'c'], 1), ['b', 'c', 'a']);
  t.same(rotation(['a', 'b', 'c'], 5), ['c', 'a', 'b']);
});

// ---- the report, from a bench.json written by hand
const cell = (rps: number, p50: number, cpu: number) => ({ rps, p50_ms: p50, p90_ms: p50 * 1.2, p99_ms: p50 * 1.5, ok: 100, non2xx: 0, errors: 0, timeouts: 0, statuses: {}, cpu_ms_per_request: cpu });
const machine = (cpu: string) => ({ cpu, cores: 2, memory_gb: 24, node: 'v20', commit: 'abc1234', date: '2026-11-24T12:00:00Z' });
const entry = (cpu: string, result: Record<string, unknown>) => ({ ran_at: '2026-11-24T12:00:00.000Z', seconds: 10, loadavg_before: [9], loadavg_after: [11], loadavg_during: { samples: 3, min: 8, max: 14, mean: 10.5 }, machine: machine(cpu), commit: 'abc1234', ours_entry: 'bundled', result });
const stage = (model: string, image: string, detect: number, embed: number) => ({ model, detector: 'opencv', image, size: '1x1', decode_ms: 1, border_ms: 0, detect_ms: detect, detect_cpu_ms: detect, opencv_haar_ms: detect * 3, extract_faces_ms: 1, to_tensor_ms: 1, embed_ms: embed, embed_cpu_ms: embed });
const level = (c: number, ours: number[], one: number[], two: number[]) => ({ connections: c, ours: cell(ours[0]!, ours[1]!, ours[2]!), deepface: cell(one[0]!, one[1]!, one[2]!), deepface_2w: cell(two[0]!, two[1]!, two[2]!), event_loop: [] });

function sample(): BenchFile {
  return {
    machine: machine('Intel Xeon'),
    suites: {
      service: entry('Intel Xeon', {
        deepface_workers: [1, 2],
        models: [
          // Dlib: 12 req/s vs 2 (1w) and 2.2 (2w) at c16 → 6× and 5.45×; CPU 140 vs 700 → 0.2.
          { model: 'Dlib', agreement: {}, yunet_c16: null, levels: [level(1, [10, 100, 140], [2.3, 420, 690], [2.4, 400, 700]), level(4, [11, 300, 140], [2.2, 1700, 700], [4, 900, 700]), level(16, [12, 1200, 140], [2, 7000, 700], [2.2, 6000, 700])] },
          // Facenet: 8 req/s vs 2 (2w) → 4×: not met; p50 150 vs 400 → 0.375: not met; CPU 250 vs 1000 → 0.25.
          { model: 'Facenet', agreement: {}, yunet_c16: null, levels: [level(1, [6, 150, 250], [2, 420, 1000], [2, 400, 1000]), level(4, [7, 500, 250], [1.9, 1800, 1000], [2, 1500, 1000]), level(16, [8, 1900, 250], [1.8, 8000, 1000], [2, 7000, 1000])] },
        ],
        memory_after_load: { ours_peak_rss_mb: 900, deepface_peak_rss_mb: 1300, deepface_2w_peak_rss_mb: 2400 },
      }),
      library: entry('Intel Xeon', {
        rows: [],
        stages: [stage('Dlib', 'img5.jpg', 20, 5), stage('Dlib', 'img6.jpg', 60, 5), stage('Dlib', 'img1.jpg', 200, 5), stage('Facenet', 'img5.jpg', 20, 40), stage('Facenet', 'img6.jpg', 60, 40)],
      }),
      coldstart: entry('Intel Xeon', { models: [{ model: 'Dlib', ours_ready_s: 0.5, ours_first_verify_s: 0.7, deepface_first_verify_s: 4, ratio: 0.125 }, { model: 'Facenet', ours_ready_s: 1.2, ours_first_verify_s: 1.5, deepface_first_verify_s: 5, ratio: 0.24 }] }),
      // Ran elsewhere: the report must say so rather than relabel it.
      memory: entry('AMD EPYC', { models: [{ model: 'Dlib', ours: { idle_rss_mb: 280, peak_rss_mb: 600 }, deepface: { idle_rss_mb: 800, peak_rss_mb: 810 }, deepface_2w: { idle_rss_mb: 1500, peak_rss_mb: 1600 }, ratio: 600 / 810, ratio_2w: 600 / 1600 }, { model: 'Facenet', ours: { idle_rss_mb: 500, peak_rss_mb: 1100 }, deepface: { idle_rss_mb: 900, peak_rss_mb: 1000 }, ratio: 1.1 }] }),
    },
  } as unknown as BenchFile;
}

t.test('summary.json carries every ratio and goal for both models, against both DeepFace configurations', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-bench-report-'));
  writeReport(sample(), dir);
  const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
  t.same(Object.keys(s.models), ['Dlib', 'Facenet']);
  const d = s.models.Dlib;
  t.equal(d.verify_rps_ratio_c16, 5.455, 'c16 throughput against the two-worker API');
  t.equal(d.verify_rps_ratio_c16_1w, 6, 'and against the one-worker API');
  t.equal(d.verify_p50_ratio_c1, 0.25);
  t.equal(d.cpu_per_request_ratio_c16, 0.2);
  t.equal(d.peak_rss_ratio, 0.741);
  t.equal(d.peak_rss_ratio_2w, 0.375);
  t.equal(d.cold_start_ratio, 0.125);
  t.same(
    Object.fromEntries(Object.entries(d.goals as Record<string, { met: boolean | null }>).map(([k, v]) => [k, v.met])),
    { verify_rps_ratio_c16: false, verify_p50_ratio_c1: false, cpu_per_request_ratio_c16: false, verify_rps_ratio_c16_103: null, cpu_per_request_ratio_c16_103: null, yunet_rps_ratio_c16: null, peak_rss_ratio: true, cold_start_ratio: true },
  );
  const f = s.models.Facenet;
  t.equal(f.verify_rps_ratio_c16, 4);
  t.same(
    Object.fromEntries(Object.entries(f.goals as Record<string, { met: boolean | null }>).map(([k, v]) => [k, v.met])),
    { verify_rps_ratio_c16: false, verify_p50_ratio_c1: false, cpu_per_request_ratio_c16: false, verify_rps_ratio_c16_103: null, cpu_per_request_ratio_c16_103: null, yunet_rps_ratio_c16: null, peak_rss_ratio: false, cold_start_ratio: false },
  );
  t.equal(s.suites_ran_at.memory.cpu, 'AMD EPYC');
  t.same(s.suites_ran_at.service.loadavg_during, { samples: 3, min: 8, max: 14, mean: 10.5 });
});

t.test('summary.md prints the goals per model with met / not met, where we lose and each suite\'s machine and load', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-bench-report-'));
  writeReport(sample(), dir);
  const md = readFileSync(join(dir, 'summary.md'), 'utf8');
  t.match(md, '| /verify throughput at c16 ≥ 8× DeepFace API (2 workers) | Dlib | `verify_rps_ratio_c16` = 5.455 | 6.000 | **not met** |');
  t.match(md, '| /verify throughput at c16 ≥ 8× DeepFace API (2 workers) | Facenet | `verify_rps_ratio_c16` = 4.000 | 4.444 | **not met** |');
  t.match(md, '| CPU per /verify at c16 ≤ 0.125 of DeepFace API (2 workers) | Facenet | `cpu_per_request_ratio_c16` = 0.250 | 0.250 | **not met** |');
  t.match(md, '| /verify throughput at c16 ≥ 8× DeepFace 0.0.103 API (ONNX, 2 workers) | Dlib | `verify_rps_ratio_c16_103` = n/a | n/a | not measured |');
  t.match(md, 'No DeepFace 0.0.103 baseline in this run');
  t.match(md, '## Service level: POST /verify (Facenet, opencv');
  t.match(md, '| 16 | 8.00 | 1.80 / 2.00 | 4.4 / 4.0 |');
  t.match(md, '- Goal missed, Facenet: /verify throughput at c16 ≥ 8× DeepFace API (2 workers) (measured 4.000).');
  t.match(md, '- Goal missed, Dlib: /verify throughput at c16 ≥ 8× DeepFace API (2 workers) (measured 5.455).');
  t.notMatch(md, /Goal missed, Dlib: peak RSS/);
  // Where Facenet's CPU goes: 250 ms per request; Haar 80 (32%), network 80 (32%), the rest 90.
  t.match(md, '- Where our CPU goes, Facenet: 250 CPU ms per /verify at c16 (DeepFace 1000). In-process, the Haar scan of the two images takes 80 CPU ms (32%), the Facenet network 80 ms (32%); the remaining 90 ms (36%)');
  t.match(md, /Machines: the suites ran on different machines \(Intel Xeon; AMD EPYC\)/);
  // The stage causes use CPU time (20 of 20 + 5 CPU ms on img5), not wall time.
  t.match(md, '- Cause: with opencv the Haar cascade is 80% of our in-process CPU on img5.jpg (20 CPU ms, 20 ms wall; OpenCV\'s own cascade on the same bordered image: 60 ms wall).');
  t.match(md, '| memory | 2026-11-24 12:00 | abc1234 | AMD EPYC, 2 cores | 9 → 11 | 8–14 (10.5) | 10 |');
});

t.test('DeepFace 0.0.103 sits beside 0.0.100 with its own 8× and 0.125 goal lines, and each suite names its SIMD kernels', async (t) => {
  const b = sample();
  const svc = b.suites.service as unknown as { machine: Record<string, unknown>; result: { models: Array<{ levels: Array<Record<string, unknown>> }> } };
  for (const m of svc.result.models) {
    for (const l of m.levels) {
      l.deepface103 = cell(2.5, 380, 650);
      l.deepface103_2w = cell(1.5, 350, 1200);
    }
  }
  svc.machine.simd = { haar: 'avx512', compare: 'avx512', forced: null, cpu_flags: ['avx2', 'avx512f'] };
  const dir = mkdtempSync(join(tmpdir(), 'fc-bench-report-'));
  writeReport(b, dir);
  const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
  // Dlib at c16: 12 req/s vs 1.5 → 8×, met; CPU 140 vs 1200 → 0.117, met. Facenet: 8 vs 1.5 → 5.333.
  t.equal(s.models.Dlib.verify_rps_ratio_c16_103, 8);
  t.equal(s.models.Dlib.cpu_per_request_ratio_c16_103, 0.117);
  t.equal(s.models.Dlib.goals.verify_rps_ratio_c16_103.met, true);
  t.equal(s.models.Dlib.goals.cpu_per_request_ratio_c16_103.met, true);
  t.equal(s.models.Facenet.verify_rps_ratio_c16_103, 5.333);
  t.equal(s.models.Facenet.goals.verify_rps_ratio_c16_103.met, false);
  const md = readFileSync(join(dir, 'summary.md'), 'utf8');
  t.match(md, '| /verify throughput at c16 ≥ 8× DeepFace 0.0.103 API (ONNX, 2 workers) | Dlib | `verify_rps_ratio_c16_103` = 8.000 | 4.800 | met |');
  t.match(md, '| CPU per /verify at c16 ≤ 0.125 of DeepFace 0.0.103 API (ONNX, 2 workers) | Facenet | `cpu_per_request_ratio_c16_103` = 0.208 | - | **not met** |');
  t.match(md, '| 16 | 12.00 | 2.00 / 2.20 | 6.0 / 5.5 |');
  t.match(md, '| 2.50 / 1.50 | 4.8 / 8.0 | 350 / 525 | 650 / 1200 |');
  t.notMatch(md, 'No DeepFace 0.0.103 baseline in this run');
  t.match(md, /\| service \| 2026-11-24 12:00 \| abc1234 \| Intel Xeon, 2 cores \| 9 → 11 \| 8–14 \(10\.5\) \| 10 \| avx512 \/ avx512 \|/);
  t.match(md, /\| memory \| [^\n]* \| 10 \| not recorded \|/);
});

t.test('results from before issue 17 (one model, one DeepFace worker) are still reported, as Dlib', async (t) => {
  const old = {
    machine: machine('AMD EPYC'),
    suites: {
      service: { ran_at: '2026-11-22T01:18:00.000Z', seconds: 244, loadavg_before: [1.5], loadavg_after: [1.3], commit: '89cd1bb', ours_entry: 'bundled', result: { levels: [level(16, [12.9, 1194, 151], [2.25, 6921, 716], [0, 0, 0])].map((l) => ({ ...l, deepface_2w: undefined })), memory_after_load: { ours_peak_rss_mb: 600, deepface_peak_rss_mb: 800 }, agreement: {} } },
      coldstart: { ran_at: '2026-11-22T01:22:00.000Z', seconds: 25, loadavg_before: [1.2], loadavg_after: [1.2], commit: '89cd1bb', ours_entry: 'bundled', result: { ours_ready_s: 0.5, ours_first_verify_s: 0.7, deepface_first_verify_s: 3.5, ratio: 0.147 } },
    },
  } as unknown as BenchFile;
  const dir = mkdtempSync(join(tmpdir(), 'fc-bench-report-'));
  writeReport(old, dir);
  const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'));
  t.equal(s.models.Dlib.verify_rps_ratio_c16_1w, 5.733);
  t.equal(s.models.Dlib.verify_rps_ratio_c16, null, 'no two-worker row: not measured, not guessed');
  t.equal(s.models.Dlib.goals.verify_rps_ratio_c16.met, null);
  t.equal(s.models.Dlib.cold_start_ratio, 0.147);
  const md = readFileSync(join(dir, 'summary.md'), 'utf8');
  t.match(md, 'This run predates the two-worker baseline');
  t.match(md, '| service | 2026-11-22 01:18 | 89cd1bb | not recorded |');
});

t.test('the CPU split needs both images of the service pair for the model', async (t) => {
  const sm = { model: 'Facenet', agreement: {}, levels: [level(16, [8, 1900, 250], [1.8, 8000, 1000], [2, 7000, 1000])] };
  t.same(cpuSplit(sm, [stage('Dlib', 'img5.jpg', 20, 5), stage('Dlib', 'img6.jpg', 60, 5)]), [], 'no Facenet stages: nothing claimed');
  t.match(cpuSplit(sm, [stage('Facenet', 'img5.jpg', 20, 40), stage('Facenet', 'img6.jpg', 60, 40)])[0], /OpenCV's own cascade, which DeepFace runs, takes 240 ms \(wall\)/);
  // With OpenCV's CPU time recorded, CPU is set against CPU.
  const withCpu = [stage('Facenet', 'img5.jpg', 20, 40), stage('Facenet', 'img6.jpg', 60, 40)].map((r) => ({ ...r, opencv_haar_cpu_ms: r.detect_ms * 4 }));
  t.match(cpuSplit(sm, withCpu)[0], /OpenCV's own cascade, which DeepFace runs, takes 320 CPU ms on the same two bordered images/);
});

t.test('a perf report is grouped by what the time is spent on', async (t) => {
  const report = [
    '    51.11%  facecompute.linux-x64-gnu.node  [.] facecompute_core::detect::haar::dense::avx2::scan_row',
    '     6.81%  facecompute.linux-x64-gnu.node  [.] facecompute_core::detect::haar::pyramid::h_line',
    '     2.92%  facecompute.linux-x64-gnu.node  [.] facecompute_core::pixels::warp::warp_affine_cubic_roi',
    '     1.33%  facecompute.linux-x64-gnu.node  [.] decode_mcu_AC_refine',
    '     2.48%  libonnxruntime.so.1.20.0         [.] MlasSgemmKernelAvx512F',
    '     1.24%  [kernel.kallsyms]               [k] finish_task_switch.isra.0',
    '     1.24%  libc.so.6                       [.] __memset_evex_unaligned_erms',
    '     0.80%  node                            [.] Builtins_JSEntry',
    '     0.53%  facecompute.linux-x64-gnu.node  [.] <core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold',
    '# comment lines and blank lines are ignored',
    '',
  ].join('\n');
  const g = groupPerf(report);
  t.same(g.shares, { haar: 57.9, onnxruntime: 2.5, 'image decode': 1.3, 'align and tensor': 2.9, 'node and V8': 0.8, kernel: 1.2, libc: 1.2, other: 0.5 });
  t.equal(g.listed, 68.5);
  // A --pid filtered report whose percentages pass 100: the shares are scaled to sum to 100.
  const over = groupPerf(['    63.00%  facecompute.linux-x64-gnu.node  [.] facecompute_core::detect::haar::dense::avx512::scan_row', '    42.00%  node  [.] Builtins_JSEntry'].join('\n'));
  t.same(over.shares, { haar: 60, onnxruntime: 0, 'image decode': 0, 'align and tensor': 0, 'node and V8': 40, kernel: 0, libc: 0, other: 0 });
  t.equal(over.listed, 105);

  const dir = mkdtempSync(join(tmpdir(), 'fc-bench-perf-'));
  t.same(perfLine(dir, 'Dlib'), [], 'no profile: nothing said');
  writeFileSync(join(dir, 'profile-verify-Dlib-opencv.json'), JSON.stringify({ ran_at: '2026-11-24T12:07:53.072Z', connections: 16, loadavg: '25.73 22.61 22.04 30/639 21163', ...g }));
  t.same(perfLine(dir, 'Dlib'), ['- Profiled, Dlib: `perf record` of our gateway and model server under /verify Dlib opencv at c16 (`node --import tsx bench/profile/verify-perf.ts --model Dlib`, 2026-11-24 12:07 UTC, load 25.73): haar 57.9%, align and tensor 2.9%, onnxruntime 2.5%, image decode 1.3%, kernel 1.2%, libc 1.2% of all samples. The Haar scan is the largest share: the next CPU gain must come from it.']);
});

t.test('settle waits while a process tree still burns CPU after a run, and not once it is idle', async (t) => {
  // A driven clock and CPU counter: how much CPU a process gets on a loaded machine, and how long a
  // window lasts, are the machine's business (a real child spinning 1.5 s got 0.47 s of CPU here, and
  // a real hog looked quiet at load 20 on 2 cores). `burn` says what the tree uses in each window.
  const driven = (burn: (window: number) => number) => {
    let now = 0;
    let cpu = 0;
    let window = 0;
    return { cpuSeconds: () => cpu, now: () => now, wait: async (ms: number) => { now += ms; cpu += burn(window++); } };
  };
  // A server that finishes abandoned requests after the client stopped (gunicorn's sync workers):
  // 0.2 s of CPU in each of six 250 ms windows, then idle.
  const s = await settle(1, { windowMs: 250, timeoutMs: 10_000 }, driven((w) => (w < 6 ? 0.2 : 0)));
  t.ok(s.quiet, 'quiet in the end');
  t.same([s.windows, s.waitedMs], [7, 1750], 'waited through the six busy windows, then one quiet one');
  t.ok(Math.abs(s.cpuS - 1.2) < 1e-9, `counted the CPU it burnt meanwhile (${s.cpuS} s)`);
  // Just under 5% of a core in a window is quiet; just over is not.
  t.same(await settle(1, { windowMs: 250 }, driven(() => 0.0124)), { waitedMs: 250, windows: 1, cpuS: 0.0124, quiet: true }, 'an idle tree settles in one window');
  t.equal((await settle(1, { windowMs: 250 }, driven((w) => (w === 0 ? 0.0126 : 0)))).windows, 2, 'a window with more than 5% of a core is not quiet');
  // A tree that never quiets ends at the timeout, saying so.
  const capped = await settle(1, { windowMs: 200, timeoutMs: 800 }, driven(() => 0.2));
  t.same([capped.quiet, capped.windows, capped.waitedMs], [false, 4, 800], 'stopped at the timeout, still busy');

  // The machine's own readings: an idle real process settles, and its CPU is read from /proc.
  const child = spawn(process.execPath, ['-e', 'const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; }; while (cpu() < 3e5); console.log("burnt"); setInterval(() => {}, 1000);'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.teardown(() => child.kill('SIGKILL'));
  await new Promise((r) => child.stdout!.once('data', r));
  t.ok(treeCpuSeconds(child.pid!) >= 0.25, `the 0.3 s of CPU it burnt are read, in 10 ms ticks (${treeCpuSeconds(child.pid!)} s)`);
  t.ok((await settle(child.pid!, { windowMs: 100, timeoutMs: 60_000 })).quiet, 'an idle real process settles');
});

t.test("the adversary suite's memory watchdog kills a process whose peak RSS passes its limit, and only that one", async (t) => {
  const { memoryWatchdog } = await import('../bench/adversary/watchdog.js');
  // Two idle Node processes; one then touches 200 MiB (its peak stays there even once freed).
  const grow = spawn(process.execPath, ['-e', "process.stdin.once('data', () => { globalThis.b = Buffer.alloc(200 * 2 ** 20, 1); }); setInterval(() => {}, 1000);"], { stdio: ['pipe', 'ignore', 'inherit'] });
  const calm = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  t.teardown(() => {
    grow.kill('SIGKILL');
    calm.kill('SIGKILL');
  });
  const limit = 150 * 2 ** 20;
  const dog = memoryWatchdog(() => [
    { pid: grow.pid!, role: 'grow', limitBytes: limit },
    { pid: calm.pid!, role: 'calm', limitBytes: limit },
  ], 10);
  t.teardown(() => dog.stop());
  await new Promise((r) => setTimeout(r, 300));
  t.same(dog.kills, [], 'nothing killed below the limit');
  const exited = new Promise<NodeJS.Signals | null>((r) => grow.once('exit', (_code, signal) => r(signal)));
  grow.stdin!.write('go\n');
  t.equal(await exited, 'SIGKILL', 'the process past its limit is SIGKILLed');
  t.equal(dog.kills.length, 1);
  t.match(dog.kills[0], { pid: grow.pid, role: 'grow' });
  t.ok(dog.kills[0]!.peakMb > 150, `its peak: ${dog.kills[0]!.peakMb} MiB`);
  t.equal(calm.exitCode, null, 'the other one lives');
});
