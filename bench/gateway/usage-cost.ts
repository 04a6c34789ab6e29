/**
 * The cost of usage recording per request (issue 28): the real gateway (`facecompute gateway`, SQLite
 * accounts store) answering /verify of two embeddings (no model server: the cheapest charged call, so
 * the recording is the largest share of it), with FACECOMPUTE_USAGE_RETENTION_DAYS=0 (no recorder)
 * and 31 (the default), alternated in the same run. Reports gateway CPU per request (/proc, user +
 * system) and p50/p99 latency, and checks that every answered request was recorded; and, first, the
 * recorder alone in this process (record() on the request path, the batched writes off it).
 *   node --import ./test/setup/loopback-only.mjs --import tsx bench/gateway/usage-cost.ts [--duration 5] [--connections 16] [--rounds 2] [--port 28001]
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { dirname, join, resolve } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { createAccountsStore } from '../../src/accounts/index.js';
import { REPO_ROOT } from '../../test/helpers/shared.js';
import { simdInfo } from '../lib/machine.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const DURATION = Number(arg('duration', '5'));
const CONNECTIONS = Number(arg('connections', '16'));
const ROUNDS = Number(arg('rounds', '2'));
const PORT = Number(arg('port', '28001'));
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/usage-cost.json'));

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

const dataDir = mkdtempSync(join(tmpdir(), 'fc-usage-bench-'));
const env: Record<string, string> = {
  FACECOMPUTE_DATA_DIR: dataDir,
  FACECOMPUTE_LOG_LEVEL: 'silent',
  FACECOMPUTE_HOST: '127.0.0.1',
  FACECOMPUTE_GATEWAY_PORT: String(PORT),
  FACECOMPUTE_METRICS_PORT: '0',
  // Nothing listens there: /verify of two embeddings never calls a model server.
  FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${PORT + 1}`,
  FACECOMPUTE_FREE_CALLS_ANONYMOUS: '100000000',
  FACECOMPUTE_RATE_LIMIT_REQUESTS: '100000000',
  FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1000',
};

// The account and key, made in the same SQLite database the gateway opens.
const store = await createAccountsStore(loadConfig(env));
const { account } = await store.signupAnonymous('127.0.0.1');
const key = (await store.createKey(account.id, 'rest', 'bench')).key;
await store.close();

/**
 * The recorder alone, in this process: CPU of record() (on the request path) and of the batched
 * writes (off it), per request, for 20,000 requests of 50 accounts on the same SQLite database.
 */
async function recorderAlone(): Promise<{ record_us: number; write_us: number; longest_write_ms: number }> {
  const { UsageRecorder } = await import('../../src/accounts/usage/recorder.js');
  const st = await createAccountsStore(loadConfig(env));
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) ids.push((await st.signupAnonymous(`10.1.${i}.1`)).account.id);
  const rec = new UsageRecorder(st.db, { retentionDays: 31, flushMs: 60_000 });
  const N = 20_000;
  const routes = ['/verify', '/represent', '/compare'];
  let recordCpu = 0;
  let longest = 0;
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const a = process.cpuUsage();
    rec.record({ accountId: ids[i % 50]!, keyId: 'k', surface: 'rest', route: routes[i % 3]!, status: 200, error: null, outcome: 'charged', durationMs: 3.2, requestId: `r-${i}`, at: Date.now() });
    const b = process.cpuUsage(a);
    recordCpu += b.user + b.system;
    // Let the early writes (every 500) run, as they would between requests.
    if (i % 500 === 499) {
      // The longest the event loop is held: one transaction (the flush yields between them).
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      await rec.flush();
      h.disable();
      longest = Math.max(longest, h.max / 1e6);
    }
  }
  await rec.close();
  const all = process.cpuUsage(c0);
  await st.close();
  return { record_us: Math.round((recordCpu / N) * 100) / 100, write_us: Math.round(((all.user + all.system - recordCpu) / N) * 10) / 10, longest_write_ms: Math.round(longest * 10) / 10 };
}
const alone = await recorderAlone();
console.log(JSON.stringify({ recorder_alone_cpu_us_per_request: alone }));

const E = Array.from({ length: 128 }, (_, i) => Math.fround(Math.sin(i)));
const body = JSON.stringify({ img1: E, img2: E, model_name: 'Facenet' });

async function startGateway(retention: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'facecompute.js'), 'gateway'], {
    env: { ...process.env, ...env, FACECOMPUTE_USAGE_RETENTION_DAYS: String(retention) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/health`)).ok) return child;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error('the gateway did not start');
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

interface Row {
  usage: 'off' | 'on';
  round: number;
  requests: number;
  non2xx: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_request: number;
}

const rows: Row[] = [];
let recorded = 0;
let answeredWithUsage = 0;
/** Requests answered by the 'on' gateways, warm-ups included. */
let answeredOn = 0;
for (let round = 1; round <= ROUNDS; round++) {
  for (const mode of ['off', 'on'] as const) {
    const child = await startGateway(mode === 'on' ? 31 : 0);
    // Warm-up (JIT, connection pool), not measured.
    const w = await autocannon({ url: `http://127.0.0.1:${PORT}/verify`, method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, connections: CONNECTIONS, duration: 1 });
    const c0 = cpuMs(child.pid!);
    const r = await autocannon({ url: `http://127.0.0.1:${PORT}/verify`, method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, connections: CONNECTIONS, duration: DURATION });
    const cpu = cpuMs(child.pid!) - c0;
    await stop(child);
    if (mode === 'on') answeredOn += w.requests.total + r.requests.total;
    rows.push({ usage: mode, round, requests: r.requests.total, non2xx: r.non2xx, rps: Math.round(r.requests.average), p50_ms: r.latency.p50, p99_ms: r.latency.p99, cpu_us_per_request: Math.round((cpu * 1000) / Math.max(1, r.requests.total)) });
    console.log(JSON.stringify(rows.at(-1)));
  }
}

// Every answered request of the 'on' runs is in the counters (warm-ups included), written by the
// time the gateway exited (it closes its recorder after the drain).
const check = await createAccountsStore(loadConfig(env));
const sum = await check.db.selectFrom('usage_daily').select((s) => s.fn.sum<number>('calls').as('n')).where('account_id', '=', account.id).executeTakeFirst();
recorded = Number(sum?.n ?? 0);
answeredWithUsage = Number((await check.getAccount(account.id)).free_calls.used);
await check.close();
rmSync(dataDir, { recursive: true, force: true });

const mean = (m: 'off' | 'on', k: keyof Row) => {
  const xs = rows.filter((r) => r.usage === m).map((r) => Number(r[k]));
  return xs.reduce((a, b) => a + b, 0) / xs.length;
};
const summary = {
  date: new Date().toISOString(),
  cpus: cpus().length,
  cpu_model: cpus()[0]?.model,
  simd: simdInfo(),
  duration_s: DURATION,
  connections: CONNECTIONS,
  recorder_alone_cpu_us_per_request: alone,
  rows,
  cpu_us_per_request: { off: Math.round(mean('off', 'cpu_us_per_request')), on: Math.round(mean('on', 'cpu_us_per_request')) },
  p99_ms: { off: mean('off', 'p99_ms'), on: mean('on', 'p99_ms') },
  rps: { off: Math.round(mean('off', 'rps')), on: Math.round(mean('on', 'rps')) },
  // Calls charged in all runs (the free-call counter), and those the 'on' runs recorded: the 'on' runs'
  // share of the charged calls must all be there.
  charged_calls_all_runs: answeredWithUsage,
  recorded_calls: recorded,
  // At least the answered ones; requests cut off when autocannon stops are recorded too (499).
  recorded_answered_on: answeredOn,
};
console.log(JSON.stringify({ cpu_us_per_request: summary.cpu_us_per_request, p99_ms: summary.p99_ms, rps: summary.rps, recorded: summary.recorded_calls, answered_with_usage_on: answeredOn }));
if (recorded < answeredOn) {
  console.error(`usage records missing: ${recorded} recorded < ${answeredOn} answered`);
  process.exitCode = 1;
}
mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, JSON.stringify(summary, null, 2) + '\n');
