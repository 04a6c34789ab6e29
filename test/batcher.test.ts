import t from 'tap';
import { Batcher } from '../src/model-server/batcher.js';

function fakeModel(delayMs: number) {
  const runs: number[] = [];
  const run = async (batch: Float32Array, rows: number) => {
    runs.push(rows);
    await new Promise((r) => setTimeout(r, delayMs));
    // Each output row echoes its input row's first value, so routing errors show.
    return Array.from({ length: rows }, (_, i) => Float32Array.of(batch[i * 2] as number, rows));
  };
  return { run, runs };
}

t.test('an idle model runs a single request at once', async (t) => {
  const m = fakeModel(1);
  // A long window: an idle model must not wait for it.
  const b = new Batcher(m.run, 2, 32, 1000);
  const pending = b.submit(Float32Array.of(7, 0), 1);
  t.same(m.runs, [1], 'the run started within submit, without waiting for the window');
  const out = await pending;
  t.equal(out[0]?.[0], 7);
  t.same(m.runs, [1]);
});

t.test('concurrent requests share runs and get their own rows back', async (t) => {
  const m = fakeModel(20);
  const b = new Batcher(m.run, 2, 32, 2);
  const results = await Promise.all(Array.from({ length: 16 }, (_, i) => b.submit(Float32Array.of(i, 0, i + 100, 0), 2)));
  results.forEach((r, i) => {
    t.equal(r.length, 2);
    t.equal(r[0]?.[0], i);
    t.equal(r[1]?.[0], i + 100);
  });
  t.ok(m.runs.length < 16, `16 requests took ${m.runs.length} runs`);
  t.ok(Math.max(...m.runs) <= 32, 'no run exceeds the maximum batch');
  t.equal(b.stats.rows, 32);
});

t.test('a failing run rejects only the requests in it', async (t) => {
  let calls = 0;
  const b = new Batcher(
    async (_batch, rows) => {
      calls++;
      if (calls === 1) throw new Error('boom');
      return Array.from({ length: rows }, () => new Float32Array(1));
    },
    1,
    4,
    0,
  );
  const first = b.submit(new Float32Array(1), 1);
  await t.rejects(first, /boom/);
  t.equal((await b.submit(new Float32Array(1), 1)).length, 1);
});

t.test('a row count that does not match the data is refused', async (t) => {
  const b = new Batcher(fakeModel(0).run, 2, 4, 0);
  await t.rejects(b.submit(new Float32Array(3), 2), RangeError);
});

t.test('batching off: one run per request', async (t) => {
  const m = fakeModel(5);
  const b = new Batcher(m.run, 2, 1, 0);
  await Promise.all(Array.from({ length: 5 }, () => b.submit(new Float32Array(2), 1)));
  t.same(m.runs, [1, 1, 1, 1, 1]);
});
