/**
 * The JSON array watch (src/http/json-array-watch.ts): a body is refused while it arrives from the
 * first array longer than its limit, and only then, however the body is cut into chunks. Checked
 * against JSON.parse's own reading of random bodies, and end to end on the gateway: a /compare body
 * whose one row passes the value budget is answered before most of it was sent.
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { JsonArrayWatch, type ArrayLimits } from '../src/http/json-array-watch.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { rawRequest } from './helpers/raw-http.js';

/** Feeds `text` in chunks cut at `cuts`; the first refusal's code, or null. */
function watch(text: string, limits: ArrayLimits, cuts: number[] = []): string | null {
  const w = new JsonArrayWatch(limits);
  const buf = Buffer.from(text);
  let at = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < buf.length).sort((a, b) => a - b), buf.length]) {
    const r = w.feed(buf.subarray(at, c));
    if (r) return r.code;
    at = c;
  }
  return null;
}

/** Every cut of `text` into two and three pieces answers the same. */
function everyCut(text: string, limits: ArrayLimits): Set<string | null> {
  const seen = new Set<string | null>();
  const n = Buffer.byteLength(text);
  for (let a = 0; a <= n; a++) {
    seen.add(watch(text, limits, [a]));
    seen.add(watch(text, limits, [a, a + 1]));
  }
  return seen;
}

t.test('arrays are counted by their commas; strings, escapes and nesting do not count', async (t) => {
  const limits = { maxValues: 3 };
  t.same(everyCut('[1,2,3]', limits), new Set([null]), 'three elements: within');
  t.same(everyCut('[1,2,3,4]', limits), new Set(['request_too_large']), 'four: refused, wherever the chunks are cut');
  t.same(everyCut('{"a":[",,,,", "[\\"],,", "\\\\", 3]}', limits), new Set(['request_too_large']), 'four strings with commas, brackets and escapes');
  t.same(everyCut('{"a":["\\\\\\",,,,", 2, 3]}', limits), new Set([null]), 'an escaped quote does not end the string');
  t.same(everyCut('[[1,2,3],[1,2,3],[1,2,3]]', limits), new Set([null]), 'each array on its own');
  t.same(everyCut('{"a":1,"b":2,"c":3,"d":4,"e":5}', limits), new Set([null]), 'object members are not array elements');
  t.same(everyCut('[{"a":[1,2]},{"b":[1,2]},"x"]', limits), new Set([null]));
});

t.test("the member's own limit: /compare's targets rows", async (t) => {
  const limits = { maxValues: 100, member: { name: 'targets', maxElements: 2 } };
  t.same(everyCut('{"img":"x","targets":[[1],[2],[3]]}', limits), new Set(['too_many_targets']));
  t.same(everyCut('{"img":"x","targets":[[1],[2]]}', limits), new Set([null]));
  t.same(everyCut('{"other":[[1],[2],[3]],"targets":[]}', limits), new Set([null]), 'another member is not held to it');
  t.same(everyCut('{"x":{"targets":[1,2,3]}}', limits), new Set([null]), 'only the top-level member');
  t.same(everyCut('{"targets":[[1,2,3,4,5]]}', { maxValues: 4, member: { name: 'targets', maxElements: 2 } }), new Set(['request_too_large']), 'a row past the value budget');
});

/** A random JSON value with strings that hold JSON's punctuation and escapes. */
function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 4 || r < 0.3) return Math.round(rand() * 1e6) / 1e3;
  if (r < 0.5) return Array.from({ length: Math.floor(rand() * 6) }, () => '",[]{}:\\\n\u00e9x'[Math.floor(rand() * 11)]).join('');
  if (r < 0.8) return Array.from({ length: Math.floor(rand() * 9) }, () => randomValue(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, (_, i) => [`k${i}${'",['[i % 3]}`, randomValue(rand, depth + 1)]));
}

function longestArray(v: unknown): number {
  if (Array.isArray(v)) return Math.max(v.length, ...v.map(longestArray));
  if (v && typeof v === 'object') return Math.max(0, ...Object.values(v).map(longestArray));
  return 0;
}

t.test('on 2,000 random bodies cut at random places: refused exactly when an array is longer than the budget', async (t) => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  let refused = 0;
  let wrong = 0;
  for (let i = 0; i < 2000; i++) {
    const text = JSON.stringify(randomValue(rand, 0), null, rand() < 0.3 ? 2 : undefined);
    const n = Buffer.byteLength(text);
    const cuts = Array.from({ length: 4 }, () => Math.floor(rand() * n));
    const got = watch(text, { maxValues: 5 }, cuts);
    const want = longestArray(JSON.parse(text)) > 5 ? 'request_too_large' : null;
    if (got !== want) wrong++;
    if (want) refused++;
  }
  t.equal(wrong, 0, 'every answer matches JSON.parse');
  t.ok(refused > 200 && refused < 1800, `both answers occur (${refused} refused)`);
});

t.test('/compare: a row past the value budget is refused before the rest of the body arrives', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_MAX_JSON_VALUES: '1024', FACECOMPUTE_MAX_TARGETS: '100' });
  const gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'a', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  const port = (gw.app.server.address() as AddressInfo).port;
  const declared = 4 * 1024 * 1024;
  const head = `POST /compare HTTP/1.1\r\nhost: x\r\nauthorization: Bearer a\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`;
  // 64 KiB of the 4 MiB declared: one row of 0.1s, past 1,024 values; then 64 KiB of one-number rows.
  for (const [start, item, code] of [['{"img":[0.1],"targets":[[0.1', ',0.1', 'request_too_large'], ['{"img":[0.1],"targets":[[0]', ',[0]', 'too_many_targets']] as const) {
    const r = rawRequest(port, head, start + item.repeat(Math.ceil(65536 / item.length)));
    t.teardown(() => r.socket.destroy());
    const a = await r.answer;
    t.equal(a.status, 413, `${code}: answered with 1/64 of the body sent`);
    t.equal(a.json.error, code);
  }
});
