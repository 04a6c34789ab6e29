/**
 * Gateway benchmark: requests/s and p50/p99 latency with autocannon, against the fake model server
 * (the integrator re-runs it with MODEL_SERVER_URL pointing at a real one).
 *   node --import tsx bench/gateway/run.ts [--duration 5] [--connections 16] [--out bench/results/gateway.json]
 * Scenarios: /compare with 1k and 10k Facenet vectors (JSON targets vs targets_b64); /verify of two
 * images through the gateway vs the model server directly (gateway overhead); 3× capacity overload
 * (rejection latency, RSS bound).
 */
import autocannon from 'autocannon';
import { writeFileSync, readFileSync, mkdirSync } from 'node:fs';
import { resolve, dirname } from 'node:path';
import { cpus, totalmem } from 'node:os';
import { request } from 'undici';
import { startFakeModelServer, startGateway, setFault, type Proc } from '../../test/helpers/procs.js';
import { makePng } from '../../test/helpers/images.js';
import { encodeFrame, FRAME_CONTENT_TYPE, type VerifyHeader } from '../../src/model-client/protocol.js';
import { REPO_ROOT } from '../../test/helpers/shared.js';
import { simdInfo } from '../lib/machine.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const DURATION = Number(arg('duration', '5'));
const CONNECTIONS = Number(arg('connections', '16'));
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/gateway.json'));
const KEY = 'bench-key';
const DIMS = 128;

function rss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** user+system CPU time of a process in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}
let CPU_PIDS: number[] = [];

function vectors(n: number): number[][] {
  let s = 12345;
  const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) * 2 - 1;
  return Array.from({ length: n }, () => Array.from({ length: DIMS }, rnd).map((x) => Math.fround(x)));
}

interface Row { name: string; rps: number; p50_ms: number; p99_ms: number; errors: number; non2xx: number; requests: number; body_bytes: number; server_cpu_ms_per_request: number }

async function cannon(name: string, url: string, body: string | Buffer, headers: Record<string, string>, connections = CONNECTIONS): Promise<Row> {
  const c0 = CPU_PIDS.map(cpuMs);
  const r = await autocannon({ url, method: 'POST', body, headers, connections, duration: DURATION, pipelining: 1, timeout: 60 });
  const row = { name, rps: Math.round(r.requests.average * 10) / 10, p50_ms: r.latency.p50, p99_ms: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, requests: r.requests.total, body_bytes: Buffer.byteLength(body), server_cpu_ms_per_request: 0 };
  const cpu = CPU_PIDS.map((p, i) => cpuMs(p) - c0[i]!).reduce((a, b) => a + b, 0);
  row.server_cpu_ms_per_request = r.requests.total > 0 ? Math.round((cpu / r.requests.total) * 1000) / 1000 : 0;
  process.stderr.write(`${name}: ${row.rps} req/s p50 ${row.p50_ms} ms p99 ${row.p99_ms} ms non2xx ${row.non2xx} cpu/req ${row.server_cpu_ms_per_request} ms\n`);
  return row;
}

async function overload(base: string, ms: Proc, gwPid: number, capacity: number): Promise<Record<string, unknown>> {
  // Model server answers in 100 ms; 4 upstream slots + 8 queue places = 12 requests of capacity.
  await setFault(ms.port, 'none', 100);
  const concurrency = capacity * 3;
  const png = makePng(32, 32, 5).toString('base64');
  const body = JSON.stringify({ img: png });
  const lat: Record<string, number[]> = {};
  const end = Date.now() + DURATION * 1000;
  let maxRss = 0;
  const sampler = setInterval(() => (maxRss = Math.max(maxRss, rss(gwPid))), 100);
  const rss0 = rss(gwPid);
  const cpu0 = cpuMs(gwPid);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const t0 = performance.now();
        const r = await request(`${base}/represent`, { method: 'POST', body, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' } });
        const j = (await r.body.json().catch(() => ({}))) as { error?: string };
        const k = r.statusCode === 200 ? 'ok' : (j.error ?? String(r.statusCode));
        (lat[k] ??= []).push(performance.now() - t0);
      }
    }),
  );
  clearInterval(sampler);
  await setFault(ms.port, 'none', 0);
  const pct = (a: number[], p: number) => { const s = [...a].sort((x, y) => x - y); return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0) * 100) / 100; };
  const total = Object.values(lat).reduce((a, v) => a + v.length, 0);
  const out: Record<string, unknown> = { concurrency, capacity, duration_s: DURATION, rss_before_bytes: rss0, rss_max_bytes: maxRss, gateway_cpu_ms_per_request: Math.round(((cpuMs(gwPid) - cpu0) / Math.max(1, total)) * 1000) / 1000 };
  for (const [k, v] of Object.entries(lat)) out[k] = { count: v.length, p50_ms: pct(v, 50), p99_ms: pct(v, 99), max_ms: pct(v, 100) };
  process.stderr.write(`overload: ${JSON.stringify(out)}\n`);
  return out;
}

const LOAD0 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

async function main(): Promise<void> {
  const external = process.env['MODEL_SERVER_URL'];
  const ms = external ? null : await startFakeModelServer();
  const msUrl = external ?? `http://127.0.0.1:${ms!.port}`;
  const common = {
    FACECOMPUTE_MODEL_SERVER_URLS: msUrl,
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '100000000',
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '10000',
    FACECOMPUTE_LOG_LEVEL: 'error',
    TEST_KEYS: JSON.stringify([{ key: KEY, accountId: 'bench', kind: 'rest', credits: 1e12 }]),
  };
  const gw = await startGateway({ ...common, FACECOMPUTE_QUEUE_CAPACITY: '1024', FACECOMPUTE_UPSTREAM_CONCURRENCY: '32' });
  const base = `http://127.0.0.1:${gw.port}`;
  const H = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const rows: Row[] = [];
  try {
    await request(`${base}/capabilities`).then((r) => r.body.dump());
    // server CPU per request: the gateway's own CPU (plus the model server's where it is called)
    CPU_PIDS = [gw.proc.pid!];
    const source = vectors(1)[0]!;
    for (const n of [1000, 10000]) {
      const t = vectors(n);
      rows.push(await cannon(`compare_${n}_json`, `${base}/compare`, JSON.stringify({ source: { embedding: source }, targets: t, top_k: 10 }), H));
      const b64 = Buffer.from(new Float32Array(t.flat()).buffer).toString('base64');
      rows.push(await cannon(`compare_${n}_b64`, `${base}/compare`, JSON.stringify({ source: { embedding: source }, targets_b64: b64, top_k: 10 }), H));
    }
    const a = makePng(64, 64, 1);
    const b = makePng(64, 64, 2);
    CPU_PIDS = ms ? [gw.proc.pid!, ms.proc.pid!] : [gw.proc.pid!];
    rows.push(await cannon('verify_images_via_gateway', `${base}/verify`, JSON.stringify({ img1: a.toString('base64'), img2: b.toString('base64') }), H));
    const frame = encodeFrame(<VerifyHeader>{ op: 'verify', model_name: 'Facenet', detector_backend: 'opencv', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base', img1: { image: 0 }, img2: { image: 1 }, distance_metric: 'cosine', threshold: null }, [a, b]);
    CPU_PIDS = ms ? [ms.proc.pid!] : [];
    rows.push(await cannon('verify_images_model_server_direct', `${msUrl}/internal/verify`, frame, { 'content-type': FRAME_CONTENT_TYPE }));
    CPU_PIDS = [gw.proc.pid!];
    rows.push(await cannon('verify_embeddings_via_gateway', `${base}/verify`, JSON.stringify({ img1: vectors(1)[0], img2: source }), H));
  } finally {
    gw.kill('SIGKILL');
  }
  let over: Record<string, unknown> | null = null;
  if (ms) {
    const small = await startGateway({ ...common, FACECOMPUTE_UPSTREAM_CONCURRENCY: '4', FACECOMPUTE_QUEUE_CAPACITY: '8', FACECOMPUTE_QUEUE_TIMEOUT_MS: '2000' });
    try {
      over = await overload(`http://127.0.0.1:${small.port}`, ms, small.proc.pid!, 12);
    } finally {
      small.kill('SIGKILL');
    }
    ms.kill('SIGKILL');
  }
  const viaGw = rows.find((r) => r.name === 'verify_images_via_gateway');
  const direct = rows.find((r) => r.name === 'verify_images_model_server_direct');
  const result = {
    generated_at: new Date().toISOString(),
    command: `node --import tsx bench/gateway/run.ts --duration ${DURATION} --connections ${CONNECTIONS}`,
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? '', total_mem_bytes: totalmem(), node: process.version, simd: simdInfo() },
    model_server: external ? external : 'fake (test/helpers/fake-model-server.ts, sha256 embeddings)',
    compare_core: 'src/native/compare.ts (TEMPORARY pure-TS stand-in unless the native binding has landed)',
    connections: CONNECTIONS,
    duration_s: DURATION,
    scenarios: rows,
    gateway_overhead: viaGw && direct ? { p50_ms: viaGw.p50_ms - direct.p50_ms, p99_ms: viaGw.p99_ms - direct.p99_ms, rps_ratio: Math.round((viaGw.rps / direct.rps) * 1000) / 1000, gateway_cpu_ms_per_request: Math.round((viaGw.server_cpu_ms_per_request - direct.server_cpu_ms_per_request) * 1000) / 1000 } : null,
    load_average_at_start: LOAD0,
    note: 'Shared 2-core machine: latency and req/s include scheduling delay from other processes (see load_average_at_start); server_cpu_ms_per_request is the robust figure.',
    overload_3x: over,
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  process.stderr.write(`wrote ${OUT}\n`);
}

await main();
process.exit(0);
