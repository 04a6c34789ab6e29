/**
 * Replica discovery by DNS (FACECOMPUTE_MODEL_SERVER_DNS), against a real DNS server on loopback
 * (test/helpers/dns-stub.ts) and fake model servers on 127.0.0.2-4 sharing one port, as pods behind a
 * headless Service do: replicas that join take traffic, replicas that leave get none (what they have
 * in flight finishes), a DNS failure keeps the last replicas, an empty answer empties the set.
 */
import t from 'tap';
import { loadConfig } from '../src/config/index.js';
import { createConfiguredUpstream } from '../src/service/configured.js';
import type { Upstream } from '../src/model-client/client.js';
import type { RepresentHeader } from '../src/model-client/protocol.js';
import { startFakeModelServer, type Proc } from './helpers/procs.js';
import { startDnsStub } from './helpers/dns-stub.js';
import { makePng } from './helpers/images.js';
import { freePort } from './helpers/ports.js';

const IMG = makePng(16, 16, 5);
const HEADER: RepresentHeader = {
  op: 'represent', model_name: 'Facenet', detector_backend: 'opencv', align: true, enforce_detection: true, expand_percentage: 0,
  normalization: 'base', images: [0], max_faces: null, l2_normalize: false,
};
const NAME = 'model-servers.facecompute.test';
const ctx = () => ({ requestId: crypto.randomUUID() });

const until = async (f: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
};

const dns = await startDnsStub();
const port = await freePort('127.0.0.2');
const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const fakes: Proc[] = await Promise.all(hosts.map((HOST) => startFakeModelServer({ HOST, PORT: String(port) })));
const computeOf = async (i: number): Promise<number> => ((await (await fetch(`http://${hosts[i]}:${port}/__stats`)).json()) as { compute: number }).compute;

let upstream: Upstream;
t.teardown(async () => {
  await upstream?.close();
  for (const f of fakes) f.kill();
  await dns.close();
});

const origins = () => upstream.replicas!().map((r) => r.origin).sort();

t.test('configured by FACECOMPUTE_MODEL_SERVER_DNS: the first answer is waited for, then followed', async (t) => {
  dns.set(NAME, ['127.0.0.2']);
  const cfg = loadConfig({
    FACECOMPUTE_MODEL_SERVER_DNS: `http://${NAME}:${port}`,
    FACECOMPUTE_MODEL_SERVER_DNS_INTERVAL_MS: '100',
    FACECOMPUTE_MODEL_SERVER_DNS_SERVERS: dns.server,
  });
  t.same(cfg.modelServerUrls, [], 'no local child URL when DNS names the replicas');
  upstream = createConfiguredUpstream(cfg);
  // Sent at once: it waits for the first lookup instead of finding no replica.
  await upstream.represent(HEADER, [IMG], ctx());
  for (let i = 0; i < 4; i++) await upstream.represent(HEADER, [IMG], ctx());
  t.equal(await computeOf(0), 5, 'the one replica in DNS took everything');
  t.same(origins(), [`http://127.0.0.2:${port}`]);
});

t.test('a replica that joins takes traffic without a restart', async (t) => {
  dns.set(NAME, ['127.0.0.2', '127.0.0.3']);
  await until(() => origins().length === 2);
  const before = await computeOf(1);
  for (let i = 0; i < 10; i++) await upstream.represent(HEADER, [IMG], ctx());
  t.ok((await computeOf(1)) - before >= 4, 'the new replica shares the load');
});

t.test('a replica that leaves gets nothing more; its request in flight completes', async (t) => {
  await fetch(`http://127.0.0.2:${port}/__fault`, { method: 'POST', body: JSON.stringify({ mode: 'none', delay_ms: 800 }) });
  await fetch(`http://127.0.0.3:${port}/__fault`, { method: 'POST', body: JSON.stringify({ mode: 'none', delay_ms: 800 }) });
  const inflight = [upstream.represent(HEADER, [IMG], ctx()), upstream.represent(HEADER, [IMG], ctx())];
  await new Promise((r) => setTimeout(r, 100));
  dns.set(NAME, ['127.0.0.3', '127.0.0.4']);
  await until(() => origins().join() === [`http://127.0.0.3:${port}`, `http://127.0.0.4:${port}`].join());
  const results = await Promise.allSettled(inflight);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled'], 'the leaving replica finished what it had');
  await fetch(`http://127.0.0.2:${port}/__fault`, { method: 'POST', body: JSON.stringify({ mode: 'none', delay_ms: 0 }) });
  await fetch(`http://127.0.0.3:${port}/__fault`, { method: 'POST', body: JSON.stringify({ mode: 'none', delay_ms: 0 }) });
  const gone = await computeOf(0);
  for (let i = 0; i < 8; i++) await upstream.represent(HEADER, [IMG], ctx());
  t.equal(await computeOf(0), gone, 'no request reached the replica that left');
  t.ok((await computeOf(2)) >= 3, 'the one that joined took its share');
});

t.test('a failing DNS server keeps the replicas last known', async (t) => {
  for (const fault of ['servfail', 'silent'] as const) {
    dns.fault(fault);
    const q = dns.queries;
    await until(() => dns.queries >= q + 4);
    t.equal(origins().length, 2, `${fault}: replicas kept`);
    await upstream.represent(HEADER, [IMG], ctx());
  }
  dns.fault('none');
});

t.test('an answer with no records empties the set: no replica is known', async (t) => {
  dns.set(NAME, undefined);
  await until(() => origins().length === 0);
  await t.rejects(upstream.represent(HEADER, [IMG], ctx()), { code: 'upstream_failed', detail: 'no model server replica is known' });
  await t.rejects(upstream.readiness(ctx()), { code: 'upstream_failed' });
  dns.set(NAME, ['127.0.0.4']);
  await until(() => origins().length === 1);
  t.equal((await upstream.readiness(ctx())).status, 200, 'and back when the name has records again');
});

t.test('configuration refuses a DNS URL it cannot follow', async (t) => {
  t.throws(() => loadConfig({ FACECOMPUTE_MODEL_SERVER_DNS: 'https://x.test:8090' }), /must be an http:\/\/ URL/);
  t.throws(() => loadConfig({ FACECOMPUTE_MODEL_SERVER_DNS: 'http://x.test:8090/path' }), /http:\/\/<host name>\[:port\]/);
  t.throws(() => loadConfig({ FACECOMPUTE_MODEL_SERVER_DNS: 'not a url' }), /is not a URL/);
  t.throws(() => loadConfig({ FACECOMPUTE_MODEL_SERVER_DNS: 'http://x.test', FACECOMPUTE_MODEL_SERVER_DNS_SERVERS: 'dns.example' }), /must be an IP address/);
  t.throws(() => loadConfig({ FACECOMPUTE_MODEL_SERVER_URLS: 'ftp://a:1' }), /must be http/);
  const c = loadConfig({ FACECOMPUTE_MODEL_SERVER_DNS: 'http://x.test', FACECOMPUTE_MODEL_SERVER_DNS_SERVERS: '10.0.0.10,[fd00::1]:5353,127.0.0.1:53' });
  t.same(c.modelServer.dns, { url: 'http://x.test', intervalMs: 5000, servers: ['10.0.0.10', '[fd00::1]:5353', '127.0.0.1:53'] });
});
