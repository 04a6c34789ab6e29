/**
 * `facecompute serve` supervises its model-server child (src/cli/supervisor.ts), end to end with the
 * real model server: once a child killed with `kill -9` is gone, compute answers `503 service_warming` with
 * Retry-After (not 502) and /readiness says `warming` until the restarted child is ready, then 200;
 * crashes in a short window are `error` `model_server_crashloop`; a frozen child (kill -STOP) is
 * `503 model_server_unavailable` within the readiness timeout; and a child whose parent is killed
 * does not outlive it. The restart delay is set long enough (1.5 s) that the warming window cannot
 * be missed however slow the machine is.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT, deepfaceImage } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';

/** Child pids of `pid` running the model server, from /proc (Linux; tsx's esbuild is a child too). */
function modelServerChildrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== pid || fields[0] === 'Z') continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes('model-server')) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Niceness of every thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat). */
function niceness(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function until<T>(what: string, f: () => Promise<T | null>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Readiness {
  status: number;
  body: { status: string; ready: boolean; warming: boolean; error: string };
}

t.test('serve restarts a killed model server; compute is service_warming meanwhile', { timeout: 600_000 }, async (t) => {
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, modelServerEnv(modelServer), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-supervision-')),
    FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,skip',
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '100',
    FACECOMPUTE_RESTART_BACKOFF_MS: '1500',
    FACECOMPUTE_RESTART_BACKOFF_MAX_MS: '3000',
    FACECOMPUTE_CRASHLOOP_RESTARTS: '2',
    // Each answer must show the child's state at that moment (test/readiness-cache.test.ts covers the cache).
    FACECOMPUTE_READINESS_CACHE_MS: '0',
  });
  const logs: string[] = [];
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const children = new Set<number>();
  t.teardown(() => {
    for (const c of children) if (alive(c)) process.kill(c, 'SIGKILL');
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${gateway}`;
  const readiness = async (): Promise<Readiness> => {
    const r = await fetch(`${base}/readiness`);
    return { status: r.status, body: (await r.json()) as Readiness['body'] };
  };
  /** Polls readiness until 200; every answer before it must be `allowed`. */
  const untilReady = async (allowed: (r: Readiness) => boolean): Promise<Readiness[]> => {
    const seen: Readiness[] = [];
    await until('readiness 200', async () => {
      if (proc.exitCode !== null) throw new Error(`serve exited ${proc.exitCode}: ${logs.join('').slice(-3000)}`);
      const r = await readiness().catch(() => null);
      if (r) seen.push(r);
      return r?.status === 200 ? r : null;
    }, 240_000);
    for (const r of seen.slice(0, -1)) if (!allowed(r)) t.fail(`unexpected readiness ${JSON.stringify(r)}`);
    return seen;
  };
  const childPid = async (): Promise<number> => {
    const pid = await until('the model-server child', async () => modelServerChildrenOf(proc.pid!)[0] ?? null, 60_000);
    children.add(pid);
    return pid;
  };

  await untilReady(() => true);
  const signup = (await (await fetch(`http://127.0.0.1:${consolePort}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const created = await fetch(`http://127.0.0.1:${consolePort}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${signup.session_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'supervision' }),
  });
  const key = ((await created.json()) as { key: string }).key;
  const img = (n: string) => readFileSync(deepfaceImage(n)).toString('base64');
  const verifyBody = JSON.stringify({ img1: img('img5.jpg'), img2: img('img6.jpg'), model_name: 'Dlib' });
  const verify = async () => {
    const r = await fetch(`${base}/verify`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: verifyBody });
    return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as { error?: string; detail?: string; verified?: boolean } };
  };
  const before = await verify();
  t.equal(before.status, 200, `verify works before the crash: ${JSON.stringify(before.body)}`);

  // The front door before inference: every thread of the child runs 5 (the default) below serve,
  // which keeps the niceness it was started with (ours: tests may run under `nice`).
  const own = getPriority();
  const first = await childPid();
  const nice = niceness(first);
  t.ok(nice.length > 1 && nice.every((n) => n === Math.min(19, own + 5)), `model-server threads at niceness ${own} + 5: ${nice.join(',')}`);
  t.same(niceness(proc.pid!).filter((n) => n !== own), [], 'serve itself keeps its priority');

  // Crash 1: kill -9 the child. A request already in flight, or racing the kill to a child that has
  // accepted its connection but not yet died, is lost with it (502 upstream_lost, charged: issue 24,
  // a frame that reached a model server is never resent); the restart is what this test watches, so
  // it asks once the child is gone.
  process.kill(first, 'SIGKILL');
  await until('the killed child to be gone', async () => (modelServerChildrenOf(proc.pid!).includes(first) ? null : true), 30_000);
  const during = await verify();
  t.equal(during.status, 503, `compute during the restart: ${JSON.stringify(during.body)}`);
  t.equal(during.body.error, 'service_warming', 'service_warming, not upstream_failed');
  t.ok(Number(during.retryAfter) >= 1, `Retry-After ${during.retryAfter}`);
  const r1 = await readiness();
  t.equal(r1.status, 503);
  t.equal(r1.body.status, 'warming', 'readiness: warming while restarting');
  t.equal(r1.body.warming, true);
  await untilReady((r) => r.status === 503 && r.body.status === 'warming');
  const second = await childPid();
  t.not(second, first, 'a new child');
  const after = await verify();
  t.equal(after.status, 200, 'verify works after the restart');
  t.same(after.body.verified, before.body.verified, 'the same decision');

  // Crash 2 within the window (FACECOMPUTE_CRASHLOOP_RESTARTS=2): a crash loop.
  process.kill(second, 'SIGKILL');
  await until('the crash to be seen', async () => ((await readiness()).body.status !== 'ready' ? true : null), 30_000);
  const r2 = await readiness();
  t.equal(r2.status, 503);
  t.equal(r2.body.status, 'error', 'readiness: error in a crash loop');
  t.equal(r2.body.error, 'model_server_crashloop');
  const loop = await verify();
  t.equal(loop.status, 503);
  t.equal(loop.body.error, 'service_warming');
  t.match(loop.body.detail, /model_server_crashloop/);
  await untilReady((r) => r.status === 503 && (r.body.error === 'model_server_crashloop' || r.body.status === 'warming'));
  t.pass('the crash loop ends when a child is ready again');

  // Frozen: readiness still answers, within its own timeout.
  const third = await childPid();
  process.kill(third, 'SIGSTOP');
  const t0 = performance.now();
  const frozen = await readiness();
  const frozenMs = performance.now() - t0;
  process.kill(third, 'SIGCONT');
  t.equal(frozen.status, 503);
  t.equal(frozen.body.error, 'model_server_unavailable');
  // model_server_unavailable is the readiness deadline's answer (the default FACECOMPUTE_READINESS_TIMEOUT_MS,
  // 800 ms), never the 60 s upstream timeout's; the lower bound shows it waited for that deadline. An
  // upper bound would measure the machine (bench/resilience/restart.ts measures the figure).
  t.ok(frozenMs >= 750, `answered at the readiness deadline (${frozenMs.toFixed(0)} ms)`);
  await untilReady(() => true);

  // serve killed outright: its child does not outlive it (the IPC channel closes).
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGKILL');
  await exited;
  await until('the orphaned child to exit', async () => (alive(third) ? null : true), 30_000);
  t.pass('the child exits with its parent');
  t.match(logs.join(''), /"msg":"child exited; restarting"/, 'each crash is logged');
});
