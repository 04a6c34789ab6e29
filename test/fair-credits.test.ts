/**
 * Fair credits (issue 15, item 9; src/accounts/charging.ts): a call is consumed only when compute ran
 * (2xx, `422 no_face_detected`); every refusal before compute (4xx validation, 401, 402, 404, 413,
 * 429, 503) and every failure of ours (5xx) leaves the allowance as it was, but `502 upstream_lost`
 * (the model server died with the request's frame: presumed the input's doing, issue 24). Each class
 * is checked on REST and on MCP, against the real accounts store on SQLite and PostgreSQL, with the
 * fake model server (a real process) for the upstream outcomes.
 *
 * Each call's usage record (issue 28, src/accounts/usage/) is checked beside it: one record per call
 * with a key, its status, error code and x-request-id, and 'charged' exactly when the allowance moved,
 * so the Usage page's charged counts equal the calls consumed.
 */
import t, { type Test } from 'tap';
import { verifyEmailOf } from './helpers/verify-email.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AccountsStore } from '../src/accounts/index.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { eachDatabase } from './helpers/accounts-db.js';
import { setFault, startFakeModelServer, type Proc } from './helpers/procs.js';
import { makePng } from './helpers/images.js';
import { UsageRecorder } from '../src/accounts/usage/recorder.js';
import { usageReport, type UsageReport } from '../src/accounts/usage/report.js';

const PNG = makePng(32, 24, 3).toString('base64');
const NOFACE = makePng(7, 7, 1).toString('base64'); // the fake model server finds no face in 7-px-wide images
const E128 = Array.from({ length: 128 }, (_, i) => Math.sin(i));
const PUBLIC_IP = '93.184.216.34';
const logger = createLogger('test', 'silent');

let ms: Proc;
let imgServer: Server;
let imgPort = 0;

t.before(async () => {
  ms = await startFakeModelServer();
  imgServer = createServer((rq, rs) => {
    if (rq.url === '/slow.png') setTimeout(() => { rs.writeHead(200, { 'content-type': 'image/png' }); rs.end(Buffer.from(PNG, 'base64')); }, 800);
    else { rs.writeHead(404); rs.end(); }
  });
  await new Promise<void>((r) => imgServer.listen(0, '127.0.0.1', r));
  imgPort = (imgServer.address() as AddressInfo).port;
});
t.teardown(() => {
  ms?.kill('SIGKILL');
  imgServer?.close();
});

interface Stack {
  store: AccountsStore;
  gateway: string;
  mcp: string;
  close(): Promise<void>;
}

/** The usage recorder of the database under test, shared by its stacks (as `serve` shares one). */
let usage: UsageRecorder;

async function stack(store: AccountsStore, env: Record<string, string> = {}): Promise<Stack> {
  const config = loadConfig({
    FACECOMPUTE_LOG_LEVEL: 'silent',
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_UPSTREAM_TIMEOUT_MS: '1500',
    FACECOMPUTE_MAX_IMAGE_BYTES: String(64 << 10),
    FACECOMPUTE_MAX_REQUEST_BYTES: String(1 << 20),
    FACECOMPUTE_MAX_TARGETS: '10',
    FACECOMPUTE_REMOTE_IMAGES: 'public',
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '100',
    ...env,
  });
  const remoteFetch = {
    lookup: async () => [{ address: PUBLIC_IP, family: 4 as const }],
    testDial: () => ({ host: '127.0.0.1', port: imgPort }),
  };
  const gw: Gateway = await buildGateway({ config, accounts: store, logger, remoteFetch, usage });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const mcp = await createMcp({ config, accounts: store, logger, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue, remoteFetch, usage });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    store,
    gateway: `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`,
    mcp: `http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`,
    async close() {
      await mcp.app.close();
      await gw.close(100);
    },
  };
}

async function account(store: AccountsStore, n: number) {
  const s = await store.signup(`fair-${n}-${Date.now()}@example.com`, 'correct horse battery');
  await verifyEmailOf(store, s.account.id);
  const rest = await store.createKey(s.account.id, 'rest', 'rest');
  const mcp = await store.createKey(s.account.id, 'mcp', 'mcp');
  return { id: s.account.id, rest: rest.key, mcp: mcp.key };
}

const used = async (store: AccountsStore, id: string) => (await store.getAccount(id)).free_calls.used;

interface Answer {
  status: number;
  code: string | undefined;
  /** REST only: the answer's x-request-id. */
  requestId?: string;
}

async function post(base: string, path: string, key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const h: Record<string, string> = { ...headers };
  if (key) h['authorization'] = `Bearer ${key}`;
  let payload: string | undefined;
  if (typeof body === 'string') payload = body;
  else if (body !== undefined) {
    h['content-type'] ??= 'application/json';
    payload = JSON.stringify(body);
  }
  const r = await fetch(base + path, { method: 'POST', headers: h, body: payload });
  const j = (await r.json().catch(() => ({}))) as { error?: string };
  return { status: r.status, code: j.error, requestId: r.headers.get('x-request-id') ?? '' };
}

/**
 * The account's usage once at least `total` requests are recorded (a record is made when the response
 * closes, after the caller has its answer, and written in batches), or after 5 s. With `total` already
 * reached it still waits a moment, so that a record that should not exist has had time to appear.
 */
async function settledUsage(store: AccountsStore, id: string, total: number): Promise<UsageReport> {
  const deadline = Date.now() + 5000;
  await new Promise((r) => setTimeout(r, 30));
  for (;;) {
    await usage.flush();
    const r = await usageReport(store.db, id);
    if (r.totals.total >= total || Date.now() > deadline) return r;
    await new Promise((res) => setTimeout(res, 20));
  }
}

async function mcpClient(url: string, key: string): Promise<Client> {
  const c = new Client({ name: 'fair-credits', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
}

/**
 * One outcome class: the answer's code (or 200) and whether it consumed a call; and its usage record.
 * `recorded: false`: refused before its key was authenticated (no key, a key of the other kind, no
 * such route, a declared body over the limit), so there is no account to record it for.
 */
async function charged(t: Test, store: AccountsStore, id: string, label: string, call: () => Promise<Answer>, expect: { status: number; code?: string; consumes: 0 | 1; recorded?: false }): Promise<void> {
  const before = await used(store, id);
  const u0 = (await settledUsage(store, id, 0)).totals;
  const r = await call();
  t.equal(r.status, expect.status, `${label}: status`);
  if (expect.code) t.equal(r.code, expect.code, `${label}: code`);
  t.equal((await used(store, id)) - before, expect.consumes, `${label}: ${expect.consumes ? 'consumes one call' : 'consumes nothing'}`);

  const want = expect.recorded === false ? 0 : 1;
  const u1 = await settledUsage(store, id, u0.total + want);
  t.equal(u1.totals.total - u0.total, want, `${label}: ${want ? 'one usage record' : 'no usage record'}`);
  t.equal(u1.totals.charged - u0.charged, expect.consumes, `${label}: usage says charged exactly when a call was consumed`);
  if (!want) return;
  const last = u1.recent[0]!;
  t.equal(last.error, expect.code ?? null, `${label}: usage error code`);
  t.equal(last.outcome === 'charged', expect.consumes === 1, `${label}: usage outcome ${last.outcome}`);
  if (r.requestId !== undefined) {
    t.equal(last.status, r.status, `${label}: usage status`);
    t.equal(last.request_id, r.requestId, `${label}: usage request id is the answer's x-request-id`);
    t.equal(last.surface, 'rest');
  } else {
    t.equal(last.surface, 'mcp');
  }
}

eachDatabase(t, async (t, tdb) => {
  const store = await tdb.open();
  usage = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000 });
  const s = await stack(store);
  t.teardown(async () => {
    await s.close();
    await usage.close();
    await store.close();
  });

  t.test('REST: each class of answer', async (t) => {
    const a = await account(store, 1);
    const v = (body: unknown, key: string | null = a.rest, path = '/verify') => () => post(s.gateway, path, key, body);
    const c = (x: Parameters<typeof charged>[4], expect: Parameters<typeof charged>[5], label: string) => charged(t, store, a.id, label, x, expect);
    await c(v({ img1: PNG, img2: PNG, model_name: 'Facenet' }), { status: 200, consumes: 1 }, 'verify, two images');
    await c(v({ img1: E128, img2: E128, model_name: 'Facenet' }), { status: 200, consumes: 1 }, 'verify, two embeddings (no model server)');
    await c(v({ img: PNG }, a.rest, '/represent'), { status: 200, consumes: 1 }, 'represent');
    await c(v({ source: { img: PNG }, targets: [E128] }, a.rest, '/compare'), { status: 200, consumes: 1 }, 'compare, image source');
    await c(v({ source: { embedding: E128 }, targets: [E128] }, a.rest, '/compare'), { status: 200, consumes: 1 }, 'compare, embedding source');
    await c(v({ source: [{ embedding: E128 }, { img: PNG }], targets: [E128] }, a.rest, '/compare'), { status: 200, consumes: 1 }, 'compare, many sources: one call');
    await c(v({ source: [{ img: PNG }, { embedding: E128.slice(1) }], targets: [E128] }, a.rest, '/compare'), { status: 400, code: 'embedding_dimension_mismatch', consumes: 0 }, 'compare, many sources, one bad');
    await c(v({ img: NOFACE }, a.rest, '/represent'), { status: 422, code: 'no_face_detected', consumes: 1 }, 'no face after the detectors ran');

    await c(v({ img1: PNG, img2: PNG, colour: 'red' }), { status: 400, code: 'invalid_request', consumes: 0 }, 'unknown field');
    await c(v({ img1: PNG, img2: PNG, model_name: 'VGG-Face' }), { status: 400, code: 'model_not_allowed', consumes: 0 }, 'model not allowed');
    await c(v({ img: PNG, detector_backend: 'centerface' }, a.rest, '/represent'), { status: 400, code: 'detector_not_allowed', consumes: 0 }, 'detector not allowed');
    await c(v({ img1: PNG, img2: PNG, anti_spoofing: true }), { status: 400, code: 'unsupported_option', consumes: 0 }, 'unsupported option');
    await c(v({ img1: 'bm90IGFuIGltYWdl', img2: PNG }), { status: 400, code: 'invalid_image', consumes: 0 }, 'not an image');
    await c(v({ img1: E128.slice(1), img2: PNG }), { status: 400, code: 'embedding_dimension_mismatch', consumes: 0 }, 'dimension mismatch');
    await c(v({ img1: [...E128.slice(1), 'x'], img2: PNG }), { status: 400, code: 'invalid_embedding', consumes: 0 }, 'not a number in an embedding');
    await c(v({ img1: 'file:face.png', img2: PNG }), { status: 400, code: 'input_mode_disabled', consumes: 0 }, 'input mode off');
    await c(v({ img1: 'http://127.0.0.1/face.png', img2: PNG }), { status: 400, code: 'url_not_allowed', consumes: 0 }, 'SSRF refusal');
    await c(() => post(s.gateway, '/verify', a.rest, 'abc', { 'content-type': 'multipart/form-data' }), { status: 400, code: 'invalid_request', consumes: 0 }, 'malformed multipart');
    await c(v({ img1: PNG, img2: PNG }, a.mcp), { status: 401, code: 'invalid_api_key', consumes: 0, recorded: false }, 'an MCP key on REST');
    await c(v({ img1: PNG, img2: PNG }, a.rest, '/verify/extra'), { status: 404, code: 'not_found', consumes: 0, recorded: false }, 'no such route');
    await c(v({ img: Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(70 << 10)]).toString('base64') }, a.rest, '/represent'), { status: 413, code: 'image_too_large', consumes: 0 }, 'image too large');
    await c(v({ img: 'A'.repeat(1 << 20) }, a.rest, '/represent'), { status: 413, code: 'request_too_large', consumes: 0, recorded: false }, 'request too large');
    await c(v({ source: { embedding: E128 }, targets: Array(11).fill(E128) }, a.rest, '/compare'), { status: 413, code: 'too_many_targets', consumes: 0 }, 'too many targets');
    await c(v({ img: 'https://images.example.com/missing.png' }, a.rest, '/represent'), { status: 422, code: 'url_fetch_failed', consumes: 0 }, 'remote image not found');

    for (const [mode, status, code] of [['5xx', 502, 'upstream_failed'], ['stall', 504, 'upstream_timeout'], ['warming', 503, 'service_warming']] as const) {
      await setFault(ms.port, mode);
      await c(v({ img1: PNG, img2: PNG }), { status, code, consumes: 0 }, `model server ${mode}`);
    }
    // The model server read the frame and died with it: presumed the input's doing (issue 24), the one
    // 5xx that keeps its call (and a strike).
    await setFault(ms.port, 'die');
    await c(v({ img1: PNG, img2: PNG }), { status: 502, code: 'upstream_lost', consumes: 1 }, 'model server die');
    await setFault(ms.port, 'none');
  });

  t.test("REST: the DeepFace user's Postman collection (10 calls, 4 of them 400s) uses 6 calls", async (t) => {
    const a = await account(store, 2);
    const bodies = [
      { img1: PNG, img2: PNG }, { img1: PNG, img2: PNG, model_name: 'VGG-Face' }, { img1: PNG, img2: PNG, model_name: 'ArcFace' },
      { img1: PNG, img2: PNG, detector_backend: 'centerface' }, { img1: PNG, img2: PNG, model_name: 'Facenet512' }, { img1: PNG, img2: PNG, distance_metric: 'euclidean' },
      { img1: PNG, img2: PNG, detector_backend: 'dlib' }, { img1: PNG, img2: PNG, model_name: 'SFace' }, { img1: PNG, img2: PNG, align: false }, { img1: PNG, img2: PNG, threshold: 0.3 },
    ];
    const statuses = [];
    for (const b of bodies) statuses.push((await post(s.gateway, '/verify', a.rest, b)).status);
    t.same(statuses.filter((x) => x === 400).length, 4);
    t.equal(await used(store, a.id), 6);
  });

  t.test('REST: 402 and 429 consume nothing; a caller who goes away mid-compute is refunded', async (t) => {
    const a = await account(store, 3);
    await store.db.updateTable('usage').set({ consumed: 50 }).where('account_id', '=', a.id).execute();
    await charged(t, store, a.id, 'out of credits', () => post(s.gateway, '/verify', a.rest, { img1: E128, img2: E128 }), { status: 402, code: 'insufficient_credits', consumes: 0 });
    t.equal((await post(s.gateway, '/verify', a.rest, { img1: PNG, img2: PNG, model_name: 'VGG-Face' })).code, 'model_not_allowed', 'an invalid request is told what is wrong, not 402');
    await store.db.updateTable('usage').set({ consumed: 0 }).where('account_id', '=', a.id).execute();

    const limited = await stack(store, { FACECOMPUTE_RATE_LIMIT_REQUESTS: '1' });
    t.teardown(() => limited.close());
    await charged(t, store, a.id, 'first call', () => post(limited.gateway, '/verify', a.rest, { img1: E128, img2: E128 }), { status: 200, consumes: 1 });
    await charged(t, store, a.id, 'rate limited', () => post(limited.gateway, '/verify', a.rest, { img1: E128, img2: E128 }), { status: 429, code: 'rate_limited', consumes: 0 });

    await setFault(ms.port, 'none', 1000);
    t.teardown(() => setFault(ms.port, 'none'));
    const before = await used(store, a.id);
    const ac = new AbortController();
    const gone = fetch(`${s.gateway}/represent`, { method: 'POST', signal: ac.signal, headers: { authorization: `Bearer ${a.rest}`, 'content-type': 'application/json' }, body: JSON.stringify({ img: PNG }) }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 300));
    ac.abort();
    t.equal(await gone, 'aborted');
    await new Promise((r) => setTimeout(r, 1500));
    t.equal(await used(store, a.id), before, 'the caller got no answer: the call is given back');
    const gu = await settledUsage(store, a.id, 0);
    t.match(gu.recent[0], { route: '/represent', status: 499, error: 'client_closed', outcome: 'refunded' }, 'usage: recorded as closed by the client, refunded');

    const ac2 = new AbortController();
    const early = fetch(`${s.gateway}/represent`, { method: 'POST', signal: ac2.signal, headers: { authorization: `Bearer ${a.rest}`, 'content-type': 'application/json' }, body: JSON.stringify({ img: 'http://images.example.com/slow.png' }) }).catch(() => 'aborted');
    await new Promise((r) => setTimeout(r, 200));
    ac2.abort();
    t.equal(await early, 'aborted');
    await new Promise((r) => setTimeout(r, 1500));
    t.equal(await used(store, a.id), before, 'the caller went away while its image was fetched, before any call was reserved');
  });

  t.test('REST: consumption stays atomic with refusals in the mix: 20 valid + 20 invalid in parallel against 5 credits', async (t) => {
    const a = await account(store, 4);
    await store.db.updateTable('usage').set({ consumed: 45 }).where('account_id', '=', a.id).execute();
    const valid = Array.from({ length: 20 }, () => post(s.gateway, '/verify', a.rest, { img1: E128, img2: E128 }));
    const invalid = Array.from({ length: 20 }, () => post(s.gateway, '/verify', a.rest, { img1: E128, img2: E128, model_name: 'VGG-Face' }));
    const rs = await Promise.all([...valid, ...invalid]);
    t.equal(rs.slice(0, 20).filter((r) => r.status === 200).length, 5, 'exactly min(N, M) valid calls succeed');
    t.equal(rs.slice(0, 20).filter((r) => r.code === 'insufficient_credits').length, 15);
    t.ok(rs.slice(20).every((r) => r.code === 'model_not_allowed'), 'invalid calls are refused as invalid, never 402');
    t.equal(await used(store, a.id), 50);
    const u = await settledUsage(store, a.id, 40);
    t.same(u.totals, { charged: 5, refunded: 0, refused: 35, free: 0, total: 40 }, 'usage: 5 charged, 15 out of credits and 20 invalid refused');
  });

  t.test('MCP: each class of tool result', async (t) => {
    const a = await account(store, 5);
    const client = await mcpClient(s.mcp, a.mcp);
    t.teardown(() => client.close());
    const tool = (name: string, args: Record<string, unknown>) => async () => {
      const r = await client.callTool({ name, arguments: args });
      const sc = r.structuredContent as { error?: string } | undefined;
      return { status: r.isError ? 400 : 200, code: r.isError ? sc?.error : undefined };
    };
    const c = (x: Parameters<typeof charged>[4], code: string | null, consumes: 0 | 1, label: string) =>
      charged(t, store, a.id, label, x, code ? { status: 400, code, consumes } : { status: 200, consumes });
    await c(tool('get_capabilities', {}), null, 0, 'get_capabilities is free');
    await c(tool('verify_faces', { img1: PNG, img2: PNG }), null, 1, 'verify_faces');
    await c(tool('verify_faces', { img1: E128, img2: E128 }), null, 1, 'verify_faces, embeddings');
    await c(tool('represent_face', { img: PNG }), null, 1, 'represent_face');
    await c(tool('compare_inputs', { source: { embedding: E128 }, targets: [E128] }), null, 1, 'compare_inputs');
    await c(tool('represent_face', { img: NOFACE }), 'no_face_detected', 1, 'no face after the detectors ran');
    await c(tool('verify_faces', { img1: PNG, img2: PNG, model_name: 'VGG-Face' }), 'model_not_allowed', 0, 'model not allowed');
    await c(tool('verify_faces', { img1: PNG, img2: PNG, colour: 'red' }), 'invalid_request', 0, 'unknown argument');
    await c(tool('verify_faces', { img1: E128.slice(1), img2: PNG }), 'embedding_dimension_mismatch', 0, 'dimension mismatch');
    await c(tool('represent_face', { img: 'bm90IGFuIGltYWdl' }), 'invalid_image', 0, 'not an image');
    await c(tool('represent_face', { img: 'https://127.0.0.1/face.png' }), 'url_not_allowed', 0, 'SSRF refusal');
    await c(tool('represent_face', { img: Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(70 << 10)]).toString('base64') }), 'image_too_large', 0, 'image too large');
    await c(tool('compare_inputs', { source: { embedding: E128 }, targets: Array(11).fill(E128) }), 'too_many_targets', 0, 'too many targets');
    for (const [mode, code] of [['5xx', 'upstream_failed'], ['warming', 'service_warming']] as const) {
      await setFault(ms.port, mode);
      await c(tool('verify_faces', { img1: PNG, img2: PNG }), code, 0, `model server ${mode}`);
    }
    await setFault(ms.port, 'none');
    await store.db.updateTable('usage').set({ consumed: 50 }).where('account_id', '=', a.id).execute();
    await c(tool('verify_faces', { img1: E128, img2: E128 }), 'insufficient_credits', 0, 'out of credits');
  });

  t.test('MCP: 429 consumes nothing', async (t) => {
    const a = await account(store, 6);
    const limited = await stack(store, { FACECOMPUTE_RATE_LIMIT_REQUESTS: '1' });
    t.teardown(() => limited.close());
    const client = await mcpClient(limited.mcp, a.mcp);
    t.teardown(() => client.close());
    const args = { img1: E128, img2: E128 };
    t.notOk((await client.callTool({ name: 'verify_faces', arguments: args })).isError);
    // A key whose window is spent is refused from the headers, before its body: HTTP 429.
    await t.rejects(client.callTool({ name: 'verify_faces', arguments: args }), /rate_limited/);
    t.equal(await used(store, a.id), 1);
  });
});
