/**
 * The adversary suite (issue 24): every attack of the issue against a live `serve`, one at a time,
 * while a well-behaved client keeps calling /verify, loopback only:
 *   npm run build:ts && npm run bench:adversary [-- --window-seconds 12 --baseline-seconds 30 --out bench/results/adversary.json]
 *   (--only 'a,b' runs the attacks whose names hold a or b; --serve-root DIR attacks another checkout's build;
 *   --rate-limit N: the per-key window a minute, 1200 by default)
 *
 * Memory limits like the Helm chart's, without cgroups (bench/adversary/watchdog.ts): every 10 ms a
 * watchdog reads each process's peak RSS (VmHWM) and SIGKILLs a process past its limit, as the OOM
 * killer would: `serve` (gateway, MCP and console in one process) 1 GiB, the gateway pod's limit, and
 * its model-server child 2.5 GiB, the model-server pod's (5/4 of its 2 GiB memory budget; `prlimit --as`
 * cannot stand in: see there).
 *
 * For each attack, on a settled service: peak RSS is reset (`5` to /proc/<pid>/clear_refs) and the
 * event-loop histograms of both processes too (SIGUSR2 to bench/lib/eld-probe.mjs, preloaded through
 * NODE_OPTIONS: perf_hooks.monitorEventLoopDelay at 5 ms resolution); the attack is sent `repeat`
 * times within a window of `--window-seconds`; then it prints the answers and their times, each
 * process's peak RSS over its RSS just before, the longest event-loop stall of each, whether any
 * process died (exit, kill by the watchdog, or a new model-server pid), the longest stall of an idle
 * Node process with the same probe in the same window (the machine's own scheduling delay, to read
 * the others against), the most CPU time each process's JS thread spent between two ticks of a 2 ms
 * timer (the part of a stall that is its own work, not waiting for a core), and the well-behaved
 * client's p50/p99 and errors in the window, against its
 * own p50/p99 without attack (`--baseline-seconds`, measured first). Goals (issue 24): every attack answered 4xx in the contract's shape; no process
 * dies; RSS rises at most 64 MiB; the longest stall at most 50 ms; the client sees no error and a p99
 * within 2x its p99 without attack. The load average is printed with the results: the suite shares
 * the machine's cores with whatever else runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { loadavg, tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { processTree, procMemory, settle } from '../lib/proc.js';
import { createKey, readEventLoop, startOurs } from '../lib/services.js';
import { machineInfo } from '../lib/machine.js';
import { REPO_ROOT, DEEPFACE_DATA } from '../lib/paths.js';
import { verifyBody } from '../lib/bodies.js';
import { round, summarize } from '../lib/stats.js';
import { attacks, type Answer, type Targets } from './attacks.js';
import { memoryWatchdog } from './watchdog.js';
import { makeUniformPng } from '../../test/helpers/images.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const WINDOW_S = Number(arg('window-seconds', '12'));
const BASELINE_S = Number(arg('baseline-seconds', '30'));
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/adversary.json'));
const ONLY = arg('only', '');
/** The per-key window of requests a minute (FACECOMPUTE_RATE_LIMIT_REQUESTS) the service runs with. */
const RATE_LIMIT = arg('rate-limit', '1200');
/**
 * The checkout whose `serve` is attacked (its build): another branch's, to compare before and after
 * with the same attacks in the same harness. This checkout by default.
 */
const SERVE_ROOT = resolve(arg('serve-root', REPO_ROOT));
const MIB = 2 ** 20;
/** The chart's memory limits (deploy/helm/facecompute/values.yaml). */
const LIMIT = { serve: 1024 * MIB, 'model-server': 2560 * MIB } as const;
type Role = keyof typeof LIMIT;

/** dist/ must be the code under test: `serve` runs bin/facecompute.js, which prefers the build. */
function checkBuild(): void {
  const built = join(SERVE_ROOT, 'dist', 'bundle', 'main.js');
  if (!existsSync(built)) return;
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs), 0);
  if (newest(join(SERVE_ROOT, 'src')) > statSync(built).mtimeMs) {
    console.error('dist/ is older than src/: run `npm run build:ts` first (serve runs the build)');
    process.exit(2);
  }
}

interface Proc {
  pid: number;
  role: Role;
}

function roles(servePid: number): Proc[] {
  return processTree(servePid)
    .map((pid) => {
      const m = procMemory(pid);
      if (!m || m.name === 'esbuild') return null;
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return null;
      }
      if (pid === servePid) return { pid, role: 'serve' as const };
      return cmd.split('\0').includes('model-server') ? { pid, role: 'model-server' as const } : null;
    })
    .filter((p): p is Proc => p !== null);
}

/** The well-behaved client: /verify back to back, each answer timed and kept with when it ended. */
function client(url: string, key: string): { samples: Array<{ at: number; ms: number; status: number }>; stop(): Promise<void> } {
  const body = verifyBody();
  const samples: Array<{ at: number; ms: number; status: number }> = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      let status = 0;
      try {
        const res = await request(`${url}/verify`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, headersTimeout: 60_000, bodyTimeout: 60_000 });
        await res.body.text();
        status = res.statusCode;
      } catch {
        status = -1;
      }
      samples.push({ at: performance.now(), ms: performance.now() - t0, status });
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}

function clientStats(samples: Array<{ ms: number; status: number }>) {
  const s = summarize(samples.map((x) => x.ms));
  return { n: s.n, p50_ms: round(s.p50, 1), p99_ms: round(s.p99, 1), errors: samples.filter((x) => x.status !== 200).length };
}

async function main(): Promise<void> {
  checkBuild();
  // Flat (all zero) RGB, just under the 40 MP image limit: about 120 KB, 120 MB once decoded.
  const bigPng = makeUniformPng(6324, 6324, 0);
  const bigPngs = Array.from({ length: 16 }, () => bigPng.toString('base64'));
  // Within the model server's 2 GiB budget for mtcnn (src/model-client/job-cost.ts: up to about 4000² beside a resident model server of 500 MiB).
  const mtcnnPng = makeUniformPng(4000, 4000, 0).toString('base64');
  const jpegRepro = readFileSync(join(REPO_ROOT, 'crates/facecompute-core/tests/fixtures/jpeg-warnings/repro-extraneous-bad-dht.jpg')).toString('base64');
  const localRoot = mkdtempSync(join(tmpdir(), 'facecompute-adversary-files-'));
  writeFileSync(join(localRoot, 'face.jpg'), readFileSync(join(DEEPFACE_DATA, 'img5.jpg')));
  const list = attacks({ bigPngs, mtcnnPng, jpegRepro }).filter((a) => !ONLY || ONLY.split(',').some((o) => a.name.includes(o)));

  const logDir = mkdtempSync(join(tmpdir(), 'facecompute-adversary-'));
  const svc = await startOurs({
    label: 'adversary',
    logDir,
    root: SERVE_ROOT,
    eventLoopProbe: true,
    models: ['Dlib'],
    // A per-key window that the well-behaved client (about 300 requests a minute here) stays under and
    // an attack can pass: the benches' own default (a billion) would hide the per-key limits.
    env: { FACECOMPUTE_LOCAL_IMAGES_ROOT: localRoot, FACECOMPUTE_LOG_LEVEL: 'warn', FACECOMPUTE_RATE_LIMIT_REQUESTS: RATE_LIMIT },
  });
  const dog = memoryWatchdog(() => roles(svc.proc.pid).map((p) => ({ ...p, limitBytes: LIMIT[p.role] })));
  const load0 = loadavg();
  const results: unknown[] = [];
  try {
    const restKey = await createKey(svc.consoleUrl);
    const signup = (await (await fetch(`${svc.consoleUrl}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
    const mcpKey = ((await (await fetch(`${svc.consoleUrl}/api/mcp-keys`, { method: 'POST', headers: { authorization: `Bearer ${signup.session_token}`, 'content-type': 'application/json' }, body: '{"name":"adversary"}' })).json()) as { key: string }).key;
    const targets: Targets = { gateway: svc.gatewayUrl, mcp: svc.mcpUrl, console: svc.consoleUrl, restKey, mcpKey };
    const goodKey = await createKey(svc.consoleUrl);

    const good = client(svc.gatewayUrl, goodKey);
    await sleep(3000); // warm the client's path
    const baselineFrom = performance.now();
    await sleep(BASELINE_S * 1000);
    const baseline = clientStats(good.samples.filter((x) => x.at >= baselineFrom));
    console.log(`well-behaved client without attack: p50 ${baseline.p50_ms} ms, p99 ${baseline.p99_ms} ms, ${baseline.n} requests, ${baseline.errors} errors`);

    for (const attack of list) {
      // Inputs are built before the window: the well-behaved client runs in this process too.
      attack.prepare?.();
      await settle(svc.proc.pid, { windowMs: 1000, idleShare: 0.6, timeoutMs: 15_000 }).catch(() => undefined);
      const before = roles(svc.proc.pid);
      const idle = new Map(before.map((p) => [p.pid, procMemory(p.pid)?.vmRssMb ?? 0]));
      for (const p of before) {
        writeFileSync(`/proc/${p.pid}/clear_refs`, '5');
        process.kill(p.pid, 'SIGUSR2');
      }
      if (svc.eldBaselinePid) process.kill(svc.eldBaselinePid, 'SIGUSR2');
      const killedBefore = dog.kills.length;
      const from = performance.now();
      const answers: Answer[] = [];
      const gap = (WINDOW_S * 1000) / (attack.repeat + 1);
      for (let i = 0; i < attack.repeat; i++) {
        await sleep(Math.max(0, from + gap * (i + 1) - performance.now()));
        answers.push(await attack.run(targets).catch((err: unknown) => ({ status: -1, code: `failed: ${(err as Error).message}`.slice(0, 80), ms: performance.now() - from })));
      }
      await sleep(Math.max(0, from + WINDOW_S * 1000 - performance.now()));
      await sleep(400); // the event-loop probes write every 200 ms
      const to = performance.now();
      const after = roles(svc.proc.pid);
      const eld = svc.eldDir ? readEventLoop(svc.eldDir) : [];
      const processes = before.map((p) => {
        const m = procMemory(p.pid);
        return {
          role: p.role,
          pid: p.pid,
          idle_rss_mb: round(idle.get(p.pid) ?? 0, 0),
          peak_rss_mb: m ? round(m.vmHwmMb, 0) : null,
          rise_mb: m ? round(m.vmHwmMb - (idle.get(p.pid) ?? 0), 0) : null,
          longest_stall_ms: eld.find((e) => e.pid === p.pid)?.max_ms ?? null,
          // The JS thread's own CPU time in its busiest span between timer ticks (bench/lib/eld-probe.mjs).
          busy_ms: eld.find((e) => e.pid === p.pid)?.busy_max_ms ?? null,
          alive: m !== null,
        };
      });
      // An idle Node process with the same probe: the machine's own scheduling delay in the window.
      const machineStall = eld.find((e) => e.pid === svc.eldBaselinePid)?.max_ms ?? null;
      const died = svc.proc.child.exitCode !== null || dog.kills.length > killedBefore || after.length !== before.length || after.some((p, i) => p.pid !== before[i]?.pid);
      const during = clientStats(good.samples.filter((x) => x.at >= from && x.at <= to));
      const r = {
        attack: attack.name,
        item: attack.item,
        expect: attack.expect,
        answers: answers.map((a) => ({ status: a.status, code: a.code, ms: round(a.ms, 0) })),
        processes,
        idle_node_stall_ms: machineStall,
        died,
        client: during,
      };
      results.push(r);
      const ans = answers.map((a) => `${a.status} ${a.code}`).filter((x, i, all) => all.indexOf(x) === i).join('; ');
      const times = answers.map((a) => round(a.ms, 0)).join('/');
      const mem = processes.map((p) => `${p.role} +${p.rise_mb} MiB (peak ${p.peak_rss_mb}), stall ${p.longest_stall_ms} ms (busy ${p.busy_ms} ms)`).join('; ');
      console.log(`\n${attack.name} [${attack.item}]\n  answer: ${ans} in ${times} ms (expect ${attack.expect})\n  ${mem}; an idle Node process: stall ${machineStall} ms\n  died: ${died ? 'YES' : 'no'}; client p50 ${during.p50_ms} / p99 ${during.p99_ms} ms over ${during.n}, errors ${during.errors}`);
      if (svc.proc.child.exitCode !== null) break;
    }
    await good.stop();
    const out = {
      machine: machineInfo(),
      // The attacked build, when it is another checkout's (--serve-root): machine.commit is the harness's.
      ...(SERVE_ROOT !== REPO_ROOT ? { serve_root: { path: SERVE_ROOT, commit: execFileSync('git', ['-C', SERVE_ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim() } } : {}),
      load_average: { before: loadavg().map((x) => round(x, 1)), at_start: load0.map((x) => round(x, 1)) },
      limits_mib: { serve: LIMIT.serve / MIB, 'model-server': LIMIT['model-server'] / MIB },
      window_s: WINDOW_S,
      baseline,
      results,
      watchdog_kills: dog.kills,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, JSON.stringify(out, null, 1) + '\n');
    console.log(`\nload average ${out.load_average.at_start.join(', ')} at start, ${out.load_average.before.join(', ')} at the end; wrote ${OUT}`);
  } finally {
    dog.stop();
    await svc.stop();
  }
}

await main();
