/**
 * The replica set on its own (src/model-client/replicas.ts): least-outstanding choice with
 * round-robin ties, ejection after consecutive failures only, probing with backoff and readmission,
 * the panic fallback when every replica is down, and membership from several discovery sources.
 */
import t from 'tap';
import { ReplicaSet, type Replica } from '../src/model-client/replicas.js';

type Conn = { origin: string; closed: boolean };

function makeSet(probe: (r: Replica<Conn>) => Promise<boolean> = async () => false, health = { ejectAfter: 3, probeMs: 10, probeMaxMs: 40 }) {
  const closed: string[] = [];
  const set = new ReplicaSet<Conn>({
    health,
    connect: (origin) => ({ origin, closed: false }),
    disconnect: async (c) => {
      c.closed = true;
      closed.push(c.origin);
    },
    probe,
  });
  return { set, closed };
}

const until = async (f: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
};

t.test('least outstanding wins; ties rotate instead of piling onto the first replica', async (t) => {
  const { set } = makeSet();
  set.update('urls', ['http://a:1', 'http://b:1', 'http://c:1']);
  const counts = new Map<string, number>();
  for (let i = 0; i < 30; i++) {
    const r = set.pick()!;
    counts.set(r.origin, (counts.get(r.origin) ?? 0) + 1);
  }
  t.same([...counts.values()], [10, 10, 10], 'idle replicas share sequential traffic evenly');

  const [a, b, c] = ['http://a:1', 'http://b:1', 'http://c:1'].map((o) => set.snapshot().find((s) => s.origin === o)!);
  t.ok(a && b && c);
  // Load two replicas: every pick goes to the idle one, whatever the rotation.
  const reps = new Map<string, Replica<Conn>>();
  for (let i = 0; i < 3; i++) {
    const r = set.pick()!;
    reps.set(r.origin, r);
  }
  reps.get('http://a:1')!.outstanding = 5;
  reps.get('http://b:1')!.outstanding = 2;
  for (let i = 0; i < 10; i++) t.equal(set.pick()!.origin, 'http://c:1');
  reps.get('http://c:1')!.outstanding = 9;
  t.equal(set.pick()!.origin, 'http://b:1', 'then the next least loaded');
  t.equal(set.pick(reps.get('http://b:1'))!.origin, 'http://a:1', 'an excluded replica is skipped');
  await set.close();
});

t.test('ejection needs consecutive failures; a success in between resets the count', async (t) => {
  const { set } = makeSet();
  set.update('urls', ['http://a:1', 'http://b:1']);
  const a = set.pick()!;
  set.failed(a, 'connect');
  set.failed(a, 'connect');
  set.succeeded(a);
  set.failed(a, 'connect');
  set.failed(a, 'connect');
  t.equal(a.state, 'up', 'four failures, but never three in a row');
  set.failed(a, 'malformed');
  t.equal(a.state, 'down', 'the third in a row ejects it');
  t.match(a.reason, /3 consecutive failures \(last: malformed\)/);
  for (let i = 0; i < 6; i++) t.not(set.pick(), a, 'an ejected replica takes no traffic while another is up');
  await set.close();
});

t.test('an ejected replica is probed with a growing delay and readmitted when ready', async (t) => {
  let ready = false;
  const probeTimes: number[] = [];
  const { set } = makeSet(async () => {
    probeTimes.push(Date.now());
    return ready;
  });
  set.update('urls', ['http://a:1', 'http://b:1']);
  const a = set.pick()!;
  set.notReady(a, 'answered service_warming');
  t.equal(a.state, 'down', 'not ready: out at once, without waiting for failures');
  await until(() => probeTimes.length >= 4);
  // Probes at 10 ms, then 20, 40 and 40 (capped) after each other: each gap is at least its delay,
  // a lower bound no load can break (comparing one measured gap with another could, the first
  // stretched by a busy machine; timer granularity allows 1 ms early).
  const gaps = probeTimes.slice(1).map((x, i) => x - probeTimes[i]!);
  [20, 40, 40].forEach((want, i) => t.ok(gaps[i]! >= want - 1, `probe delay ${i + 2} is at least ${want} ms (${gaps[i]} ms): the delays grow, capped`));
  ready = true;
  await until(() => a.state === 'up');
  t.equal(a.failures, 0);
  const n = probeTimes.length;
  await new Promise((r) => setTimeout(r, 100));
  t.equal(probeTimes.length, n, 'probing stops once readmitted');
  await set.close();
});

t.test('when every replica is down, the least loaded one is still tried (panic), and none at all is null', async (t) => {
  const { set } = makeSet();
  t.equal(set.pick(), null, 'no replica known');
  set.update('urls', ['http://a:1', 'http://b:1']);
  const a = set.pick()!;
  const b = set.pick()!;
  set.notReady(a, 'x');
  set.notReady(b, 'y');
  a.outstanding = 3;
  t.equal(set.pick(), b);
  t.same(set.candidates().length, 2, 'readiness asks every replica when none is up');
  await set.close();
});

t.test('membership is the union of the sources; a replica that leaves is closed', async (t) => {
  const { set, closed } = makeSet();
  set.update('urls', ['http://a:1']);
  set.update('dns', ['http://10.0.0.1:8090', 'http://10.0.0.2:8090']);
  t.same(set.snapshot().map((s) => s.origin).sort(), ['http://10.0.0.1:8090', 'http://10.0.0.2:8090', 'http://a:1']);
  const leaving = set.snapshot().find((s) => s.origin === 'http://10.0.0.1:8090');
  t.ok(leaving);
  set.update('dns', ['http://10.0.0.2:8090', 'http://10.0.0.3:8090']);
  t.same(set.snapshot().map((s) => s.origin).sort(), ['http://10.0.0.2:8090', 'http://10.0.0.3:8090', 'http://a:1'], 'joined and left');
  t.same(closed, ['http://10.0.0.1:8090'], 'the one that left is closed (its pool finishes in-flight requests first)');
  set.update('dns', []);
  t.same(set.snapshot().map((s) => s.origin), ['http://a:1'], 'the static list stays when DNS has nothing');
  await set.close();
  t.equal(closed.length, 4, 'close closes the rest');
});
