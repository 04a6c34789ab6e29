/**
 * The model-server client against several fake model servers (real processes,
 * test/helpers/fake-model-server.ts): least-outstanding balancing, one retry on another replica when
 * the frame never reached one (connection refused), none when a replica took the frame and dropped
 * the connection (upstream_lost: its input may be what killed it), passive ejection of dead
 * and garbage-answering replicas, probing and readmission, warming replicas routed around, no retry
 * after a timeout, the internal token sent on every request, and readiness from any ready replica.
 */
import t from 'tap';
import { createUpstream, type Upstream } from '../src/model-client/client.js';
import type { RepresentHeader } from '../src/model-client/protocol.js';
import { isServiceError } from '../src/errors/index.js';
import { startFakeModelServer, setFault, type Proc } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const IMG = makePng(16, 16, 3);
const HEADER: RepresentHeader = {
  op: 'represent', model_name: 'Facenet', detector_backend: 'opencv', align: true, enforce_detection: true, expand_percentage: 0,
  normalization: 'base', images: [0], max_faces: null, l2_normalize: false,
};
const ctx = () => ({ requestId: crypto.randomUUID() });

async function stats(p: Proc): Promise<{ compute: number; readiness: number; unauthorized: number }> {
  return (await (await fetch(`http://127.0.0.1:${p.port}/__stats`)).json()) as never;
}

const until = async (f: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
};

const servers: Proc[] = [];
const clients: Upstream[] = [];
t.teardown(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const s of servers) s.kill();
});

async function fakes(n: number, env: Record<string, string> = {}): Promise<Proc[]> {
  const ps = await Promise.all(Array.from({ length: n }, () => startFakeModelServer(env)));
  servers.push(...ps);
  return ps;
}

function client(ps: Proc[], extra: Partial<Parameters<typeof createUpstream>[0]> = {}): Upstream {
  const c = createUpstream({
    urls: ps.map((p) => `http://127.0.0.1:${p.port}`),
    timeoutMs: 3000,
    maxResponseBytes: 1 << 20,
    health: { ejectAfter: 3, probeMs: 50, probeMaxMs: 200 },
    probeTimeoutMs: 500,
    ...extra,
  });
  clients.push(c);
  return c;
}

const stateOf = (c: Upstream, p: Proc) => c.replicas!().find((r) => r.origin === `http://127.0.0.1:${p.port}`)?.state;

t.test('least outstanding: while one replica is busy, the next requests go to the idle one', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  await setFault(a!.port, 'none', 1500);
  // Two at once: one lands on each (ties rotate); a's takes 1.5 s, b's returns at once.
  const slow = Promise.all([c.represent(HEADER, [IMG], ctx()), c.represent(HEADER, [IMG], ctx())]);
  await until(async () => (await stats(a!)).compute === 1 && (await stats(b!)).compute === 1);
  await until(() => c.replicas!().every((r) => r.origin.endsWith(String(a!.port)) ? r.outstanding === 1 : r.outstanding === 0));
  for (let i = 0; i < 6; i++) await c.represent(HEADER, [IMG], ctx());
  t.equal((await stats(a!)).compute, 1, 'the busy replica got nothing more (round-robin would have sent it 3)');
  t.equal((await stats(b!)).compute, 7);
  await slow;
  await setFault(a!.port, 'none');
});

t.test('a frame that reached a replica which then dropped the connection is not sent again (issue 24)', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  await setFault(a!.port, 'die'); // reads the request, then drops the connection without a byte
  let lost = 0;
  for (let i = 0; i < 10; i++) {
    try {
      const r = await c.represent(HEADER, [IMG], ctx());
      t.equal(r.results.length, 1);
    } catch (err) {
      t.ok(isServiceError(err) && err.code === 'upstream_lost', 'upstream_lost');
      lost++;
    }
  }
  // Its input may be what killed the replica: resending it would kill another one.
  t.equal(lost, 3, 'the three requests the dying replica took were lost, not resent');
  t.equal((await stats(a!)).compute, 3, 'the dying replica was tried three times, then ejected');
  t.equal((await stats(b!)).compute, 7, 'the other one answered the rest, and got none of the lost ones');
  t.equal(stateOf(c, a!), 'down');

  await setFault(a!.port, 'none');
  await until(() => stateOf(c, a!) === 'up');
  t.pass('readmitted after its readiness probe answered ready');
  for (let i = 0; i < 6; i++) await c.represent(HEADER, [IMG], ctx());
  t.ok((await stats(a!)).compute >= 5, 'and it takes traffic again');
});

t.test('a frame that never reached a replica (connection refused) is sent to another one', async (t) => {
  const [b] = await fakes(1);
  const { freePort } = await import('./helpers/ports.js');
  const closed = await freePort(); // nothing listens there
  const c = createUpstream({ urls: [`http://127.0.0.1:${closed}`, `http://127.0.0.1:${b!.port}`], timeoutMs: 3000, maxResponseBytes: 1 << 20, health: { ejectAfter: 3, probeMs: 50, probeMaxMs: 200 }, probeTimeoutMs: 500 });
  clients.push(c);
  for (let i = 0; i < 4; i++) t.equal((await c.represent(HEADER, [IMG], ctx())).results.length, 1, `request ${i + 1} answered`);
  t.equal((await stats(b!)).compute, 4);
});

t.test('no retry once response bytes came: a connection that drops mid-answer fails the request', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  await setFault(a!.port, 'midbody');
  await setFault(b!.port, 'midbody');
  await t.rejects(c.represent(HEADER, [IMG], ctx()), { code: 'upstream_failed', detail: /mid-response/ });
  t.equal((await stats(a!)).compute + (await stats(b!)).compute, 1, 'sent once: the answer had begun, so nothing is resent');
  // Dropped before any byte, after the frame was read: not resent either.
  await setFault(a!.port, 'die');
  await setFault(b!.port, 'die');
  await t.rejects(c.represent(HEADER, [IMG], ctx()), { code: 'upstream_lost' });
  t.equal((await stats(a!)).compute + (await stats(b!)).compute, 2, 'sent once more, to one replica only');
});

t.test('a replica killed outright: no request fails, and it is ejected', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  for (let i = 0; i < 4; i++) await c.represent(HEADER, [IMG], ctx());
  a!.kill('SIGKILL');
  await a!.exited;
  const results = await Promise.allSettled(Array.from({ length: 12 }, () => c.represent(HEADER, [IMG], ctx())));
  t.equal(results.filter((r) => r.status === 'rejected').length, 0, 'all 12 answered by the survivor');
  t.equal(stateOf(c, a!), 'down');
});

t.test('a replica that answers garbage is ejected like a dead one', async (t) => {
  for (const mode of ['garbage', 'wrongshape']) {
    const [a, b] = await fakes(2);
    const c = client([a!, b!]);
    await setFault(a!.port, mode);
    let failed = 0;
    for (let i = 0; i < 20 && stateOf(c, a!) === 'up'; i++) {
      try {
        await c.represent(HEADER, [IMG], ctx());
      } catch (err) {
        t.ok(isServiceError(err) && err.code === 'upstream_failed' && /malformed/.test(err.detail), `${mode}: upstream_failed, malformed`);
        failed++;
      }
    }
    t.equal(failed, 3, `${mode}: its three answers failed (bytes came back, so no retry), then it was out`);
    t.equal((await stats(a!)).compute, 3);
    // Its readiness is fine, so a probe readmits it; on probation, its next garbage ejects it at once.
    await until(() => stateOf(c, a!) === 'up');
    failed = 0;
    for (let i = 0; i < 20 && stateOf(c, a!) === 'up'; i++) await c.represent(HEADER, [IMG], ctx()).catch(() => failed++);
    t.equal(failed, 1, `${mode}: after readmission, one more failure puts it out again`);
    t.equal(stateOf(c, a!), 'down');
    t.match(c.replicas!().find((r) => r.state === 'down')!.reason, /failed again after readmission \(malformed\)/);
  }
});

t.test('a warming replica is routed around: the request goes to a ready one', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  await setFault(a!.port, 'warming');
  for (let i = 0; i < 6; i++) await c.represent(HEADER, [IMG], ctx());
  t.equal((await stats(a!)).compute, 1, 'asked once, answered service_warming, then out of rotation');
  t.equal(stateOf(c, a!), 'down');
  const r = await c.readiness(ctx());
  t.equal(r.status, 200, 'the service is ready: one replica is');
  await setFault(a!.port, 'none');
  await until(() => stateOf(c, a!) === 'up');
  t.pass('readmitted once it says ready');
});

t.test('every replica warming: service_warming with Retry-After reaches the caller', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  await setFault(a!.port, 'warming');
  await setFault(b!.port, 'warming');
  await t.rejects(c.represent(HEADER, [IMG], ctx()), { code: 'service_warming', headers: { 'retry-after': '7' } });
  const r = await c.readiness(ctx());
  t.equal(r.status, 503);
  t.equal(r.body.status, 'warming');
});

t.test('no retry after a timeout (the request may be running) or a 5xx', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!], { timeoutMs: 400 });
  await setFault(a!.port, 'stall');
  await setFault(b!.port, 'stall');
  await t.rejects(c.represent(HEADER, [IMG], ctx()), { code: 'upstream_timeout' });
  const total = (await stats(a!)).compute + (await stats(b!)).compute;
  t.equal(total, 1, 'sent once');
  await setFault(a!.port, '5xx');
  await setFault(b!.port, '5xx');
  await t.rejects(c.represent(HEADER, [IMG], ctx()), { code: 'upstream_failed' });
  t.equal((await stats(a!)).compute + (await stats(b!)).compute, 2, 'sent once');
});

t.test('the internal token goes with every request; a replica that refuses it is routed around', async (t) => {
  const token = 'k'.repeat(40);
  const [a, b] = await fakes(2, { INTERNAL_TOKEN: token });
  const without = client([a!, b!]);
  await t.rejects(without.represent(HEADER, [IMG], ctx()), { code: 'upstream_failed', detail: /internal token/ });
  const withToken = client([a!, b!], { internalToken: token });
  for (let i = 0; i < 4; i++) await withToken.represent(HEADER, [IMG], ctx());
  t.equal((await withToken.readiness(ctx())).status, 200);
  await withToken.capabilities(ctx());
  const [c] = await fakes(1, { INTERNAL_TOKEN: 'another-token-of-forty-characters-xxxxxx' });
  const mixed = client([a!, c!], { internalToken: token });
  for (let i = 0; i < 6; i++) await mixed.represent(HEADER, [IMG], ctx());
  t.ok((await stats(c!)).unauthorized >= 1, 'the replica with another token refused');
  t.equal(stateOf(mixed, c!), 'down', 'and is taken out after refusing three times');
});

t.test('readiness is any replica: one dead, one ready is ready', async (t) => {
  const [a, b] = await fakes(2);
  const c = client([a!, b!]);
  b!.kill('SIGKILL');
  await b!.exited;
  const r = await c.readiness(ctx());
  t.equal(r.status, 200);
  a!.kill('SIGKILL');
  await a!.exited;
  await t.rejects(c.readiness(ctx()), { code: 'upstream_failed' });
});
