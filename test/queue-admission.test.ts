/**
 * The compute queue's deadline-aware admission (src/service/queue.ts), on a driven clock: the wait
 * is estimated from the moving average of service times, a request that could not start within the
 * queue timeout is refused at once with queue_full and a Retry-After from the estimate, and places
 * reserved at admission count for the next request.
 */
import t, { type Test } from 'tap';
import { createQueue, type ComputeQueue } from '../src/service/queue.js';
import { ServiceError } from '../src/errors/index.js';

function clock() {
  let ms = 0;
  return { now: () => ms, advance: (d: number) => (ms += d) };
}

/** A job that finishes when told to, after advancing the clock by its duration. */
function controlled(c: ReturnType<typeof clock>) {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  return { job: () => done, end: (durationMs: number) => { c.advance(durationMs); finish(); } };
}

/** Teaches the queue a service time by running `n` jobs of `durationMs` one after another. */
async function teach(q: ComputeQueue, c: ReturnType<typeof clock>, durationMs: number, n = 3): Promise<void> {
  for (let i = 0; i < n; i++) {
    const j = controlled(c);
    const p = q.run(j.job);
    j.end(durationMs);
    await p;
  }
}

function refusal(t: Test, f: () => unknown): ServiceError | null {
  try {
    f();
  } catch (err) {
    t.type(err, ServiceError);
    return err as ServiceError;
  }
  return null;
}


t.test('without history only the capacity bound applies', async (t) => {
  const c = clock();
  const q = createQueue(1, 2, 1000, 'deadline', c.now);
  t.equal(q.estimateWaitMs(), 0, 'a free slot: no wait');
  const running = controlled(c);
  const p = q.run(running.job);
  t.equal(q.estimateWaitMs(), null, 'busy, no history: unknown');
  const a = q.admit();
  const b = q.admit();
  const e = refusal(t, () => q.admit());
  t.equal(e?.code, 'queue_full', 'slots + capacity places are taken');
  t.equal(e?.headers['retry-after'], '1');
  a.release();
  b.release();
  b.release(); // a second release is a no-op
  t.equal(q.stats().reserved, 0);
  running.end(10);
  await p;
});

t.test('deadline admission refuses what could not start in time, counting reserved places', async (t) => {
  const c = clock();
  // 2 slots, 100 waiting places, 1 s timeout; every job takes 400 ms, and the two running ones
  // started together: both slots free at 400 ms, then at 800 ms, ... A newcomer with k jobs
  // waiting ahead starts after (⌊k / 2⌋ + 1) × 400 ms (the even spread, (k + 1) × 200 ms, is less).
  const q = createQueue(2, 100, 1000, 'deadline', c.now);
  await teach(q, c, 400);
  t.equal(q.stats().serviceMs, 400);
  const held = [controlled(c), controlled(c)];
  const runs = held.map((h) => q.run(h.job));
  t.equal(q.estimateWaitMs(), 400, 'jobs that started together free their slots together: 400 ms, not 400 / 2');
  const tickets = [];
  for (let i = 0; i < 4; i++) tickets.push(q.admit()); // estimates 400, 400, 800, 800 ms
  t.equal(q.stats().reserved, 4);
  const e = refusal(t, () => q.admit());
  t.equal(e?.code, 'queue_full', 'estimated 1200 ms > 1000 ms');
  t.match(e?.detail, /within 1000 ms \(estimated wait 1200 ms\)/);
  t.equal(e?.headers['retry-after'], '1', 'the backlog drains enough in 0.2 s: at least 1 s');
  tickets[0]!.release();
  t.ok(q.admit(), 'a released place admits the next request');
  for (const tk of tickets) tk.release();
  held.forEach((h) => h.end(400));
  await Promise.all(runs);
});

t.test('the estimate follows the slots\' schedule: a burst frees its slots together', async (t) => {
  const c = clock();
  const q = createQueue(2, 100, 1000, 'deadline', c.now);
  await teach(q, c, 400);
  // Staggered: one job started 300 ms before the other; slots free at +100 and +400 ms. The even
  // spread (one departure = 400 / 2 ms) is the larger estimate here, and is kept.
  const a = controlled(c);
  const pa = q.run(a.job);
  c.advance(300);
  const b = controlled(c);
  const pb = q.run(b.job);
  t.equal(q.estimateWaitMs(), 200, 'staggered: 400 / 2 ms');
  a.end(100); // a took 400 ms
  await pa;
  b.end(300); // b took 400 ms
  await pb;
  t.equal(q.stats().serviceMs, 400);
  // A burst: both start now and end together after 400 ms; no slot frees before.
  const burst = [controlled(c), controlled(c)];
  const runs = burst.map((h) => q.run(h.job));
  t.equal(q.estimateWaitMs(), 400, 'together: a whole service time');
  burst.forEach((h) => h.end(0));
  await Promise.all(runs);
});

t.test('run() applies the same estimate to requests without a ticket (MCP), FIFO', async (t) => {
  const c = clock();
  const q = createQueue(1, 100, 1000, 'deadline', c.now);
  await teach(q, c, 300);
  const first = controlled(c);
  const p1 = q.run(first.job);
  // Waiting places 0, 1, 2 start after 300, 600, 900 ms; the fourth would start after 1200 ms.
  const waiting = [q.run(async () => 'w1'), q.run(async () => 'w2'), q.run(async () => 'w3')];
  t.equal(q.stats().waiting, 3);
  const refused = await q.run(async () => 'late').catch((e: unknown) => e);
  t.type(refused, ServiceError);
  t.equal((refused as ServiceError).code, 'queue_full', 'refused at once, not after the timeout');
  first.end(300);
  await p1;
  t.same(await Promise.all(waiting), ['w1', 'w2', 'w3']);
});

t.test('Retry-After is the estimated wait beyond the timeout', async (t) => {
  for (const [serviceMs, expected] of [[4000, '3'], [10_000, '9'], [30_000, '29']] as const) {
    const c = clock();
    const q = createQueue(2, 100, 1000, 'deadline', c.now);
    await teach(q, c, serviceMs, 1);
    const held = [controlled(c), controlled(c)];
    const runs = held.map((h) => q.run(h.job));
    // Both jobs just started: the first slot frees after serviceMs (4, 10, 30 s), all over 1 s.
    const e = refusal(t, () => q.admit());
    t.equal(e?.code, 'queue_full', `${serviceMs} ms jobs`);
    t.equal(e?.headers['retry-after'], expected, `${serviceMs} − 1000 ms, in whole seconds`);
    const w = await q.run(async () => 'no ticket').catch((x: unknown) => x);
    t.equal((w as ServiceError).code, 'queue_full', 'the same without a ticket');
    held.forEach((h) => h.end(1));
    await Promise.all(runs);
  }
});

t.test('waits that overrun their estimate tighten admission; shorter ones loosen it', async (t) => {
  /**
   * 100 ms jobs; then `rounds` times a waiter whose slot frees after `ratio` × its estimate. Returns
   * the calibration factor and how many places admit() gives behind one running job.
   */
  async function placesAfter(ratio: number, rounds: number): Promise<{ places: number; factor: number; serviceMs: number }> {
    const c = clock();
    const q = createQueue(1, 1000, 1000, 'deadline', c.now);
    await teach(q, c, 100);
    for (let i = 0; i < rounds; i++) {
      const head = controlled(c);
      const running = q.run(head.job);
      const estimate = q.stats().serviceMs!; // one departure ahead
      const waiter = q.run(async () => 'w');
      head.end(ratio * estimate);
      await running;
      await waiter;
      await teach(q, c, 100, 3); // keep the service time near 100 ms
    }
    const hold = controlled(c);
    const held = q.run(hold.job);
    const tickets = [];
    for (;;) {
      try {
        tickets.push(q.admit());
      } catch {
        break;
      }
    }
    tickets.forEach((tk) => tk.release());
    const { waitFactor, serviceMs } = q.stats();
    hold.end(1);
    await held;
    return { places: tickets.length, factor: waitFactor, serviceMs: serviceMs! };
  }
  const fresh = await placesAfter(1, 0);
  t.equal(fresh.factor, 1, 'no wait seen yet: the plain estimate');
  t.equal(fresh.places, 10, '100 ms per departure: 10 fit in 1 s');
  const slow = await placesAfter(3, 8);
  t.ok(slow.factor > 2.5 && slow.factor <= 5, `waits of 3× the estimate: factor ${slow.factor.toFixed(2)}`);
  t.equal(slow.places, Math.floor(1000 / (slow.serviceMs * slow.factor)), `so ${slow.places} places`);
  t.ok(slow.places <= 4);
  const fast = await placesAfter(0.6, 12);
  t.ok(fast.factor < 1, `waits of 0.6× the estimate: factor ${fast.factor.toFixed(2)}`);
  t.ok(fast.places > fresh.places, `more places (${fast.places})`);
});

t.test('a head of the queue that overruns its estimate tightens admission before it runs', async (t) => {
  const c = clock();
  const q = createQueue(1, 1000, 1000, 'deadline', c.now);
  await teach(q, c, 100);
  const head = controlled(c);
  const running = q.run(head.job);
  const waiter = q.run(async () => 'w'); // estimate 100 ms
  t.equal(q.stats().waitFactor, 1);
  c.advance(400); // the running job is slow: the waiter has waited 4× its estimate so far
  t.equal(q.stats().waitFactor, 4, 'the live ratio of the head');
  // Behind the head: 2 departures × 100 ms × 4 = 800 ms fits, 3 × 400 = 1200 ms does not.
  const tk = q.admit();
  t.throws(() => q.admit(), /estimated wait 1200 ms/);
  tk.release();
  head.end(0);
  await running;
  await waiter;
});

t.test('capacity admission keeps only the bound on waiters', async (t) => {
  const c = clock();
  const q = createQueue(2, 4, 1000, 'capacity', c.now);
  await teach(q, c, 4000);
  const held = [controlled(c), controlled(c)];
  const runs = held.map((h) => q.run(h.job));
  const tickets = [q.admit(), q.admit(), q.admit(), q.admit()];
  t.equal(refusal(t, () => q.admit())?.code, 'queue_full', 'only when slots + capacity are taken');
  tickets.forEach((tk) => tk.release());
  held.forEach((h) => h.end(1));
  await Promise.all(runs);
});

t.test('a waiter still times out at the queue timeout (the safety net)', async (t) => {
  const q = createQueue(1, 10, 50);
  let finish!: () => void;
  const p = q.run(() => new Promise<void>((r) => (finish = r)));
  const e = await q.run(async () => 'never').catch((x: unknown) => x);
  t.equal((e as ServiceError).code, 'queue_timeout');
  t.equal((e as ServiceError).headers['retry-after'], '1');
  finish();
  await p;
});

t.test('waiters that can no longer start before their deadline are shed as soon as a completion shows it', async (t) => {
  const c = clock();
  // One slot, a 60 s timeout (the real timers never fire during the test), 5 s jobs.
  const q = createQueue(1, 100, 60_000, 'deadline', c.now);
  await teach(q, c, 5000);
  const first = controlled(c);
  const pFirst = q.run(first.job);
  // Eight waiters, admitted with estimates of 5, 10, ..., 40 s.
  const jobs = Array.from({ length: 8 }, () => controlled(c));
  const outcomes: Array<string | ServiceError> = [];
  const runs = jobs.map((j, i) => q.run(j.job).then(() => `ran ${i}`, (e: ServiceError) => e).then((o) => void outcomes.push(o)));
  t.equal(q.stats().waiting, 8);
  // The running job takes 20 s instead of 5. S becomes 0.8 × 5 + 0.2 × 20 = 8 s; waiter 0 gets the
  // slot (it waited 4× its estimate: the ratio's mean becomes 1.6). With that slot busy for 8 s,
  // waiters 1, 2, 3 start in 8, 16, 24 s × 1.6 = 12.8, 25.6, 38.4 s, within the 40 s they have
  // left; waiters 4-7 would start in 32 × 1.6 = 51.2 s at best: shed now.
  first.end(20_000);
  await pFirst;
  await new Promise((r) => setImmediate(r));
  const shed = outcomes.filter((o): o is ServiceError => o instanceof ServiceError);
  t.equal(shed.length, 4, 'four shed at once, without waiting for their timeout');
  for (const e of shed) {
    t.equal(e.code, 'queue_full');
    t.match(e.detail, /could no longer start within 60000 ms of its arrival \(estimated start in 51200 ms, 40000 ms left\)/);
    t.equal(e.headers['retry-after'], '12', 'the estimated excess, 51.2 − 40 s, rounded up');
  }
  t.equal(q.stats().waiting, 3, 'the three that can still start in time keep their places');
  t.equal(q.stats().shed, 4);
  for (const i of [0, 1, 2, 3]) {
    jobs[i]!.end(8000); // as estimated: nothing more is shed
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(runs);
  t.same(outcomes.filter((o) => typeof o === 'string').sort(), ['ran 0', 'ran 1', 'ran 2', 'ran 3']);
});

t.test('while the estimate holds, nobody is shed', async (t) => {
  const c = clock();
  const q = createQueue(1, 100, 60_000, 'deadline', c.now);
  await teach(q, c, 5000);
  const jobs = Array.from({ length: 10 }, () => controlled(c));
  const runs = jobs.map((j) => q.run(j.job).then(() => 'ran', (e: ServiceError) => e.code));
  // Each job takes its 5 s, one after another: the 10th starts after 45 s, within 60 s.
  for (const j of jobs) {
    j.end(5000);
    await new Promise((r) => setImmediate(r));
  }
  t.same(await Promise.all(runs), Array(10).fill('ran'));
  t.equal(q.stats().shed, 0);
});

t.test('the headroom keeps a fraction of the timeout for the estimate\'s error', async (t) => {
  async function places(headroom: number): Promise<{ n: number; refusal: ServiceError | null }> {
    const c = clock();
    const q = createQueue(1, 100, 1000, 'deadline', c.now, headroom);
    await teach(q, c, 100);
    const hold = controlled(c);
    const held = q.run(hold.job);
    const tickets = [];
    let refusal: ServiceError | null = null;
    for (;;) {
      try {
        tickets.push(q.admit());
      } catch (e) {
        refusal = e as ServiceError;
        break;
      }
    }
    tickets.forEach((tk) => tk.release());
    hold.end(100);
    await held;
    return { n: tickets.length, refusal };
  }
  t.equal((await places(0)).n, 10, 'no headroom: estimates of 100 … 1000 ms are admitted');
  const r = await places(0.25);
  t.equal(r.n, 7, 'a quarter kept: estimates up to 750 ms');
  t.equal(r.refusal?.code, 'queue_full');
  t.match(r.refusal?.detail, /estimated wait 800 ms, admitted up to 750 ms/);
});

t.test('a wait estimated at a fraction of a service time does not teach the ratio', async (t) => {
  const c = clock();
  const q = createQueue(4, 100, 60_000, 'deadline', c.now);
  await teach(q, c, 1000);
  // Four slots taken, one job started 900 ms before the others: the first slot frees in 100 ms, and
  // one departure is S / 4 = 250 ms on average; the waiter's estimate is 250 ms, a quarter of S.
  const jobs = [controlled(c)];
  const runs = [q.run(jobs[0]!.job)];
  c.advance(900);
  for (let i = 0; i < 3; i++) {
    jobs.push(controlled(c));
    runs.push(q.run(jobs.at(-1)!.job));
  }
  t.equal(q.estimateWaitMs(), 250, 'the waiter\'s estimate: one departure, S / 4');
  const waiter = q.run(async () => 'w');
  // The first job takes 2.5 s more than expected: the waiter met 10× its estimate. Learned, that one
  // sample would lift the factor to its cap of 5; it says nothing about waits of seconds.
  jobs[0]!.end(2500);
  t.equal(await waiter, 'w');
  t.equal(q.stats().waitFactor, 1, 'the ratio is unchanged');
  for (const j of jobs.slice(1)) j.end(0);
  await Promise.all(runs);
});
