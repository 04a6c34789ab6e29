/**
 * Bad input gets the contract's code, never a 500 (issue 15, items 4, 5 and 7):
 * - malformed multipart bodies on /represent, /verify and /compare are `400 invalid_request` saying
 *   what is wrong;
 * - embedding values that are NaN, ±Infinity or not numbers are `400 invalid_embedding` wherever an
 *   embedding travels (JSON, multipart text parts, targets, targets_b64, source and verify
 *   embeddings), on REST and MCP;
 * - an unknown MCP tool argument is a tool error `invalid_request` naming it, as on REST.
 */
import t, { type Test } from 'tap';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { startFakeModelServer, type Proc } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const PNG = makePng(32, 24, 3);
const B64 = PNG.toString('base64');
const E = Array.from({ length: 128 }, (_, i) => Math.round(Math.sin(i) * 1000) / 1000);
const accounts = new MemoryAccounts([
  { key: 'rest-key', accountId: 'acct-1', kind: 'rest' },
  { key: 'mcp-key', accountId: 'acct-1', kind: 'mcp' },
]);

let ms: Proc;
let gw: Gateway;
let closeMcp: () => Promise<void>;
let base = '';
let mcpUrl = '';
let client: Client;

t.before(async () => {
  ms = await startFakeModelServer();
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_RATE_LIMIT_REQUESTS: '100000' });
  const logger = createLogger('test', 'silent');
  gw = await buildGateway({ config, accounts, logger });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  const mcp = await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = `http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`;
  closeMcp = () => mcp.app.close();
  client = new Client({ name: 'input-errors', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { Authorization: 'Bearer mcp-key' } } }));
});

t.teardown(async () => {
  await client?.close();
  await closeMcp?.();
  await gw?.close(100);
  ms?.kill('SIGKILL');
});

interface Res { status: number; body: any; text: string }

async function post(path: string, body: string | FormData, contentType?: string): Promise<Res> {
  const headers: Record<string, string> = { authorization: 'Bearer rest-key' };
  if (contentType) headers['content-type'] = contentType;
  const r = await fetch(base + path, { method: 'POST', headers, body });
  const text = await r.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, body: json, text };
}

function refused(t: Test, r: Res, status: number, code: string, detail: RegExp, label: string): void {
  t.equal(r.status, status, `${label}: status (${r.text.slice(0, 200)})`);
  t.same(Object.keys(r.body ?? {}).sort(), ['detail', 'error'], `${label}: {error, detail}`);
  t.equal(r.body?.error, code, `${label}: code`);
  t.match(r.body?.detail, detail, `${label}: detail`);
}

const form = (parts: Record<string, string | Buffer>) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(parts)) typeof v === 'string' ? fd.append(k, v) : fd.append(k, new Blob([new Uint8Array(v)]), `${k}.png`);
  return fd;
};

t.test('malformed multipart is 400 invalid_request on every compute route', async (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['no boundary (curl --data-binary abc)', 'multipart/form-data', 'abc', /no boundary/],
    ['garbage body', 'multipart/form-data; boundary=XyZ', 'abc\r\n\x00\x01garbage', /closing boundary/],
    ['unterminated file part', 'multipart/form-data; boundary=XyZ', '--XyZ\r\nContent-Disposition: form-data; name="img"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n' + 'x'.repeat(100), /closing boundary/],
    ['unterminated text part', 'multipart/form-data; boundary=XyZ', '--XyZ\r\nContent-Disposition: form-data; name="model_name"\r\n\r\nFacenet', /closing boundary/],
    ['boundary longer than allowed', `multipart/form-data; boundary=${'b'.repeat(300)}`, 'abc', /boundary/],
    ['empty body', 'multipart/form-data; boundary=XyZ', '', /closing boundary|missing/],
  ];
  for (const path of ['/represent', '/verify', '/compare']) {
    for (const [label, ct, body, detail] of cases) refused(t, await post(path, body, ct), 400, 'invalid_request', detail, `${path} ${label}`);
  }
  const ok = await post('/represent', form({ img: PNG }));
  t.equal(ok.status, 200, 'a well-formed upload still works');
});

t.test('REST: non-finite and non-numeric embedding values are invalid_embedding', async (t) => {
  const json = (o: unknown) => JSON.stringify(o);
  const e = json(E).slice(1, -1); // the 128 numbers, without brackets
  const cases: Array<[string, string, string, RegExp]> = [
    ['verify: a string in img1', '/verify', json({ img1: [...E.slice(1), 'x'], img2: E }), /img1\[127\]/],
    ['verify: null in img2', '/verify', json({ img1: E, img2: [null, ...E.slice(1)] }), /img2\[0\]/],
    ['verify: 1e999 (JSON.parse makes it Infinity)', '/verify', `{"img1":[1e999,${json(E.slice(1)).slice(1)},"img2":${json(E)}}`, /img1\[0\]/],
    ['verify: -1e999', '/verify', `{"img1":${json(E)},"img2":[-1e999,${json(E.slice(1)).slice(1)}}`, /img2\[0\]/],
    ['verify: Python-style NaN token', '/verify', `{"img1":[NaN,${json(E.slice(1)).slice(1)},"img2":${json(E)}}`, /NaN or Infinity/],
    ['verify: Python-style Infinity token', '/verify', `{"img1":[${e}],"img2":[-Infinity,${json(E.slice(1)).slice(1)}}`, /NaN or Infinity/],
    ['verify: float32 overflow', '/verify', json({ img1: E.map(() => 1e39), img2: E }), /img1\[0\]/],
    ['compare: source.embedding', '/compare', json({ source: { embedding: [true, ...E.slice(1)] }, targets: [E] }), /source\.embedding\[0\]/],
    ['compare: source.embedding 1e999', '/compare', `{"source":{"embedding":[${e.replace(/^[^,]+/, '1e999')}]},"targets":[${json(E)}]}`, /source\.embedding\[0\]/],
    ['compare: a string in targets', '/compare', json({ source: { embedding: E }, targets: [E, [...E.slice(1), '0.5']] }), /targets\[1\]\[127\]/],
    ['compare: a target that is not an array', '/compare', json({ source: { embedding: E }, targets: [E, 'abc'] }), /targets\[1\]/],
    ['compare: 1e999 in targets', '/compare', `{"source":{"embedding":${json(E)}},"targets":[[${e.replace(/[^,]+$/, '1e999')}]]}`, /targets\[0\]\[127\]/],
  ];
  for (const [label, path, body, detail] of cases) refused(t, await post(path, body, 'application/json'), 400, 'invalid_embedding', detail, label);

  const nan = Buffer.alloc(2 * 128 * 4);
  for (let i = 0; i < 256; i++) nan.writeFloatLE(0.1, i * 4);
  nan.writeFloatLE(NaN, (128 + 5) * 4);
  refused(t, await post('/compare', json({ source: { embedding: E }, targets_b64: nan.toString('base64') }), 'application/json'), 400, 'invalid_embedding', /1/, 'compare: NaN in targets_b64');
  const inf = Buffer.from(nan);
  inf.writeFloatLE(-Infinity, (128 + 5) * 4);
  refused(t, await post('/compare', json({ source: { embedding: E }, targets_b64: inf.toString('base64') }), 'application/json'), 400, 'invalid_embedding', /1/, 'compare: -Infinity in targets_b64');

  refused(t, await post('/verify', json({ img1: [], img2: E }), 'application/json'), 400, 'embedding_dimension_mismatch', /img1/, 'an empty embedding');
  refused(t, await post('/compare', json({ source: { embedding: E }, targets: [[]] }), 'application/json'), 400, 'embedding_dimension_mismatch', /targets\[0\]/, 'an empty target');
  refused(t, await post('/verify', json({ img1: 5, img2: E }), 'application/json'), 400, 'invalid_request', /img1/, 'a number where an image or an embedding goes stays invalid_request');
  // The diagnosis looks only where JSON.parse stopped (issue 24): a NaN there is named even when the
  // body is broken further on; a body broken before its NaN is plain invalid JSON.
  refused(t, await post('/verify', '{"img1": NaN', 'application/json'), 400, 'invalid_embedding', /NaN or Infinity/, 'the parse stops at a NaN token, in a body also cut short');
  refused(t, await post('/verify', '{"img1": [1 2, NaN]}', 'application/json'), 400, 'invalid_request', /not valid JSON/, 'broken JSON before a NaN token stays invalid_request');
  t.equal((await post('/verify', json({ img1: E, img2: E }), 'application/json')).status, 200, 'finite embeddings pass');
});

t.test('REST multipart: embeddings in text parts', async (t) => {
  const rest = JSON.stringify(E.slice(1)).slice(1);
  const cases: Array<[string, string, Record<string, string | Buffer>, RegExp]> = [
    ['img1 text part with 1e999', '/verify', { img1: `[1e999,${rest}`, img2: PNG }, /img1\[0\]/],
    ['img1 text part with a NaN token', '/verify', { img1: `[NaN,${rest}`, img2: PNG }, /img1/],
    ['img2 text part with a string', '/verify', { img1: PNG, img2: `["a",${rest}` }, /img2\[0\]/],
    ['targets text part with Infinity', '/compare', { source: PNG, targets: `[[Infinity,${rest}]` }, /targets/],
    ['targets text part with a string', '/compare', { source: PNG, targets: `[[${JSON.stringify(E).slice(1, -1)}],["x",${rest}]` }, /targets\[1\]\[0\]/],
    ['source text part with -1e999', '/compare', { source: `{"embedding":[-1e999,${rest}}`, targets: JSON.stringify([E]) }, /source\.embedding\[0\]/],
  ];
  for (const [label, path, parts, detail] of cases) refused(t, await post(path, form(parts)), 400, 'invalid_embedding', detail, label);
  for (const bad of [NaN, Infinity, -Infinity]) {
    const f32 = new Float32Array(2 * 128).fill(0.25);
    f32[128 + 9] = bad;
    const fd = new FormData();
    fd.append('source', JSON.stringify({ embedding: E }));
    fd.append('targets', new Blob([new Uint8Array(f32.buffer)], { type: 'application/octet-stream' }), 'targets.f32');
    refused(t, await post('/compare', fd), 400, 'invalid_embedding', /1/, `binary targets part with ${bad}`);
  }
});

async function tool(name: string, args: Record<string, unknown>): Promise<{ isError: boolean; sc: any }> {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError === true, sc: r.structuredContent };
}

/** A raw tools/call (the SDK client would turn Infinity into null before sending it). */
async function rawCall(name: string, argsJson: string): Promise<{ status: number; body: any }> {
  const r = await fetch(mcpUrl, {
    method: 'POST',
    headers: { authorization: 'Bearer mcp-key', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":${argsJson}}}`,
  });
  return { status: r.status, body: await r.json() };
}

t.test('MCP: embedding values and unknown arguments are tool errors with the REST codes', async (t) => {
  const rest = JSON.stringify(E.slice(1)).slice(1);
  const cases: Array<[string, string, Record<string, unknown>, string, RegExp]> = [
    ['a string in img1', 'verify_faces', { img1: [...E.slice(1), 'x'], img2: E }, 'invalid_embedding', /img1\[127\]/],
    ['null in img2', 'verify_faces', { img1: E, img2: [null, ...E.slice(1)] }, 'invalid_embedding', /img2\[0\]/],
    ['a string in source.embedding', 'compare_inputs', { source: { embedding: ['1', ...E.slice(1)] }, targets: [E] }, 'invalid_embedding', /source\.embedding\[0\]/],
    ['a string in targets', 'compare_inputs', { source: { embedding: E }, targets: [E, [...E.slice(1), 'x']] }, 'invalid_embedding', /targets\[1\]\[127\]/],
    ['a target that is not an array', 'compare_inputs', { source: { embedding: E }, targets: ['abc'] }, 'invalid_embedding', /targets\[0\]/],
    ['float32 overflow', 'verify_faces', { img1: E.map(() => 1e39), img2: E }, 'invalid_embedding', /img1\[0\]/],
    ['an empty embedding', 'verify_faces', { img1: [], img2: E }, 'embedding_dimension_mismatch', /img1/],
    ['an unknown argument', 'verify_faces', { img1: E, img2: E, colour: 'red' }, 'invalid_request', /unknown argument 'colour'/],
    ['a DeepFace-only argument', 'represent_face', { img: B64, anti_spoofing: false }, 'invalid_request', /unknown argument 'anti_spoofing'/],
    ['an unknown nested argument', 'compare_inputs', { source: { embedding: E, extra: 1 }, targets: [E] }, 'invalid_request', /unknown argument 'source\.extra'/],
    ['an unknown argument to get_capabilities', 'get_capabilities', { verbose: true }, 'invalid_request', /unknown argument 'verbose'/],
    ['a missing argument', 'verify_faces', { img1: E }, 'invalid_request', /missing required argument 'img2'/],
    ['a wrong type', 'verify_faces', { img1: E, img2: E, align: 'yes' }, 'invalid_request', /align/],
  ];
  for (const [label, name, args, code, detail] of cases) {
    const r = await tool(name, args);
    t.equal(r.isError, true, `${label}: a tool error`);
    t.same(Object.keys(r.sc ?? {}).sort(), ['detail', 'error'], `${label}: {error, detail}`);
    t.equal(r.sc?.error, code, `${label}: code`);
    t.match(r.sc?.detail, detail, `${label}: detail`);
  }
  const nanB64 = Buffer.from(new Float32Array([...E.map(() => 0.5), ...E.map((_, i) => (i === 3 ? NaN : 0.5))]).buffer).toString('base64');
  const b64 = await tool('compare_inputs', { source: { embedding: E }, targets_b64: nanB64 });
  t.match(b64, { isError: true, sc: { error: 'invalid_embedding' } }, 'NaN in targets_b64 over MCP');
  const inf = await rawCall('verify_faces', `{"img1":[1e999,${rest},"img2":${JSON.stringify(E)}}`);
  t.equal(inf.status, 200);
  t.match(inf.body, { id: 7, result: { isError: true, structuredContent: { error: 'invalid_embedding', detail: /img1\[0\]/ } } }, '1e999 over MCP');
  const nan = await rawCall('verify_faces', `{"img1":[NaN,${rest},"img2":${JSON.stringify(E)}}`);
  t.equal(nan.status, 400, 'a NaN token is not JSON: refused before JSON-RPC');
  t.match(nan.body, { error: 'invalid_embedding', detail: /NaN or Infinity/ });
  t.equal((await tool('verify_faces', { img1: E, img2: E })).isError, false, 'valid arguments pass');
  t.equal((await tool('get_capabilities', {})).isError, false, 'no arguments pass');
});

t.test('MCP: the listed input schemas refuse additional properties', async (t) => {
  const { tools } = await client.listTools();
  for (const x of tools) t.equal((x.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, x.name);
  // source is one face or a list of faces (many-to-many): both forms are strict objects.
  type Strict = { additionalProperties?: unknown; type?: string; items?: Strict };
  const compare = tools.find((x) => x.name === 'compare_inputs')!.inputSchema as unknown as { properties: { source: { anyOf: Strict[] } } };
  const forms = compare.properties.source.anyOf;
  t.equal(forms.length, 2, 'compare_inputs.source: a face or a list of faces');
  for (const form of forms) t.equal((form.type === 'array' ? form.items : form)?.additionalProperties, false, `compare_inputs.source (${form.type})`);
});
