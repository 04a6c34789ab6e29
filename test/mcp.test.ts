/**
 * The MCP endpoint over real HTTP with the SDK's own client, against a real model server (Facenet, the default, and Dlib):
 * tool listing, results equal to the REST routes', key kinds, URL refusals, allowance exhaustion
 * and several concurrent clients.
 */
import t from 'tap';
import { catalogNames } from '../src/models/manifest.js';
import { DISTANCE_METRICS } from '../src/model-client/protocol.js';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { distance } from '../src/deepface/distance.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createAccountsStore, type AccountsStore } from '../src/accounts/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { deepfaceImage } from './helpers/shared.js';
import { startRealModelServer, stackConfig, type RealModelServer } from './helpers/real-stack.js';

const dataUri = (name: string) => `data:image/jpeg;base64,${readFileSync(deepfaceImage(name)).toString('base64')}`;

let ms: RealModelServer;
let store: AccountsStore;
let gw: Gateway;
let gatewayUrl: string;
let mcpUrl: string;
let closeMcp: () => Promise<void>;

async function newAccount(): Promise<{ accountId: string; rest: string; mcp: string; mcpKeyId: string }> {
  const s = await store.signupAnonymous(`10.0.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`);
  const rest = await store.createKey(s.account.id, 'rest', 'rest');
  const mcp = await store.createKey(s.account.id, 'mcp', 'agent');
  return { accountId: s.account.id, rest: rest.key, mcp: mcp.key, mcpKeyId: mcp.id };
}

async function client(key: string | null, url = mcpUrl): Promise<Client> {
  const c = new Client({ name: 'facecompute-test', version: '1.0.0' });
  const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
}

async function rest(path: string, key: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${gatewayUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

function withoutTime(x: unknown): unknown {
  const { time: _t, ...rest } = x as Record<string, unknown>;
  return rest;
}

t.before(async () => {
  ms = await startRealModelServer();
  // Remote URLs on, so that MCP's own refusals (HTTPS only, SSRF) are reached; off, MCP refuses them all.
  const config = stackConfig(ms.url, { FACECOMPUTE_REMOTE_IMAGES: 'public' });
  const logger = createLogger('test', 'silent');
  store = await createAccountsStore(config);
  gw = await buildGateway({ config, accounts: store, logger });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
  const mcp = await createMcp({ config, accounts: store, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue, logger });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = `http://127.0.0.1:${(mcp.app.server.address() as { port: number }).port}/mcp`;
  closeMcp = () => mcp.app.close();
});

t.teardown(async () => {
  await closeMcp?.();
  await gw?.close(1000);
  await store?.close();
  await ms?.stop();
});

t.test('the four tools are listed with precise input schemas', async (t) => {
  const { mcp } = await newAccount();
  const c = await client(mcp);
  t.teardown(() => c.close());
  const { tools } = await c.listTools();
  t.same(tools.map((x) => x.name).sort(), ['compare_inputs', 'get_capabilities', 'represent_face', 'search_docs', 'verify_faces']);
  const verify = tools.find((x) => x.name === 'verify_faces');
  t.ok(verify?.description && verify.description.length > 40, 'verify_faces has an actionable description');
  const props = (verify?.inputSchema as { properties: Record<string, { description?: string }>; required?: string[] }).properties;
  t.ok(props['img1'] && props['img2'] && props['distance_metric'] && props['model_name']);
  t.same(((verify?.inputSchema as { required?: string[] }).required ?? []).sort(), ['img1', 'img2']);
  for (const [name, p] of Object.entries(props)) t.ok(p.description, `verify_faces.${name} is described`);
  const compare = tools.find((x) => x.name === 'compare_inputs');
  t.ok((compare?.inputSchema as { properties: Record<string, unknown> }).properties['targets_b64']);
  for (const name of ['verify_faces', 'represent_face', 'compare_inputs']) {
    const p = (tools.find((x) => x.name === name)?.inputSchema as { properties: Record<string, { type?: string; description?: string }> }).properties['detector_fallback'];
    t.equal(p?.type, 'boolean', `${name} takes detector_fallback`);
    t.match(p?.description, /DeepFace/, `${name}.detector_fallback says what false means`);
  }
  // Closed sets are listed as enums; model and detector names come from the catalog (models/manifest.json).
  const names = catalogNames();
  for (const name of ['verify_faces', 'represent_face', 'compare_inputs']) {
    const p = (tools.find((x) => x.name === name)?.inputSchema as { properties: Record<string, { enum?: string[] }> }).properties;
    t.same(p['model_name']?.enum, names.models, `${name}.model_name lists the catalog's models`);
    t.same(p['detector_backend']?.enum, names.detectors, `${name}.detector_backend lists the catalog's detectors`);
    if (p['distance_metric']) t.same(p['distance_metric'].enum, [...DISTANCE_METRICS], `${name}.distance_metric lists the metrics`);
  }
});

t.test('a model or detector outside the list is the contract error, not a schema error', async (t) => {
  const { mcp } = await newAccount();
  const c = await client(mcp);
  t.teardown(() => c.close());
  for (const [args, code] of [[{ model_name: 'VGG-Face' }, 'model_not_allowed'], [{ detector_backend: 'centerface' }, 'detector_not_allowed']] as const) {
    const r = await c.callTool({ name: 'compare_inputs', arguments: { source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.2)], ...args } });
    t.ok(r.isError, JSON.stringify(args));
    t.equal((r.structuredContent as { error?: string } | undefined)?.error, code, JSON.stringify(r.structuredContent));
  }
});

// Dlib named, and Facenet as the default (no model_name): Dlib stood in only while Facenet had no weights (issue 14).
for (const [label, m, served] of [['Dlib', { model_name: 'Dlib' }, 'Dlib'], ['Facenet, the default', {}, 'Facenet']] as const) t.test(`each tool equals the REST route for the same inputs (${label}, real images)`, async (t) => {
  const acct = await newAccount();
  const c = await client(acct.mcp);
  t.teardown(() => c.close());

  const capsRest = (await (await fetch(`${gatewayUrl}/capabilities`)).json()) as Record<string, unknown>;
  const caps = await c.callTool({ name: 'get_capabilities', arguments: {} });
  t.notOk(caps.isError);
  // The same service, except that MCP's own image policy allows HTTPS URLs and never local files.
  const { input_modes: mcpModes, ...mcpCaps } = caps.structuredContent as Record<string, unknown>;
  const { input_modes: _restModes, ...restCaps } = capsRest;
  t.same(mcpCaps, restCaps);
  t.ok((mcpModes as string[]).includes('url') && !(mcpModes as string[]).includes('file'));
  t.equal((await store.getAccount(acct.accountId)).free_calls.used, 0, 'get_capabilities is free');

  const vArgs = { img1: dataUri('img1.jpg'), img2: dataUri('img2.jpg'), ...m };
  const v = await c.callTool({ name: 'verify_faces', arguments: vArgs });
  t.notOk(v.isError, JSON.stringify(v.content));
  const vRest = await rest('/verify', acct.rest, vArgs);
  t.equal(vRest.status, 200);
  t.same(withoutTime(v.structuredContent), withoutTime(vRest.body));
  t.match(v.structuredContent, { verified: true, model: served });
  t.match((v.content as Array<{ text: string }>)[0]?.text, /Same person/);

  const rArgs = { img: dataUri('img3.jpg'), ...m };
  const r = await c.callTool({ name: 'represent_face', arguments: rArgs });
  t.notOk(r.isError);
  const rRest = await rest('/represent', acct.rest, rArgs);
  t.same(r.structuredContent, rRest.body);
  t.equal((r.structuredContent as { model: string }).model, served);
  const emb3 = ((r.structuredContent as { results: Array<{ embedding: number[] }> }).results[0] as { embedding: number[] }).embedding;
  t.equal(emb3.length, 128);

  const cArgs = { source: { img: dataUri('img1.jpg') }, targets: [emb3, emb3.map((x) => x * 2)], ...m };
  const cmp = await c.callTool({ name: 'compare_inputs', arguments: cArgs });
  t.notOk(cmp.isError, JSON.stringify(cmp.content));
  const cRest = await rest('/compare', acct.rest, cArgs);
  t.same(withoutTime(cmp.structuredContent), withoutTime(cRest.body));
  t.equal((cmp.structuredContent as { results: unknown[] }).results.length, 2);
  const mArgs = { source: [{ embedding: emb3 }, { embedding: emb3.map((x) => -x) }], targets: [emb3, emb3.map((x) => x * 2)], ...m, top_k: 1 };
  const many = await c.callTool({ name: 'compare_inputs', arguments: mArgs });
  t.notOk(many.isError, JSON.stringify(many.content));
  t.same(withoutTime(many.structuredContent), withoutTime((await rest('/compare', acct.rest, mArgs)).body), 'many sources: the REST answer');
  t.equal((many.structuredContent as { results: unknown[][] }).results.length, 2, 'one list per source');
  t.match((many.content as Array<{ text: string }>)[0]!.text, /2 source\(s\) compared/);
  // 4 MCP calls and 4 REST calls were metered; capabilities was not.
  t.equal((await store.getAccount(acct.accountId)).free_calls.used, 8);
});

t.test('without model_name a tool answers with Facenet, the default, as REST does', async (t) => {
  const acct = await newAccount();
  const c = await client(acct.mcp);
  t.teardown(() => c.close());
  const vArgs = { img1: dataUri('img1.jpg'), img2: dataUri('img2.jpg') };
  const v = await c.callTool({ name: 'verify_faces', arguments: vArgs });
  t.notOk(v.isError, JSON.stringify(v.content));
  const vRest = await rest('/verify', acct.rest, vArgs);
  t.same(withoutTime(v.structuredContent), withoutTime(vRest.body));
  t.match(v.structuredContent, { model: 'Facenet', threshold: 0.4, verified: true });
});

t.test('keys: missing, REST kind, revoked MCP key are refused with 401', async (t) => {
  const acct = await newAccount();
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
  const post = (auth?: string) =>
    fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(auth ? { authorization: auth } : {}) }, body: JSON.stringify(init) });
  const missing = await post();
  t.equal(missing.status, 401);
  t.match(missing.headers.get('www-authenticate'), /^Bearer/);
  t.match(await missing.json(), { error: 'missing_api_key' });
  const restKey = await post(`Bearer ${acct.rest}`);
  t.equal(restKey.status, 401);
  t.match(restKey.headers.get('www-authenticate'), /^Bearer/);
  t.match(await restKey.json(), { error: 'invalid_api_key', detail: /MCP/ });
  t.equal((await post(`Bearer ${acct.mcp}`)).status, 200, 'the MCP key works before revocation');
  await store.revokeKey(acct.accountId, 'mcp', acct.mcpKeyId);
  const revoked = await post(`Bearer ${acct.mcp}`);
  t.equal(revoked.status, 401);
  t.match(await revoked.json(), { error: 'invalid_api_key' });
  const mcpOnRest = await rest('/represent', acct.mcp, { img: dataUri('img1.jpg') });
  t.equal(mcpOnRest.status, 401, 'and an MCP key is refused on REST');
});

t.test('a browser origin that is not allowed is refused (DNS-rebinding protection)', async (t) => {
  const acct = await newAccount();
  const r = await fetch(mcpUrl, { method: 'POST', headers: { origin: 'http://evil.example', authorization: `Bearer ${acct.mcp}`, 'content-type': 'application/json' }, body: '{}' });
  t.equal(r.status, 403);
  t.match(await r.json(), { error: 'origin_not_allowed' });
});

t.test('every rejected URL class gives a url_not_allowed tool error', async (t) => {
  const acct = await newAccount();
  // A real account's 50 calls cover every URL below.
  await store.upgrade(acct.accountId, `mcp-${acct.accountId}@example.com`, 'correct horse battery staple');
  const c = await client(acct.mcp);
  t.teardown(() => c.close());
  const urls = [
    'http://example.com/face.jpg', // not HTTPS
    'https://localhost/face.jpg',
    'https://localhost./face.jpg',
    'https://127.0.0.1/face.jpg',
    'https://2130706433/face.jpg', // loopback, decimal
    'https://[::1]/face.jpg',
    'https://[::ffff:127.0.0.1]/face.jpg',
    'https://10.1.2.3/face.jpg', // private
    'https://192.168.0.10/face.jpg',
    'https://172.16.5.5/face.jpg',
    'https://100.64.0.1/face.jpg', // CGNAT
    'https://169.254.169.254/latest/meta-data', // cloud metadata
    'https://printer.local/face.jpg',
    'https://user:pw@example.com/face.jpg',
  ];
  for (const url of urls) {
    const r = await c.callTool({ name: 'represent_face', arguments: { img: url } });
    t.equal(r.isError, true, url);
    t.match(r.structuredContent, { error: 'url_not_allowed' }, url);
  }
  t.equal((await store.getAccount(acct.accountId)).free_calls.used, 0, 'refused before compute: no call consumed');
});

t.test('strict mode accepts only the allowlisted origins', async (t) => {
  const config = stackConfig(ms.url, { FACECOMPUTE_REMOTE_IMAGES: 'public', FACECOMPUTE_MCP_STRICT_URLS: 'true', FACECOMPUTE_REMOTE_ORIGINS: 'https://bucket.example-storage.com' });
  const strict = await createMcp({ config, accounts: store, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue, logger: createLogger('test', 'silent') });
  await strict.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => strict.app.close());
  const acct = await newAccount();
  const c = await client(acct.mcp, `http://127.0.0.1:${(strict.app.server.address() as { port: number }).port}/mcp`);
  t.teardown(() => c.close());
  const r = await c.callTool({ name: 'represent_face', arguments: { img: 'https://example.com/face.jpg' } });
  t.equal(r.isError, true);
  t.match(r.structuredContent, { error: 'url_not_allowed', detail: /allowlist/ });
});

t.test('the free allowance runs out mid-session', async (t) => {
  const acct = await newAccount();
  const c = await client(acct.mcp);
  t.teardown(() => c.close());
  const args = { source: { embedding: Array.from({ length: 128 }, (_, i) => Math.sin(i)) }, targets: [Array.from({ length: 128 }, (_, i) => Math.cos(i))] }; // the default model, Facenet
  for (let i = 0; i < 10; i++) {
    const r = await c.callTool({ name: 'compare_inputs', arguments: args });
    t.notOk(r.isError, `call ${i + 1} of 10`);
  }
  const over = await c.callTool({ name: 'compare_inputs', arguments: args });
  t.equal(over.isError, true);
  t.match(over.structuredContent, { error: 'insufficient_credits' });
  const caps = await c.callTool({ name: 'get_capabilities', arguments: {} });
  t.notOk(caps.isError, 'get_capabilities stays free');
});

t.test('several clients at once each get their own, correct answers', async (t) => {
  // Twelve different photos, three per client, all in flight at once: a swapped or shared answer
  // (an answer routed to the wrong session, a batch slot mixed up) gives some client another photo's
  // embedding. Odd clients name Dlib, even ones take the default, Facenet. Small copies keep it quick.
  const photos = await Promise.all(
    ['img1.jpg', 'img3.jpg', 'img4.jpg', 'img5.jpg', 'img6.jpg', 'img7.jpg', 'img8.jpg', 'img9.jpg', 'img10.jpg', 'img11.jpg', 'img12.jpg', 'img13.jpg'].map(
      async (name) => `data:image/jpeg;base64,${(await sharp(readFileSync(deepfaceImage(name))).resize({ width: 320 }).jpeg({ quality: 90 }).toBuffer()).toString('base64')}`,
    ),
  );
  const accounts = await Promise.all(Array.from({ length: 4 }, () => newAccount()));
  const model = (i: number) => (i % 2 ? { model_name: 'Dlib' } : {});
  // Each photo's embedding, one request at a time over REST (by the account of the client that sends it).
  const want: number[][] = [];
  for (const [k, img] of photos.entries()) {
    const r = await rest('/represent', accounts[Math.floor(k / 3)]!.rest, { img, ...model(Math.floor(k / 3)) });
    t.equal(r.status, 200, `photo ${k}: ${JSON.stringify(r.body).slice(0, 120)}`);
    want.push(((r.body['results'] as Array<{ embedding: number[] }>)[0] as { embedding: number[] }).embedding);
  }
  const clients = await Promise.all(accounts.map((a) => client(a.mcp)));
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  const results = await Promise.all(
    clients.flatMap((c, i) => [0, 1, 2].map((j) => c.callTool({ name: 'represent_face', arguments: { img: photos[i * 3 + j]!, ...model(i) } }))),
  );
  for (const [k, r] of results.entries()) {
    t.notOk(r.isError, `photo ${k}: ${JSON.stringify(r.content).slice(0, 120)}`);
    const got = ((r.structuredContent as { results: Array<{ embedding: number[] }> }).results[0] as { embedding: number[] }).embedding;
    // Batched with others, an embedding may differ from the lone one in its last bits, never more.
    const d = want.map((w) => (w.length === got.length ? distance(w, got, 'cosine') : Infinity));
    t.ok(d[k]! < 1e-6, `client ${Math.floor(k / 3)} call ${k % 3}: its own photo's embedding (cosine ${d[k]})`);
    t.equal(d.indexOf(Math.min(...d)), k, `client ${Math.floor(k / 3)} call ${k % 3}: no other photo's`);
    t.equal((r.structuredContent as { model: string }).model, Math.floor(k / 3) % 2 ? 'Dlib' : 'Facenet', 'its own model');
  }
  t.equal(new Set(want.map((w) => w.join())).size, 12, 'twelve different answers to tell apart');
  for (const a of accounts) t.equal((await store.getAccount(a.accountId)).free_calls.used, 6, 'each account metered for its own calls: 3 REST, 3 MCP');
});
