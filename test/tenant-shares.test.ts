/**
 * Per-account shares of what every tenant shares (issue 37, item 2): one account's uploads hold at
 * most FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT of the body budget, its concurrency slot is
 * taken before the budget, an upload below FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S is cut off (408
 * upload_too_slow), and every element of an MCP batch counts against the key's window. Bodies are
 * held by not sending them; nothing is timed.
 */
import t, { type Test } from 'tap';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { createDocsCorpus } from '../src/mcp/docs-tools.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { rawRequest } from './helpers/raw-http.js';
import { REPO_ROOT } from './helpers/shared.js';
import { makePng } from './helpers/images.js';

const logger = createLogger('test', 'silent');
const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;
const head = (key: string, length: number, path = '/verify') =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${length}\r\n\r\n`;
const until = async (f: () => boolean) => {
  for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
};

async function gateway(t: Test, env: Record<string, string>) {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', ...env });
  const accounts = new MemoryAccounts([
    { key: 'a', accountId: 'a', kind: 'rest' },
    { key: 'b', accountId: 'b', kind: 'rest' },
  ]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  return { gw, port: portOf(gw.app) };
}

t.test('one account dripping uploads holds only its share; another tenant still gets in', async (t) => {
  // The attack of the review, scaled down: six uploads that declare 1.6 MB each and drip, from one key,
  // against an 8 MB budget. Before the share, five of them filled it and b got 503 body_capacity_full.
  const { gw, port } = await gateway(t, { FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES: '8000000', FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES_PER_ACCOUNT: '3000000' });
  const held = [rawRequest(port, head('a', 1_600_000), '{"img1": "')];
  t.teardown(() => held.forEach((h) => h.socket.destroy()));
  await until(() => gw.bodyBudget.inUse === 1_600_000);
  const refusals = [];
  for (let i = 0; i < 5; i++) {
    const r = rawRequest(port, head('a', 1_600_000), '{"img1": "');
    held.push(r);
    refusals.push(await r.answer);
  }
  for (const r of refusals) {
    t.equal(r.status, 429, 'past its share: 429');
    t.equal(r.json.error, 'rate_limited');
  }
  t.equal(gw.bodyBudget.inUse, 1_600_000, 'the account holds one upload, its share');
  t.equal(gw.bodyBudget.heldBy('a'), 1_600_000);
  const other = await rawRequest(port, head('b', 2), '{}').answer;
  t.equal(other.status, 400, "the other tenant's request is read and answered (here a validation error), not 503");
  held[0]!.socket.destroy();
  await until(() => gw.bodyBudget.inUse === 0);
  t.equal(gw.bodyBudget.heldBy('a'), 0, 'given back when the upload ends');
});

t.test('the concurrency slot is taken before the body budget', async (t) => {
  const { gw, port } = await gateway(t, { FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES: '1500000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1' });
  const holder = rawRequest(port, head('a', 1_000_000), '{"img1": "');
  t.teardown(() => holder.socket.destroy());
  await until(() => gw.bodyBudget.inUse === 1_000_000);
  // The account's only slot is taken: its second request is refused for that, not for the budget it
  // would have found full (budget first answered 503 body_capacity_full, a capacity fault of ours).
  const second = await rawRequest(port, head('a', 1_000_000), '{}').answer;
  t.equal(second.status, 429);
  t.equal(second.json.error, 'rate_limited');
  t.match(second.json, { detail: /concurrent/ });
  t.equal(gw.bodyBudget.inUse, 1_000_000, 'the refusal took no budget');
});

t.test('an upload below the minimum rate is cut off with upload_too_slow', async (t) => {
  const { gw, port } = await gateway(t, { FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S: '10000', FACECOMPUTE_UPLOAD_GRACE_MS: '300', FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS: '20000' });
  const drip = rawRequest(port, head('a', 500_000), '{"img1": "');
  t.teardown(() => drip.socket.destroy());
  const closed = new Promise<void>((r) => drip.socket.once('close', () => r()));
  const a = await drip.answer;
  t.equal(a.status, 408);
  t.equal(a.json.error, 'upload_too_slow');
  t.match(a.headers, /\r\nconnection: close/i);
  await closed;
  await until(() => gw.bodyBudget.inUse === 0);
  t.equal(gw.bodyBudget.inUse, 0, 'its share of the budget is back');
  // A prompt upload is not touched.
  const ok = await rawRequest(port, head('a', 2), '{}').answer;
  t.equal(ok.status, 400);
});

t.test('body bytes sent with the headers count towards the rate', async (t) => {
  // 40,000 bytes arrive with the headers: at 10,000 bytes/s that is 4 s of credit. It was cut off at the
  // first check with the upload that sent nothing, since the watch counted only bytes read after it began.
  const { port } = await gateway(t, { FACECOMPUTE_MIN_UPLOAD_BYTES_PER_S: '10000', FACECOMPUTE_UPLOAD_GRACE_MS: '300', FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS: '20000' });
  const prompt = rawRequest(port, head('a', 500_000), `{"img1": "${'A'.repeat(40_000)}`);
  const drip = rawRequest(port, head('b', 500_000), '{"img1": "');
  t.teardown(() => [prompt, drip].forEach((r) => r.socket.destroy()));
  let answered = false;
  void prompt.answer.then(() => (answered = true), () => (answered = true));
  t.equal((await drip.answer).json.error, 'upload_too_slow', 'the upload that sent nothing is cut off at the first check');
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(answered, 'the one that sent 40,000 bytes with its headers is still within its rate');
});

t.test('/compare with several image sources is one upstream job, one queue place', async (t) => {
  // One upstream slot and no waiting room: three image sources as three jobs would find the queue full.
  let running = 0;
  let peak = 0;
  let calls = 0;
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_UPSTREAM_CONCURRENCY: '1', FACECOMPUTE_QUEUE_CAPACITY: '0' });
  const accounts = new MemoryAccounts([{ key: 'a', accountId: 'a', kind: 'rest', credits: 10 }]);
  const upstream = stubUpstream({
    embed: async () => {
      calls++;
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return { embedding: Array(128).fill(0.1), facial_area: { x: 0, y: 0, w: 8, h: 8 }, face_confidence: 1 } as never;
    },
  });
  const gw = await buildGateway({ config, accounts, logger, upstream });
  t.teardown(() => gw.close(0));
  const png = makePng(8, 8).toString('base64');
  const r = await gw.app.inject({
    method: 'POST',
    url: '/compare',
    headers: { authorization: 'Bearer a', 'content-type': 'application/json' },
    payload: JSON.stringify({ source: [{ img: png }, { img: png }, { img: png }], targets: [Array(128).fill(0.2)] }),
  });
  t.equal(r.statusCode, 200, r.body.slice(0, 200));
  t.equal(calls, 3, 'each source embedded');
  t.equal(peak, 1, 'one at a time, in the one slot');
  t.equal(gw.queue.stats().reserved, 0, 'the admission ticket was given back');
});

t.test('MCP: every element of a batch counts against the key window; docs resources are cached', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_RATE_LIMIT_REQUESTS: '10' });
  const accounts = new MemoryAccounts([{ key: 'm', accountId: 'a', kind: 'mcp' }]);
  const mcp = await createMcp({ config, accounts, logger, upstream: stubUpstream() });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const batch = Array.from({ length: 25 }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'resources/list', params: {} }));
  const r = await fetch(`http://127.0.0.1:${portOf(mcp.app)}/mcp`, {
    method: 'POST',
    headers: { authorization: 'Bearer m', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(batch),
  });
  t.equal(r.status, 200);
  const answers = (await r.json()) as Array<{ result?: unknown; error?: { code: number; data?: { error?: string } } }>;
  t.equal(answers.length, 25);
  const ok = answers.filter((a) => a.result !== undefined).length;
  const limited = answers.filter((a) => a.error?.data?.error === 'rate_limited').length;
  t.equal(ok, 10, 'the window (10) answers ten elements');
  t.equal(limited, 15, 'the other fifteen are rate_limited');
  // A request afterwards is refused too: the batch spent the window.
  const call = await fetch(`http://127.0.0.1:${portOf(mcp.app)}/mcp`, {
    method: 'POST',
    headers: { authorization: 'Bearer m', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_docs', arguments: { query: 'limits' } } }),
  });
  t.equal(call.status, 429, 'the spent key is refused from the headers, its body unread');
  t.equal(((await call.json()) as { error?: string }).error, 'rate_limited');

  const docs = createDocsCorpus(`${REPO_ROOT}/docs`, { console: 'https://c', base: 'https://b', mcp: 'https://m/mcp' });
  t.equal(docs.listResources(), docs.listResources(), 'resources/list is built once');
  const uri = docs.listResources()[0]!.uri;
  t.equal(docs.readResource(uri).contents[0]!.text, docs.readResource(uri).contents[0]!.text);
});
