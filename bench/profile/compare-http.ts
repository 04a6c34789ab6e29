/**
 * Where a binary /compare request's time goes: `facecompute serve` with the same settings as the
 * compare suite, N sequential 100,000 × 128 binary requests (top_k 10) interleaved with the same bytes
 * posted to the discard server (the roofline), p50 and server CPU per request of each. With --cpu-prof
 * every process of the service imports the given module (NODE_OPTIONS=--import; --cpu-prof is not
 * allowed there), which is sent SIGUSR2 before the timed requests and again after them: a module
 * that starts a V8 profile on the first and writes it on the second profiles only those requests.
 *
 * With --baseline DIR, a second service from another build (a directory holding copies of bin/,
 * dist/, package.json, index.js, the .node addon, models/ and a node_modules link) is timed in the
 * same rounds: before/after figures under the same load. With --contiguous, this build is also sent
 * the same request with its text fields after the binary part (mode `contiguous`), which keeps the
 * targets in one buffer and compares them after the body: the streaming path's A/B in one process.
 *
 *   node --import tsx bench/profile/compare-http.ts [--n 100000] [--requests 15] [--cpu-prof preload.mjs] [--baseline DIR [--baseline-node-options OPTS]] [--warm 1000,10000] [--node-options OPTS] [--all] [--contiguous]
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { REPO_ROOT } from '../lib/paths.js';
import { freePort, logDir, start, treeCpuSeconds, waitFor } from '../lib/proc.js';
import { createKey, startOurs } from '../lib/services.js';
import { summarize } from '../lib/stats.js';
import { loadAverage, processTree } from '../lib/proc.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '100000' }, requests: { type: 'string', default: '15' }, 'cpu-prof': { type: 'string' }, all: { type: 'boolean' }, contiguous: { type: 'boolean' }, baseline: { type: 'string' }, warm: { type: 'string' }, 'baseline-node-options': { type: 'string' }, 'node-options': { type: 'string' } } });
const N = Number(values.n);
const DIMS = 128;
const BOUNDARY = 'facecompute-bench-boundary';

/**
 * The suite's body for `n` targets (bench/suites/compare.ts): text fields, then the binary part (the
 * gateway's streaming path); with `fieldsAfter` the binary part first (its contiguous path).
 */
function bodyOf(n: number, fieldsAfter = false): Buffer {
  const t = new Float32Array(n * DIMS);
  let s = n >>> 0;
  for (let i = 0; i < t.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    t[i] = Math.round(((s / 2 ** 32) * 0.6 - 0.3) * 1e6) / 1e6;
  }
  const source = Array.from(t.subarray(0, DIMS));
  const fields = { source: JSON.stringify({ embedding: source }), model_name: 'Dlib', distance_metric: 'cosine', top_k: '10' };
  const text = Object.entries(fields).map(([name, value]) => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  const binary = [Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="targets"; filename="targets.f32"\r\nContent-Type: application/octet-stream\r\n\r\n`), Buffer.from(t.buffer), Buffer.from('\r\n')];
  return Buffer.concat([...(fieldsAfter ? [...binary, ...text] : [...text, ...binary]), Buffer.from(`--${BOUNDARY}--\r\n`)]);
}
const body = bodyOf(N);
const bodyAfter = bodyOf(N, true);

/** Minor page faults of process `pid` so far (a fresh page touched: 4 KiB zeroed by the kernel). */
function minorFaults(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
  } catch {
    return 0;
  }
}

/** utime+stime ticks (10 ms) of every thread of `pid`, by thread id, with the thread's name. */
function threadCpu(pid: number): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(tid, { name: tid === String(pid) ? 'main' : name, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the thread ended
    }
  }
  return out;
}

const logs = logDir();
mkdirSync(logs, { recursive: true });
const discardPort = await freePort();
const discard = start(process.execPath, [join(REPO_ROOT, 'bench', 'lib', 'discard-server.mjs')], { env: { ...process.env, PORT: String(discardPort) }, cwd: REPO_ROOT, logPath: join(logs, 'profile-discard.log') });
const env: Record<string, string> = { FACECOMPUTE_MAX_COMPARE_BYTES: String(256 * 2 ** 20), FACECOMPUTE_MAX_TARGETS: '100000', FACECOMPUTE_MAX_SOURCES: '1000' };
if (values['cpu-prof']) env['NODE_OPTIONS'] = `--import=${values['cpu-prof']}`;
// --node-options '--trace-gc': V8 flags for this build's service (its log shows what they print).
if (values['node-options']) env['NODE_OPTIONS'] = `${env['NODE_OPTIONS'] ?? ''} ${values['node-options']}`.trim();
// A service that fails to start must not leave the others running.
const ours = await startOurs({ logDir: logs, label: 'profile-compare', env }).catch(async (err: unknown) => {
  await discard.stop();
  throw err;
});
// --baseline DIR: another build (a copy of bin/, dist/ and the addon), served beside this one.
const base = values.baseline
  ? await startOurs({ logDir: logs, label: 'profile-compare-baseline', env: { ...env, NODE_OPTIONS: values['baseline-node-options'] ?? '' }, root: values.baseline }).catch(async (err: unknown) => {
      await Promise.all([ours.stop(), discard.stop()]);
      throw err;
    })
  : null;
process.stdout.write(`serve pid ${ours.proc.pid}${base ? `, baseline serve pid ${base.proc.pid}` : ''}\n`);
const agent = new Agent({ connections: 2, keepAliveTimeout: 60_000 });
try {
  const roofUrl = `http://127.0.0.1:${discardPort}/discard`;
  await waitFor(async () => (await fetch(roofUrl, { method: 'POST', body: 'x' })).status === 200, 10_000, discard);
  const key = await createKey(ours.consoleUrl);
  const baseKey = base ? await createKey(base.consoleUrl) : '';
  const targets = [
    { mode: 'binary', url: `${ours.gatewayUrl}/compare`, pid: ours.proc.pid, key, payload: body },
    ...(values.contiguous ? [{ mode: 'contiguous', url: `${ours.gatewayUrl}/compare`, pid: ours.proc.pid, key, payload: bodyAfter }] : []),
    ...(base ? [{ mode: 'baseline', url: `${base.gatewayUrl}/compare`, pid: base.proc.pid, key: baseKey, payload: body }] : []),
    { mode: 'roofline', url: roofUrl, pid: discard.pid, key, payload: body },
  ];
  const lat = new Map<string, number[]>(targets.map((x) => [x.mode, []]));
  const cpu = new Map<string, number>(targets.map((x) => [x.mode, 0]));
  const faults = new Map<string, number>(targets.map((x) => [x.mode, 0]));
  const send = async (url: string, key: string, payload: Buffer = body) => {
    const t0 = performance.now();
    const res = await request(url, { method: 'POST', body: payload, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, authorization: `Bearer ${key}` }, dispatcher: agent });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${text.slice(0, 300)}`);
    return performance.now() - t0;
  };
  for (const x of targets) await send(x.url, x.key, x.payload);
  // --warm 1000,10000: smaller bodies first, 30 each to every service, as the compare suite does.
  for (const n of (values.warm ?? '').split(',').filter(Boolean).map(Number)) {
    const small = bodyOf(n);
    const smallAfter = bodyOf(n, true);
    for (let i = 0; i < 30; i++) for (const x of targets) await send(x.url, x.key, x.mode === 'contiguous' ? smallAfter : small);
  }
  const signalProfilers = () => {
    if (values['cpu-prof']) for (const pid of processTree(ours.proc.pid)) process.kill(pid, 'SIGUSR2');
  };
  signalProfilers();
  const threads0 = new Map(targets.map((x) => [x.mode, threadCpu(x.pid)]));
  const load0 = loadAverage();
  for (let i = 0; i < Number(values.requests); i++) {
    for (const x of targets) {
      const c0 = treeCpuSeconds(x.pid);
      const f0 = minorFaults(x.pid);
      lat.get(x.mode)!.push(await send(x.url, x.key, x.payload));
      cpu.set(x.mode, cpu.get(x.mode)! + treeCpuSeconds(x.pid) - c0);
      faults.set(x.mode, faults.get(x.mode)! + minorFaults(x.pid) - f0);
    }
  }
  signalProfilers();
  const threads1 = new Map(targets.map((x) => [x.mode, threadCpu(x.pid)]));
  process.stdout.write(`n=${N} body ${(body.length / 2 ** 20).toFixed(1)} MB, load ${load0.join(' ')} -> ${loadAverage().join(' ')}\n`);
  for (const x of targets) {
    const st = summarize(lat.get(x.mode)!);
    process.stdout.write(`${x.mode.padEnd(9)} p50 ${st.p50.toFixed(1)} ms  p99 ${st.p99.toFixed(1)} ms  min ${Math.min(...lat.get(x.mode)!).toFixed(1)} ms  server CPU ${((cpu.get(x.mode)! * 1000) / st.n).toFixed(0)} ms/request  minor faults ${(faults.get(x.mode)! / st.n).toFixed(0)}/request\n`);
    {
      // Per thread of the serving process (main, libuv pool, V8 workers), ms per request.
      const by: string[] = [];
      for (const [tid, v] of threads1.get(x.mode)!) {
        const ms = ((v.ticks - (threads0.get(x.mode)!.get(tid)?.ticks ?? 0)) * 10) / st.n;
        if (ms > 0) by.push(`${v.name === 'main' ? 'main' : `${v.name}:${tid}`} ${ms.toFixed(1)}`);
      }
      process.stdout.write(`  threads of its process, CPU ms per request: ${by.join(', ')}\n`);
    }
    if (values.all) process.stdout.write(`  in order: ${lat.get(x.mode)!.map((v) => v.toFixed(0)).join(' ')}\n`);
  }
} finally {
  if (values['cpu-prof']) await new Promise((r) => setTimeout(r, 3000));
  await agent.close();
  await ours.stop();
  await base?.stop();
  await discard.stop();
}
