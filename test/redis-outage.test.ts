/**
 * README (REST gateway): "Redis configured but failing during a compute request: `502 upstream_failed`
 * ('the rate limiter backend is unavailable'): fail closed. `/readiness` reports it first as `503`
 * with `error: "limiter_unavailable"`." The MCP endpoint counts calls with the same limiter, so it
 * refuses the same way (a tool error with the same code).
 *
 * A Redis server of this test's own (redis-server on a free loopback port; the shared test Redis is
 * never touched) is killed, then frozen, under a gateway and an MCP endpoint configured with it: the
 * compute call is refused, nothing is computed or charged, the answer names the limiter and nothing of
 * Redis, and no call hangs. When Redis comes back, calls pass again.
 */
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { freePort } from './helpers/ports.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const area = { x: 0, y: 0, w: 16, h: 12, left_eye: null, right_eye: null, detector: 'opencv' };
let computed = 0;
const upstream = stubUpstream({
  async represent(h) {
    computed++;
    return { results: h.images.map(() => [{ embedding: Array.from({ length: 128 }, (_, i) => Math.sin(i + 1)), facial_area: area, face_confidence: 0.9 }]), model: h.model_name, detector_backend: h.detector_backend };
  },
});
const accounts = new MemoryAccounts([
  { key: 'rest-key', accountId: 'acct', kind: 'rest' },
  { key: 'mcp-key', accountId: 'acct', kind: 'mcp' },
]);
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==';

const redisDir = mkdtempSync(join(tmpdir(), 'fc-redis-outage-'));
let redis: ChildProcess | null = null;
let redisPort = 0;

async function startRedis(): Promise<void> {
  redis = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(redisPort), '--save', '', '--appendonly', 'no', '--dir', redisDir], { stdio: 'ignore' });
  redis.once('error', (err) => { throw new Error(`redis-server could not start (bootstrap.sh installs it): ${err.message}`); });
  // Ready when it answers PING.
  const { createConnection } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((done) => {
      const s = createConnection(redisPort, '127.0.0.1', () => s.write('PING\r\n'));
      s.once('data', (d) => { s.destroy(); done(d.toString().startsWith('+PONG')); });
      s.once('error', () => done(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`redis-server did not answer on 127.0.0.1:${redisPort}`);
}

async function stopRedis(): Promise<void> {
  const r = redis;
  redis = null;
  if (!r || r.exitCode !== null) return;
  r.kill('SIGCONT');
  const exited = new Promise((done) => r.once('exit', done));
  r.kill('SIGKILL');
  await exited;
}

let gw: Gateway;
let base = '';
let mcpUrl = '';
let closeMcp = async () => {};

t.before(async () => {
  redisPort = await freePort();
  await startRedis();
  // Each /readiness below must be a check of that moment, not the cached answer (test/readiness-cache.test.ts).
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_READINESS_CACHE_MS: '0', FACECOMPUTE_REDIS_URL: `redis://127.0.0.1:${redisPort}`, FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1' });
  const logger = createLogger('test', 'silent');
  gw = await buildGateway({ config, accounts, logger, upstream });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
  const mcp = await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream, queue: gw.queue });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = `http://127.0.0.1:${(mcp.app.server.address() as { port: number }).port}/mcp`;
  closeMcp = () => mcp.app.close();
});

t.teardown(async () => {
  await closeMcp();
  await gw?.close(100);
  await stopRedis();
});

/** A /represent call; a call that has not answered in 15 s is a hang (the limiter's own timeout is 1 s). */
async function represent(): Promise<{ status: number; body: Record<string, any> }> {
  const r = await fetch(`${base}/represent`, {
    method: 'POST',
    headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' },
    body: JSON.stringify({ img: PNG_B64, model_name: 'Dlib', detector_backend: 'skip' }),
    signal: AbortSignal.timeout(15_000),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

async function readiness(): Promise<{ status: number; body: Record<string, any> }> {
  const r = await fetch(`${base}/readiness`, { signal: AbortSignal.timeout(15_000) });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

async function mcpRepresent(): Promise<Record<string, any>> {
  const c = new Client({ name: 'redis-outage', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: 'Bearer mcp-key' } } }));
  try {
    return (await c.callTool({ name: 'represent_face', arguments: { img: PNG_B64, model_name: 'Dlib', detector_backend: 'skip' } }, undefined, { timeout: 15_000 })) as Record<string, any>;
  } finally {
    await c.close();
  }
}

/** The refusal the README documents: 502 upstream_failed naming the limiter, nothing computed or charged. */
async function refusedClosed(t: Test, why: string): Promise<void> {
  const [before, used] = [computed, accounts.used.get('acct') ?? 0];
  const r = await represent();
  t.equal(r.status, 502, `${why}: 502`);
  t.same(r.body, { error: 'upstream_failed', detail: 'the rate limiter backend is unavailable' }, `${why}: upstream_failed naming the limiter, nothing of Redis`);
  const m = await mcpRepresent();
  t.equal(m['isError'], true, `${why}: the MCP tool call is refused too`);
  t.same(m['structuredContent'], { error: 'upstream_failed', detail: 'the rate limiter backend is unavailable' }, `${why}: MCP, the same code and detail`);
  t.equal(computed, before, `${why}: nothing was computed`);
  t.equal(accounts.used.get('acct') ?? 0, used, `${why}: no free call was used`);
  const rd = await readiness();
  t.equal(rd.status, 503, `${why}: /readiness 503`);
  t.equal(rd.body['error'], 'limiter_unavailable', `${why}: /readiness says limiter_unavailable`);
}

async function passesAgain(t: Test, why: string): Promise<void> {
  // ioredis reconnects by itself (its retry delay grows to 2 s).
  let r = await represent();
  for (let i = 0; i < 40 && r.status !== 200; i++) {
    await new Promise((done) => setTimeout(done, 250));
    r = await represent();
  }
  t.equal(r.status, 200, `${why}: compute calls pass again (${JSON.stringify(r.body).slice(0, 120)})`);
  t.equal((await readiness()).status, 200, `${why}: /readiness 200 again`);
}

t.test('with Redis up, compute calls pass and are counted', async (t) => {
  const r = await represent();
  t.equal(r.status, 200, 'REST /represent 200');
  const m = await mcpRepresent();
  t.notOk(m['isError'], 'MCP represent_face answers');
  t.equal(computed, 2, 'both computed');
  t.equal((await readiness()).status, 200, '/readiness 200');
});

t.test('Redis killed during service: fail closed with 502, then recover', async (t) => {
  await stopRedis();
  await refusedClosed(t, 'Redis down');
  await startRedis();
  await passesAgain(t, 'Redis restarted');
});

t.test('Redis frozen (SIGSTOP): the same refusal, within the limiter\'s timeout, never a hang', async (t) => {
  redis!.kill('SIGSTOP');
  try {
    await refusedClosed(t, 'Redis frozen');
  } finally {
    redis!.kill('SIGCONT');
  }
  await passesAgain(t, 'Redis thawed');
});
