/**
 * Deadline-aware admission through the real gateway process (fake model server answering in
 * 300 ms, one upstream slot, 50 waiting places, a 1 s queue timeout): once it has seen a few service
 * times, a burst is refused at once with `503 queue_full` and Retry-After for the requests that could
 * not start within the timeout, long before the 50 places are taken, instead of queueing them to
 * time out. `FACECOMPUTE_QUEUE_ADMISSION=capacity` keeps the old behaviour, checked as the contrast.
 * Counts are asserted as bounds that a slow machine only makes safer (slower service, fewer admitted).
 */
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeModelServer, startGateway, setFault } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const KEYS = [{ key: 'k', accountId: 'a', kind: 'rest' }];
const stats = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/__stats`)).json()) as { compute: number };
const BODY = JSON.stringify({ img: makePng(32, 24, 3).toString('base64') });

/**
 * A fake model server answering in `serviceMs` behind a real gateway with one upstream slot and 50
 * waiting places: the rig every test here measures admission on.
 */
async function rig(t: Test, o: { serviceMs: number; timeoutMs: number; admission?: 'deadline' | 'capacity' }) {
  const ms = await startFakeModelServer();
  t.teardown(() => ms.kill('SIGKILL'));
  await setFault(ms.port, 'none', o.serviceMs);
  const gw = await startGateway({
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_UPSTREAM_CONCURRENCY: '1',
    FACECOMPUTE_QUEUE_CAPACITY: '50',
    FACECOMPUTE_QUEUE_TIMEOUT_MS: String(o.timeoutMs),
    ...(o.admission ? { FACECOMPUTE_QUEUE_ADMISSION: o.admission } : {}),
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '100',
    TEST_KEYS: JSON.stringify(KEYS),
  });
  t.teardown(() => gw.kill('SIGKILL'));
  return { ms, gw, base: `http://127.0.0.1:${gw.port}` };
}

async function burst(base: string, n: number) {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const t0 = performance.now();
      const r = await fetch(`${base}/represent`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: BODY });
      const body = (await r.json()) as { error?: string };
      return { status: r.status, error: body.error ?? null, retryAfter: r.headers.get('retry-after'), ms: performance.now() - t0 };
    }),
  );
}

for (const admission of ['deadline', 'capacity'] as const) {
  t.test(`${admission} admission under a burst of 12`, async (t) => {
    const { ms, gw, base } = await rig(t, { serviceMs: 300, timeoutMs: 1000, admission });
    // Service-time history: three requests one after another.
    for (let i = 0; i < 3; i++) t.equal((await burst(base, 1))[0]!.status, 200, 'warm-up request');

    const rs = await burst(base, 12);
    const codes = rs.map((r) => r.error ?? r.status);
    t.ok(rs.every((r) => r.status === 200 || r.status === 503), `only 200 and 503: ${codes}`);
    const full = rs.filter((r) => r.error === 'queue_full');
    const timedOut = rs.filter((r) => r.error === 'queue_timeout');
    t.ok([...full, ...timedOut].every((r) => Number(r.retryAfter) >= 1), 'Retry-After on every 503'); // one assertion, however many
    if (admission === 'deadline') {
      // Each request holds the one slot >= 300 ms: at most 1 running + 3 waiting fit in 1 s.
      t.ok(full.length >= 8, `refused at once: ${full.length} queue_full of 12 (${codes})`);
      // Refused before any upstream work: the model server computed exactly the warm-ups and the
      // successes, a count no load can change (timing the refusals would measure the machine).
      t.equal((await stats(ms.port)).compute, 3 + rs.filter((r) => r.status === 200).length, 'no refused request reached the model server');
      // A capacity refusal is logged as one, not as a failure with a stack (cheap under overload).
      const logged = gw.lines.filter((l) => l.includes('"code":"queue_full"'));
      t.ok(logged.length >= 1, 'refusals are logged');
      t.ok(logged.every((l) => l.includes('"level":40') && l.includes('"msg":"request refused"') && !l.includes('"stack"')), `at warn, without a stack: ${logged[0]}`);
    } else {
      t.equal(full.length, 0, 'capacity admission: 50 places, nothing refused up front');
      t.ok(timedOut.length >= 1, `they wait to time out instead: ${codes}`);
    }
  });
}

/** Sends a request's headers and none of its body; resolves with the answer the gateway gives anyway. */
function headersOnly(port: number, path: string, key: string, contentLength: number): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer within 5 s without the body: ${JSON.stringify(buf)}`));
    }, 5000);
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.slice(0, end);
      const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + len) return;
      clearTimeout(timer);
      sock.destroy();
      resolve({ status: Number(head.split(' ')[1]), headers: head, body: buf.slice(end + 4, end + 4 + len) });
    });
    sock.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`);
  });
}

t.test('an overloaded gateway refuses /verify and /represent from the headers, after the key', async (t) => {
  // One slot, 1.5 s per request, 1 s timeout: while a request runs, a newcomer could not start in time.
  const { ms, gw, base } = await rig(t, { serviceMs: 1500, timeoutMs: 1000 });
  t.equal((await burst(base, 1))[0]!.status, 200, 'service-time history');
  const holding = burst(base, 1);
  // Running once the model server has it (a count, not a guess at how long that takes).
  for (let i = 0; i < 500 && (await stats(ms.port)).compute < 2; i++) await sleep(10);
  for (const path of ['/verify', '/represent']) {
    // The body is never sent: an answer at all proves that the refusal came from the headers.
    const r = await headersOnly(gw.port, path, 'k', 200_000);
    t.equal(r.status, 503, `${path}: ${r.body}`);
    t.equal(JSON.parse(r.body).error, 'queue_full');
    t.match(r.headers, /retry-after: [1-9]/i);
  }
  // The key is checked before admission: a bad key is 401 whatever the load.
  const bad = await headersOnly(gw.port, '/verify', 'not-a-key', 200_000);
  t.equal(bad.status, 401, `a bad key while the queue is full: ${bad.body}`);
  // /compare is not refused from its headers: with embeddings only it never needs the queue.
  const v = Array.from({ length: 128 }, (_, i) => Math.sin(i));
  const cmp = await fetch(`${base}/compare`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: JSON.stringify({ source: { embedding: v }, targets: [v] }) });
  t.equal(cmp.status, 200, `vector /compare while the queue is full: ${await cmp.clone().text()}`);
  t.equal((await holding)[0]!.status, 200, 'the running request finishes');
});

for (const admission of ['deadline', 'capacity'] as const) {
  t.test(`${admission} admission when the model server slows down after admission`, async (t) => {
    const { ms, base } = await rig(t, { serviceMs: 150, timeoutMs: 2600, admission });
    for (let i = 0; i < 3; i++) t.equal((await burst(base, 1))[0]!.status, 200, 'warm-up request');
    // Admitted on ~150 ms service times; then each request takes 2 s. The first of the burst runs
    // for 2 s; the others, admitted with estimates well within 2.6 s, could then start no sooner
    // than 2 s after it: past their deadline.
    await setFault(ms.port, 'none', 2000);
    const rs = await burst(base, 5);
    const codes = rs.map((r) => r.error ?? r.status);
    t.ok(rs.every((r) => r.status === 200 || r.status === 503), `only 200 and 503: ${codes}`);
    t.ok(rs.filter((r) => r.status === 503).every((r) => Number(r.retryAfter) >= 1), 'Retry-After on every 503');
    const timedOut = rs.filter((r) => r.error === 'queue_timeout');
    if (admission === 'deadline') {
      t.equal(timedOut.length, 0, `none left to time out: ${codes}`);
      // Shed, not timed out: the code says which (queue_full, and no queue_timeout above), so no
      // upper bound on their time is needed; the lower bound says they were admitted first.
      const shed = rs.filter((r) => r.error === 'queue_full' && r.ms >= 1000);
      t.ok(shed.length >= 1, `shed once the first slow answer showed they could not start in time: ${codes}`);
    } else {
      t.ok(timedOut.length >= 1, `capacity admission leaves them to time out: ${codes}`);
    }
  });
}
