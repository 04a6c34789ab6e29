/**
 * README (REST gateway): "Draining (SIGTERM/SIGINT): new requests get `503 gateway_draining` with
 * `Connection: close` and `Retry-After`; `/health` keeps answering; in-flight requests get
 * FACECOMPUTE_DRAIN_TIMEOUT_MS; exit 0." The Kubernetes liveness probe is `/health` (README, Deploy):
 * a gateway that stopped answering it while draining would be killed before its requests finish.
 *
 * A real gateway process with a fake model server that holds the request in flight until the test
 * releases it (no sleeps, so no load can end it early): it holds the drain open;
 * while it runs, `/health` answers 200 (on new connections, again and again), `/readiness` and a new
 * compute request are refused with 503 gateway_draining; the request in flight finishes with 200 and
 * the process exits 0.
 */
import t from 'tap';
import { startFakeModelServer, startGateway, setFault } from './helpers/procs.js';

const KEYS = JSON.stringify([{ key: 'rest-key', accountId: 'acct', kind: 'rest' }]);
const B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABSK+kcQAAAABJRU5ErkJggg==';
const stats = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/__stats`)).json()) as { held: number };

t.test('/health answers while the gateway drains', async (t) => {
  const slow = await startFakeModelServer();
  t.teardown(() => slow.kill('SIGKILL'));
  await setFault(slow.port, 'hold');
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${slow.port}`, FACECOMPUTE_DRAIN_TIMEOUT_MS: '20000', TEST_KEYS: KEYS });
  t.teardown(() => g.kill('SIGKILL'));
  const base = `http://127.0.0.1:${g.port}`;
  const get = (path: string) => fetch(base + path, { signal: AbortSignal.timeout(10_000) });
  t.equal((await get('/health')).status, 200, 'healthy before');

  let inflightDone = false;
  const inflight = fetch(`${base}/represent`, { method: 'POST', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, body: JSON.stringify({ img: B64 }) }).then(async (r) => {
    inflightDone = true;
    return { status: r.status, body: await r.text() };
  });
  // The request is in the gateway (waiting on the model server) once the model server has it.
  for (let i = 0; i < 500 && (await stats(slow.port)).held < 1; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal((await stats(slow.port)).held, 1, 'the model server holds the request');
  t.notOk(inflightDone, 'the request is still in flight');
  g.kill('SIGTERM');
  // Draining once /readiness says so (the signal is handled asynchronously).
  let ready = await get('/readiness');
  for (let i = 0; i < 200 && ready.status === 200; i++) {
    await ready.arrayBuffer();
    await new Promise((r) => setTimeout(r, 10));
    ready = await get('/readiness');
  }
  t.equal(ready.status, 503, '/readiness is refused while draining (Kubernetes stops routing here)');
  t.equal(((await ready.json()) as { error: string }).error, 'gateway_draining');

  const health: number[] = [];
  for (let i = 0; i < 5; i++) {
    const h = await get('/health');
    health.push(h.status);
    const body = (await h.json()) as { status: string; version: string };
    if (i === 0) t.match(body, { status: 'ok', version: String }, '/health body while draining');
  }
  t.notOk(inflightDone, 'the in-flight request still holds the drain open while /health is asked');
  t.same(health, [200, 200, 200, 200, 200], '/health answers 200 throughout the drain');

  const late = await fetch(`${base}/represent`, { method: 'POST', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, body: JSON.stringify({ img: B64 }) });
  t.equal(late.status, 503, 'a new compute request: 503');
  t.equal(((await late.json()) as { error: string }).error, 'gateway_draining');
  t.equal(late.headers.get('connection'), 'close');
  t.ok(late.headers.get('retry-after'), 'Retry-After');

  await fetch(`http://127.0.0.1:${slow.port}/__release`, { method: 'POST' });
  const done = await inflight;
  t.equal(done.status, 200, `the request in flight finished (${done.body.slice(0, 80)})`);
  t.equal(await g.exited, 0, 'exit 0');
});
