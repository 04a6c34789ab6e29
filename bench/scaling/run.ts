/**
 * The capacity model of docs/scaling.md: what one request costs each tier, measured, then the tiers
 * put together by simulation (bench/scaling/simulate.ts), since this machine has 2 cores and cannot
 * run a cluster.
 *
 *   npm run bench:scaling -- [--images 20] [--requests 300] [--out bench/results/scaling.json] [--provider cpu|cuda]
 *
 * Measured (CPU time from /proc or process.cpuUsage, which is what a core is busy for, and much less
 * sensitive to a shared machine's noise than wall time):
 *   - model server: CPU ms per image, for every installed model with every detector, one request at a
 *     time in a process limited to one libuv thread and one ONNX Runtime thread;
 *   - gateway: CPU ms per /verify of two JPEG data URIs (auth, limits, body parsing, image checks,
 *     forwarding), against the fake model server, at concurrency 4;
 *   - PostgreSQL and Redis (FACECOMPUTE_TEST_DATABASE_URL / FACECOMPUTE_TEST_REDIS_URL, the test
 *     services): server CPU ms for one request's accounts and limiter work (key lookup, one call
 *     consumed, window hit, concurrency slot taken and given back).
 * Simulated: p50/p99 against offered load for 1–16 model-server replicas, and the load each size
 * carries within a p99 objective.
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { request } from 'undici';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config/index.js';
import { createAccountsStore } from '../../src/accounts/index.js';
import { createRedisLimiter } from '../../src/service/limits/redis.js';
import { startFakeModelServer, startGateway } from '../../test/helpers/procs.js';
import { machineInfo } from '../lib/machine.js';
import { DEEPFACE_DATA, MODELS_CACHE, REPO_ROOT, SHARED_WEIGHTS_DIR } from '../lib/paths.js';
import { processCpuMs, quantile, sumCpuMs } from './cpu.js';
import { maxLoadWithin, simulate, type TierSpec } from './simulate.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const IMAGES = Number(arg('images', '20'));
const REQUESTS = Number(arg('requests', '300'));
const OUT = resolve(REPO_ROOT, arg('out', 'bench/results/scaling.json'));
const DETECTORS = ['opencv', 'yunet', 'retinaface', 'skip'];
const MODELS = ['Facenet', 'Dlib'];
// cuda: the model server's part on a GPU node (the CUDA image or onnxruntime-node's CUDA binaries).
const PROVIDER = arg('provider', 'cpu');

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, mean: s.reduce((a, b) => a + b, 0) / s.length, p50: quantile(s, 0.5), p90: quantile(s, 0.9), p99: quantile(s, 0.99) };
};
const r1 = (x: number) => Math.round(x * 10) / 10;

async function measureModelServer(): Promise<Array<Record<string, any>>> {
  const combos = MODELS.flatMap((model) => DETECTORS.map((detector) => ({ model, detector })));
  const env: Record<string, string> = {
    ...(Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FACECOMPUTE_'))) as Record<string, string>),
    UV_THREADPOOL_SIZE: '1',
    FACECOMPUTE_ORT_INTRA_OP_THREADS: '1',
    FACECOMPUTE_ORT_PROVIDER: PROVIDER,
    FACECOMPUTE_BATCH_WINDOW_MS: '0',
    FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR,
    FACECOMPUTE_MODELS_CACHE: MODELS_CACHE,
    FACECOMPUTE_ALLOWED_MODELS: MODELS.join(','),
    FACECOMPUTE_DEFAULT_MODEL: 'Dlib',
    FACECOMPUTE_LOG_LEVEL: 'warn',
    SCALING_IMAGES: String(IMAGES),
    SCALING_COMBOS: JSON.stringify(combos),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench/scaling/model-server-child.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  if (code !== 0) throw new Error(`model-server measurement exited ${code}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as Array<Record<string, any>>;
}

async function measureGateway(): Promise<{ cpu_ms_per_request: number; requests: number; body_bytes: number }> {
  const key = 'scaling-key';
  const ms = await startFakeModelServer();
  const gw = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_QUEUE_CAPACITY: '1024', FACECOMPUTE_UPSTREAM_CONCURRENCY: '32', FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '64', TEST_KEYS: JSON.stringify([{ key, accountId: 'scaling', kind: 'rest', credits: 1e12 }]) });
  try {
    const img = (n: string) => `data:image/jpeg;base64,${readFileSync(join(DEEPFACE_DATA, n)).toString('base64')}`;
    const body = JSON.stringify({ img1: img('img1.jpg'), img2: img('img2.jpg'), model_name: 'Facenet' });
    const send = async () => {
      const r = await request(`http://127.0.0.1:${gw.port}/verify`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } });
      await r.body.dump();
      if (r.statusCode !== 200) throw new Error(`gateway answered ${r.statusCode}`);
    };
    for (let i = 0; i < 20; i++) await send();
    const c0 = processCpuMs(gw.proc.pid!);
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next++ < REQUESTS) await send();
    }));
    return { cpu_ms_per_request: (processCpuMs(gw.proc.pid!) - c0) / REQUESTS, requests: REQUESTS, body_bytes: Buffer.byteLength(body) };
  } finally {
    gw.kill('SIGKILL');
    ms.kill('SIGKILL');
  }
}

/** The accounts database and the limiter: server CPU for one compute request's work. */
async function measureStores(): Promise<Record<string, unknown>> {
  const dbUrl = process.env['FACECOMPUTE_TEST_DATABASE_URL'];
  const redisUrl = process.env['FACECOMPUTE_TEST_REDIS_URL'];
  if (!dbUrl || !redisUrl) return { skipped: 'FACECOMPUTE_TEST_DATABASE_URL and FACECOMPUTE_TEST_REDIS_URL not set (source scripts/test-services.sh; start_test_services)' };
  const config = loadConfig({ FACECOMPUTE_DATABASE_URL: dbUrl, FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-scaling-')), FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000000', FACECOMPUTE_LOG_LEVEL: 'silent' });
  const store = await createAccountsStore(config);
  const limiter = createRedisLimiter(redisUrl, { requests: 1e9, windowMs: 60_000, concurrent: 1000 }, `fc:scaling:${process.pid}:`);
  try {
    const s = await store.signupAnonymous('192.0.2.1');
    const k = await store.createKey(s.account.id, 'rest', 'scaling');
    const one = async () => {
      const auth = await store.authenticate(k.key, 'rest');
      await limiter.hit(auth.accountId);
      const slot = await limiter.acquire(auth.accountId);
      await store.consume(auth.accountId);
      await limiter.release(auth.accountId, slot.slot);
    };
    const run = async (n: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (next++ < n) await one();
      }));
    };
    await run(50);
    // The backends of this database's connections (the pool is open now) and the Redis server.
    const pgPids = (await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(store.db)).rows.map((r) => Number(r.pid));
    const info = execFileSync('redis-cli', ['-u', redisUrl, 'info', 'server'], { encoding: 'utf8' });
    const redisPid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    const [p0, r0, t0] = [sumCpuMs(pgPids), processCpuMs(redisPid), performance.now()];
    await run(REQUESTS * 4);
    const [p1, r1_, t1] = [sumCpuMs(pgPids), processCpuMs(redisPid), performance.now()];
    const n = REQUESTS * 4;
    return {
      requests: n,
      postgres_cpu_ms_per_request: (p1 - p0) / n,
      redis_cpu_ms_per_request: (r1_ - r0) / n,
      client_ms_per_request_at_c4: ((t1 - t0) / n) * 4,
      note: 'test services: PostgreSQL with fsync=off on loopback; a durable primary adds a WAL flush per consumed call',
    };
  } finally {
    await limiter.close();
    await store.close();
  }
}

function table(head: string[], rows: Array<Array<string | number>>): void {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r: Array<string | number>) => r.map((c, i) => String(c).padEnd(w[i]!)).join('  ');
  console.log(line(head));
  for (const r of rows) console.log(line(r));
  console.log();
}

async function main(): Promise<void> {
  const machine = { ...machineInfo(), loadavg_start: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') };
  console.log(`scaling: model server (${IMAGES} images per combination)…`);
  const msRows = await measureModelServer();
  const perCore = msRows.filter((r) => !r['skipped']).map((r) => {
    const cpu = stats(r['cpu_ms'] as number[]);
    const wall = stats(r['wall_ms'] as number[]);
    return { model: r['model'], detector: r['detector'], cpu_ms_per_image: { mean: r1(cpu.mean), p50: r1(cpu.p50), p90: r1(cpu.p90) }, wall_ms_p50: r1(wall.p50), images_per_s_per_core: r1(1000 / cpu.mean), samples: r['cpu_ms'] as number[] };
  });
  table(['model', 'detector', 'CPU ms/image (mean, p50, p90)', 'images/s per core'], perCore.map((r) => [r.model as string, r.detector as string, `${r.cpu_ms_per_image.mean}, ${r.cpu_ms_per_image.p50}, ${r.cpu_ms_per_image.p90}`, r.images_per_s_per_core]));
  for (const r of msRows.filter((r) => r['skipped'])) console.log(`not measured: ${r['model']}/${r['detector']}: ${r['skipped']}`);

  console.log('scaling: gateway…');
  const gateway = await measureGateway();
  console.log(`gateway: ${r1(gateway.cpu_ms_per_request)} CPU ms per /verify (${gateway.body_bytes} bytes of JSON)\n`);
  console.log('scaling: PostgreSQL and Redis…');
  const stores = await measureStores();
  console.log(JSON.stringify(stores), '\n');

  // ---- simulation: /verify with two images, the default model (Facenet) + opencv, else Dlib + opencv --
  const ref = perCore.find((r) => r.model === 'Facenet' && r.detector === 'opencv') ?? perCore.find((r) => r.model === 'Dlib' && r.detector === 'opencv')!;
  const workload = `/verify with two images, ${String(ref.model)} + opencv`;
  const verifySamples = ref.samples.flatMap((a) => ref.samples.map((b) => a + b));
  const constant = (ms: number) => [Math.max(ms, 0.001)];
  const pg = (stores['postgres_cpu_ms_per_request'] as number | undefined) ?? 0.5;
  const redis = (stores['redis_cpu_ms_per_request'] as number | undefined) ?? 0.05;
  const CORES = 2;
  const tiersFor = (msReplicas: number, gwReplicas = Math.max(2, Math.ceil(msReplicas / 4))): TierSpec[] => [
    { name: 'gateway', replicas: gwReplicas, cores: CORES, samples: constant(gateway.cpu_ms_per_request) },
    { name: 'redis', replicas: 1, cores: 1, samples: constant(redis) },
    { name: 'postgres', replicas: 1, cores: 4, samples: constant(pg) },
    { name: 'model-server', replicas: msReplicas, cores: CORES, samples: verifySamples },
  ];
  const SLO_MS = 2000;
  const perReplica = (1000 / stats(verifySamples).mean) * CORES;
  const curve = [1, 2, 4, 8, 16].map((m) => {
    const best = maxLoadWithin(tiersFor(m), SLO_MS, perReplica * m * 1.2);
    return { model_server_replicas: m, gateway_replicas: tiersFor(m)[0]!.replicas, max_rps_within_p99_slo: r1(best.rps), p50_ms: r1(best.at.latency_ms.p50), p99_ms: r1(best.at.latency_ms.p99), utilization: Object.fromEntries(best.at.tiers.map((x) => [x.name, Math.round(x.utilization * 1000) / 1000])) };
  });
  console.log(`simulated (${workload}, ${CORES}-core replicas, p99 objective ${SLO_MS} ms):`);
  table(['model servers', 'gateways', 'req/s within p99', 'p50 ms', 'p99 ms', 'model-server util', 'gateway util'], curve.map((c) => [c.model_server_replicas, c.gateway_replicas, c.max_rps_within_p99_slo, c.p50_ms, c.p99_ms, c.utilization['model-server']!, c.utilization['gateway']!]));
  const loadCurve = [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95].map((f) => {
    const r = simulate(tiersFor(4), perReplica * 4 * f, 20_000, 11);
    return { offered_fraction_of_capacity: f, offered_rps: r1(r.offered_rps), p50_ms: r1(r.latency_ms.p50), p99_ms: r1(r.latency_ms.p99) };
  });
  console.log('simulated latency against load, 4 model-server replicas:');
  table(['offered / capacity', 'req/s', 'p50 ms', 'p99 ms'], loadCurve.map((c) => [c.offered_fraction_of_capacity, c.offered_rps, c.p50_ms, c.p99_ms]));

  // Which tier saturates first: requests/s one core of each tier can carry.
  const perCoreRps = {
    [`model-server (${workload})`]: r1(1000 / stats(verifySamples).mean),
    gateway: r1(1000 / gateway.cpu_ms_per_request),
    ...(stores['postgres_cpu_ms_per_request'] ? { postgres: r1(1000 / pg) } : {}),
    ...(stores['redis_cpu_ms_per_request'] ? { redis: r1(1000 / redis) } : {}),
  };
  console.log('requests/s per core, by tier:', perCoreRps);
  const result = {
    machine: { ...machine, loadavg_end: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') },
    provider: PROVIDER,
    how: 'CPU time per request from /proc and process.cpuUsage; model server in-process with UV_THREADPOOL_SIZE=1, 1 ONNX Runtime thread, batching off, one request at a time, enforce_detection=false, DeepFace test images',
    model_server_per_core: perCore.map(({ samples: _s, ...r }) => r),
    not_measured: msRows.filter((r) => r['skipped']).map((r) => `${r['model']}/${r['detector']}: ${r['skipped']}`),
    gateway,
    stores,
    requests_per_s_per_core: perCoreRps,
    simulated: { workload, replica_cores: CORES, p99_objective_ms: SLO_MS, capacity_by_replicas: curve, latency_against_load_4_replicas: loadCurve },
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${OUT}`);
}

await main();
process.exit(0);
