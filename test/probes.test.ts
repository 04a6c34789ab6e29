/**
 * What the Kubernetes probes and the ServiceMonitor of deploy/helm/facecompute rely on: /health and
 * /readiness on the MCP endpoint and the console (readiness failing within about a second when the
 * database or Redis is gone or hung), and the gateway's metrics listener on FACECOMPUTE_METRICS_HOST.
 */
import t from 'tap';
import { BodyBudget } from '../src/http/body-budget.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'node:net';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/app.js';
import { buildMcp } from '../src/mcp/server.js';
import { createLogger } from '../src/logging/logger.js';
import { createMemoryLimiter } from '../src/service/limits/memory.js';
import { CHECK_DEADLINE_MS } from '../src/http/probes.js';
import type { Limiter } from '../src/service/limits/limiter.js';
import type { AccountsPort } from '../src/accounts/api.js';
import type { ComputeService } from '../src/service/compute-service.js';
import { PACKAGE_VERSION } from '../src/package-root.js';
import { startFakeModelServer, startGateway } from './helpers/procs.js';

const logger = createLogger('test', 'silent');

t.test('console: /health, and /readiness follows the database', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-probes-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({ FACECOMPUTE_DATA_DIR: dir, FACECOMPUTE_LOG_LEVEL: 'silent' });
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store, logger });
  t.teardown(() => app.close());
  const health = await app.inject({ method: 'GET', url: '/health' });
  t.equal(health.statusCode, 200);
  t.same(health.json(), { status: 'ok', version: PACKAGE_VERSION });
  const ready = await app.inject({ method: 'GET', url: '/readiness' });
  t.equal(ready.statusCode, 200);
  t.same(ready.json(), { status: 'ok', ready: true });
  await store.db.destroy();
  const gone = await app.inject({ method: 'GET', url: '/readiness' });
  t.equal(gone.statusCode, 503, 'unready once the database is gone');
  t.same(gone.json(), { status: 'error', ready: false, error: 'database_unavailable' });
  t.equal(gone.headers['retry-after'], '5');
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'still alive: liveness must not restart a pod for its database');
});

function mcpDeps(accounts: Partial<AccountsPort>, limiter: Limiter) {
  return {
    logger,
    accounts: { authenticate: async () => { throw new Error('unused'); }, consume: async () => ({ total: 0, used: 0, remaining: 0 }), refund: async () => undefined, close: async () => undefined, ...accounts } as AccountsPort,
    limiter,
    compute: {} as ComputeService,
    maxBodyBytes: 1 << 20,
    maxJsonValues: 1 << 19,
    arrayLimits: { maxTargets: 100_000, maxSources: 1000, maxBatchImages: 16 },
    strikes: { limit: 3, windowMs: 86_400_000 },
    bodyBudget: new BodyBudget(1 << 30),
    requestReceiveTimeoutMs: 30_000,
    allowedOrigins: [],
    version: '9.9.9',
  };
}
const memoryLimiter = () => createMemoryLimiter({ requests: 10, windowMs: 60_000, concurrent: 2 });

t.test('MCP endpoint: /health, and /readiness follows the database and Redis', async (t) => {
  const ok = await buildMcp(mcpDeps({ ping: async () => undefined }, memoryLimiter()));
  t.teardown(() => ok.close());
  t.same((await ok.inject({ method: 'GET', url: '/health' })).json(), { status: 'ok', version: '9.9.9' });
  const r = await ok.inject({ method: 'GET', url: '/readiness' });
  t.equal(r.statusCode, 200);
  t.same(r.json(), { status: 'ok', ready: true });

  const dbDown = await buildMcp(mcpDeps({ ping: async () => { throw new Error('ECONNREFUSED'); } }, memoryLimiter()));
  t.teardown(() => dbDown.close());
  const d = await dbDown.inject({ method: 'GET', url: '/readiness' });
  t.equal(d.statusCode, 503);
  t.same(d.json(), { status: 'error', ready: false, error: 'database_unavailable' });

  const redisDown: Limiter = { ...memoryLimiter(), kind: 'redis', ping: async () => { throw new Error('ECONNREFUSED'); } };
  const rd = await buildMcp(mcpDeps({ ping: async () => undefined }, redisDown));
  t.teardown(() => rd.close());
  const x = await rd.inject({ method: 'GET', url: '/readiness' });
  t.equal(x.statusCode, 503);
  t.same(x.json(), { status: 'error', ready: false, error: 'limiter_unavailable' });
});

t.test('MCP endpoint: a hung database makes /readiness fail within the probe timeout, not hang', async (t) => {
  const hung = await buildMcp(mcpDeps({ ping: () => new Promise<void>(() => undefined) }, memoryLimiter()));
  t.teardown(() => hung.close());
  const t0 = performance.now();
  const r = await hung.inject({ method: 'GET', url: '/readiness' });
  const ms = performance.now() - t0;
  t.equal(r.statusCode, 503);
  t.same(r.json(), { status: 'error', ready: false, error: 'database_unavailable' });
  // The hung check never settles, so only the deadline could answer: not before it (a lower bound
  // cannot flake), and the deadline itself is under a kubelet probe's 1 s (a constant, not a timing).
  t.ok(ms >= CHECK_DEADLINE_MS - 5, `answered at the deadline (${ms.toFixed(0)} ms)`);
  t.ok(CHECK_DEADLINE_MS < 1000, `the readiness deadline, ${CHECK_DEADLINE_MS} ms, is under a kubelet probe's 1 s`);
});

function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.once('connect', () => { s.destroy(); resolve(false); });
    s.once('error', () => resolve(true));
  });
}

t.test('gateway: the metrics listener binds FACECOMPUTE_METRICS_HOST (a pod address for Prometheus), loopback by default', async (t) => {
  const ms = await startFakeModelServer();
  t.teardown(() => ms.kill('SIGKILL'));
  // This helper's own port range (PROTOCOL §2); two tries in case another process holds one.
  for (const [host, port] of [['127.0.0.2', 20700 + Math.floor(Math.random() * 50)], [undefined, 20750 + Math.floor(Math.random() * 50)]] as const) {
    const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_METRICS_PORT: String(port), ...(host ? { FACECOMPUTE_METRICS_HOST: host } : {}) });
    const bound = host ?? '127.0.0.1';
    const other = host ? '127.0.0.1' : '127.0.0.2';
    const m = await fetch(`http://${bound}:${port}/metrics`);
    t.equal(m.status, 200, `metrics on ${bound}`);
    t.match(await m.text(), /facecompute_gateway_requests_total/);
    t.ok(await refused(other, port), `nothing listens on ${other}:${port}`);
    g.kill('SIGKILL');
    await g.exited;
  }
});
