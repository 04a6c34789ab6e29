/**
 * How fast `facecompute serve` heals, on loopback:
 *   node --import tsx bench/resilience/restart.ts [--rounds 5] [--out bench/results/resilience-restart.json]
 * - restart: `kill -9` of the model-server child → /readiness 200 again (polled every 10 ms), each
 *   round after the service is ready; compared with the cold start of the whole service in the same
 *   run (spawn of `serve` → readiness 200), as a ratio;
 * - frozen: `kill -STOP` of the child → time /readiness takes to answer (503 model_server_unavailable),
 *   compared with a normal readiness answer in the same run.
 * Runs the built service (bin/facecompute.js), Dlib with every installed detector, default settings
 * (restart backoff 100 ms, readiness timeout 800 ms) but for the crash window (below).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadavg, tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { processTree } from '../lib/proc.js';
import { startOurs } from '../lib/services.js';
import { machineInfo } from '../lib/machine.js';
import { REPO_ROOT } from '../lib/paths.js';
import { round, summarize } from '../lib/stats.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const ROUNDS = Number(arg('rounds', '5'));
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/resilience-restart.json'));
/**
 * Each round is an isolated crash: with the crash window at its minimum (1 s) and the rounds 1.1 s
 * apart, every restart waits the initial backoff (100 ms), not the doubled delays of a crash loop.
 */
const ENV = { FACECOMPUTE_CRASHLOOP_WINDOW_MS: '1000' };

async function readiness(url: string): Promise<{ status: number; body: { status?: string; error?: string } | null; ms: number }> {
  const t0 = performance.now();
  try {
    const r = await fetch(`${url}/readiness`, { signal: AbortSignal.timeout(120_000) });
    const body = (await r.json()) as { status?: string; error?: string };
    return { status: r.status, body, ms: performance.now() - t0 };
  } catch {
    return { status: 0, body: null, ms: performance.now() - t0 };
  }
}

/** The model-server child of serve (by its command line). */
function childOf(servePid: number): number {
  const child = processTree(servePid).find((p) => p !== servePid && readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').includes('model-server'));
  if (child === undefined) throw new Error('no model-server child');
  return child;
}

async function main(): Promise<void> {
  const logDir = join(tmpdir(), 'facecompute-bench-resilience');
  const coldStarts: number[] = [];
  const restarts: number[] = [];
  const firstWarming: number[] = [];
  const frozen: number[] = [];
  const normal: number[] = [];
  const states = new Set<string>();
  const loadStart = loadavg().map((x) => round(x, 2));
  // Two cold starts (the first also warms the page cache), then the rounds on the second.
  let svc = await startOurs({ logDir, label: 'resilience-cold-1', env: ENV });
  coldStarts.push(svc.readyMs);
  await svc.stop();
  svc = await startOurs({ logDir, label: 'resilience-cold-2', env: ENV });
  coldStarts.push(svc.readyMs);
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const child = childOf(svc.proc.pid);
      const t0 = performance.now();
      process.kill(child, 'SIGKILL');
      let warmingAt: number | null = null;
      for (;;) {
        const r = await readiness(svc.gatewayUrl);
        states.add(`${r.status} ${r.body?.status ?? '-'} ${r.body?.error ?? ''}`.trim());
        if (r.status === 503 && warmingAt === null) warmingAt = performance.now() - t0;
        if (r.status === 200) break;
        if (performance.now() - t0 > 120_000) throw new Error('not ready 120 s after the kill');
        await sleep(10);
      }
      restarts.push(performance.now() - t0);
      if (warmingAt !== null) firstWarming.push(warmingAt);
      process.stderr.write(`restart ${i + 1}: ready ${Math.round(restarts.at(-1)!)} ms after kill -9\n`);
      await sleep(1100); // past the 1 s crash window: the next kill is an isolated crash again
    }
    for (let i = 0; i < ROUNDS; i++) {
      normal.push((await readiness(svc.gatewayUrl)).ms);
      const child = childOf(svc.proc.pid);
      process.kill(child, 'SIGSTOP');
      const r = await readiness(svc.gatewayUrl);
      process.kill(child, 'SIGCONT');
      frozen.push(r.ms);
      states.add(`frozen: ${r.status} ${r.body?.error ?? ''}`);
      process.stderr.write(`frozen ${i + 1}: readiness answered ${r.status} ${r.body?.error} in ${Math.round(r.ms)} ms\n`);
      while ((await readiness(svc.gatewayUrl)).status !== 200) await sleep(20);
    }
  } finally {
    await svc.stop();
  }
  const cold = summarize(coldStarts);
  const rs = summarize(restarts);
  const fz = summarize(frozen);
  const nm = summarize(normal);
  const result = {
    // The machine is shared: its load is reported beside the figures, which are read as ratios.
    machine: { ...machineInfo(), loadavg_start: loadStart, loadavg_end: loadavg().map((x) => round(x, 2)) },
    rounds: ROUNDS,
    restart_ms: { ...rs, all: restarts.map((x) => Math.round(x)) },
    first_503_after_kill_ms: summarize(firstWarming),
    cold_start_ms: { ...cold, all: coldStarts.map((x) => Math.round(x)) },
    restart_vs_cold_start: round(rs.p50 / cold.min, 2),
    frozen_readiness_ms: { ...fz, all: frozen.map((x) => Math.round(x)) },
    normal_readiness_ms: nm,
    frozen_vs_normal_readiness: round(fz.p50 / nm.p50, 1),
    readiness_states_seen: [...states],
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(
    [
      `kill -9 → readiness 200: p50 ${Math.round(rs.p50)} ms, max ${Math.round(rs.max)} ms over ${ROUNDS} rounds (cold start of serve: ${Math.round(cold.min)} ms; ratio ${result.restart_vs_cold_start})`,
      `kill -STOP → readiness answers: p50 ${Math.round(fz.p50)} ms, max ${Math.round(fz.max)} ms (a normal answer: ${round(nm.p50, 1)} ms)`,
      `load average ${result.machine.loadavg_start.join(' ')} → ${result.machine.loadavg_end.join(' ')}`,
      `states seen: ${[...states].join(' | ')}`,
      `written ${OUT}`,
    ].join('\n') + '\n',
  );
}

await main();
