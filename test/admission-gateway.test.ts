/**
 * Deadline-aware admission through the real gateway process (fake model server answering in
 * 300 ms, one upstream slot, 50 waiting places, a 1 s queue timeout): once it has seen a few service
 * times, a burst is refused at once with `503 queue_full` and Retry-After for the requests that could
 * not start within the timeout, long before the 50 places are taken, instead of queueing them to
 * time out. `FACECOMPUTE_QUEUE_ADMISSION=capacity` keeps the old behaviour, checked as the contrast.
 * Counts are asserted as bounds that a slow machine only makes safer (slower service, fewer admitted).
 */
import t from 'tap';
import { startFakeModelServer, startGateway, setFault } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const KEYS = [{ key: 'k', accountId: 'a', kind: 'rest' }];
const BODY = JSON.stringify({ img: makePng(32, 24, 3).toString('base64') });

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
    const ms = await startFakeModelServer();
    t.teardown(() => ms.kill('SIGKILL'));
    await setFault(ms.port, 'none', 300);
    const gw = await startGateway({
      FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
      FACECOMPUTE_UPSTREAM_CONCURRENCY: '1',
      FACECOMPUTE_QUEUE_CAPACITY: '50',
      FACECOMPUTE_QUEUE_TIMEOUT_MS: '1000',
      FACECOMPUTE_QUEUE_ADMISSION: admission,
      FACECOMPUTE_RATE_LIMIT_CONCURRENT: '100',
      TEST_KEYS: JSON.stringify(KEYS),
    });
    t.teardown(() => gw.kill('SIGKILL'));
    const base = `http://127.0.0.1:${gw.port}`;
    // Service-time history: three requests one after another.
    for (let i = 0; i < 3; i++) t.equal((await burst(base, 1))[0]!.status, 200, 'warm-up request');

    const rs = await burst(base, 12);
    const codes = rs.map((r) => r.error ?? r.status);
    t.ok(rs.every((r) => r.status === 200 || r.status === 503), `only 200 and 503: ${codes}`);
    const full = rs.filter((r) => r.error === 'queue_full');
    const timedOut = rs.filter((r) => r.error === 'queue_timeout');
    for (const r of [...full, ...timedOut]) t.ok(Number(r.retryAfter) >= 1, 'Retry-After on every 503');
    if (admission === 'deadline') {
      // Each request holds the one slot >= 300 ms: at most 1 running + 3 waiting fit in 1 s.
      t.ok(full.length >= 8, `refused at once: ${full.length} queue_full of 12 (${codes})`);
      const okMin = Math.min(...rs.filter((r) => r.status === 200).map((r) => r.ms));
      t.ok(full.every((r) => r.ms < okMin), 'every refusal came before the first success');
    } else {
      t.equal(full.length, 0, 'capacity admission: 50 places, nothing refused up front');
      t.ok(timedOut.length >= 1, `they wait to time out instead: ${codes}`);
    }
  });
}
