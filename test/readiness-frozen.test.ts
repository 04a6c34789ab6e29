/**
 * /readiness never hangs on its dependencies: with the model server frozen (kill -STOP: its socket
 * accepts, nothing answers) it is `503 model_server_unavailable` after FACECOMPUTE_READINESS_TIMEOUT_MS,
 * not after the 60 s upstream timeout. Real processes: the gateway and the fake model server.
 * The goal is an answer within 1 s: the default timeout is 800 ms (checked below, a constant), and
 * model_server_unavailable is the answer of that deadline only. Wall-clock upper bounds would measure
 * the machine, so none is asserted; bench/resilience/restart.ts measures the real figure.
 */
import t from 'tap';
import { loadConfig } from '../src/config/index.js';
import { startFakeModelServer, startGateway } from './helpers/procs.js';

t.test('the default readiness timeout answers before a kubelet probe (1 s) gives up', async (t) => {
  const ms = loadConfig({}).capacity.readinessTimeoutMs;
  t.ok(ms < 1000, `FACECOMPUTE_READINESS_TIMEOUT_MS defaults to ${ms} ms`);
});

t.test('a frozen model server: readiness answers 503 model_server_unavailable at once', async (t) => {
  const ms = await startFakeModelServer();
  const gw = await startGateway({
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_UPSTREAM_TIMEOUT_MS: '60000',
    FACECOMPUTE_READINESS_TIMEOUT_MS: '800',
    // Each round must be a check of its own, not the cached answer (test/readiness-cache.test.ts).
    FACECOMPUTE_READINESS_CACHE_MS: '0',
    TEST_KEYS: '[]',
  });
  t.teardown(() => {
    ms.proc.kill('SIGCONT');
    ms.kill('SIGKILL');
    gw.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${gw.port}`;
  const ok = await fetch(`${base}/readiness`);
  t.equal(ok.status, 200, 'ready while the model server answers');

  ms.proc.kill('SIGSTOP');
  const times: number[] = [];
  for (let round = 0; round < 3; round++) {
    const t0 = performance.now();
    const r = await fetch(`${base}/readiness`, { signal: AbortSignal.timeout(50_000) });
    const ms_ = performance.now() - t0;
    const body = (await r.json()) as { status: string; ready: boolean; error: string };
    t.equal(r.status, 503, `round ${round}: 503`);
    t.equal(body.status, 'error');
    t.equal(body.ready, false);
    t.equal(body.error, 'model_server_unavailable', 'the probe timed out: unavailable, not unreachable');
    t.ok(r.headers.get('retry-after'), 'Retry-After');
    // Not before the 800 ms deadline (the frozen model server never answers); when after it is the
    // machine's business, and the code above already says the deadline, not the 60 s timeout, ended it.
    t.ok(ms_ >= 750, `round ${round}: answered at the readiness deadline (${ms_.toFixed(0)} ms)`);
    times.push(ms_);
  }
  t.comment(`answered in ${times.map((x) => x.toFixed(0)).join(', ')} ms`);
  // Health is the gateway's own liveness: unaffected.
  t.equal((await fetch(`${base}/health`)).status, 200);

  ms.proc.kill('SIGCONT');
  let back = 0;
  for (let i = 0; i < 200 && back !== 200; i++) {
    back = (await fetch(`${base}/readiness`)).status;
    if (back !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(back, 200, 'ready again once the model server thaws');
});
