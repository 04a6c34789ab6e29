/**
 * Contract §6 on all three surfaces over real sockets (issue 15): every response — success, 4xx of
 * several kinds, 404, malformed and oversized bodies, wrong methods, the MCP SDK's own answers
 * (written on the raw response), HTML pages and agent documents, probes, and the refusals Node's
 * parser makes before any route — carries `x-api-version: v1` and `x-request-id`, which echoes the
 * caller's UUID and is otherwise a new UUID v4 (none sent, or a non-UUID such as the fuzzer's
 * "x-request-id any string"), and that id is in the log line(s) of the request.
 */
import t from 'tap';
import { connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/index.js';
import type { Logger } from '../src/logging/logger.js';
import type { Gateway } from '../src/gateway/app.js';
import { startMetricsServer } from '../src/gateway/metrics.js';
import { createMcp } from '../src/mcp/main.js';
import { buildConsole } from '../src/console/app.js';
import type { AccountsStore } from '../src/accounts/index.js';
import { startSurfaces, type Surfaces } from './helpers/surfaces.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { startFakeModelServer, type Proc } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const RECEIVE_TIMEOUT_MS = 600;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const dataDir = mkdtempSync(join(tmpdir(), 'fc-contract-headers-'));
const accounts = new MemoryAccounts([
  { key: 'rest-key', accountId: 'acct-1', kind: 'rest' },
  { key: 'mcp-key', accountId: 'acct-1', kind: 'mcp' },
]);

/** Every log line of every surface, as text: a request's id must be in at least one of them. */
const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});
const logger = pino({ level: 'info' }, sink) as unknown as Logger;

let ms: Proc;
let gw: Gateway;
let mcp: FastifyInstance;
let consoleApp: FastifyInstance;
let store: AccountsStore;
const ports: Record<string, number> = {};
let surfaces: Surfaces | undefined;

interface Raw { status: number; headers: Record<string, string>; text: string; head: string }

/** Writes `data` on a fresh connection and reads until the server closes it. */
function raw(port: number, data: string | Buffer, waitMs = 10_000): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(data));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no answer within ${waitMs} ms`)); }, waitMs);
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      const out = Buffer.concat(chunks).toString('latin1');
      const [head = '', ...rest] = out.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) { const i = l.indexOf(':'); if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, text: rest.join('\r\n\r\n'), head });
    });
  });
}

/** One request of the sweep: what to send (without the x-request-id line) and the status it gets. */
interface Case { name: string; status: number; head: string; body?: string | Buffer; noHost?: boolean; waitMs?: number; /** A JSON-RPC error of the MCP SDK, not an ErrorResponse. */ rpc?: boolean }

function request(c: Case, idLine: string): string | Buffer {
  const [requestLine, ...rest] = c.head.split('\r\n');
  const lines = [requestLine, ...(c.noHost ? [] : ['host: x']), ...rest.filter(Boolean), ...(idLine ? [idLine] : []), 'connection: close'];
  const head = lines.join('\r\n') + '\r\n\r\n';
  if (c.body === undefined) return head;
  return Buffer.concat([Buffer.from(head, 'latin1'), Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body)]);
}

const json = (body: string) => `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}`;
const rpc = (msg: object) => JSON.stringify({ jsonrpc: '2.0', ...msg });
const MCP_ACCEPT = 'accept: application/json, text/event-stream';
const MCP_AUTH = 'authorization: Bearer mcp-key';
const INIT = rpc({ id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
const IMG = JSON.stringify({ img: makePng(8, 8).toString('base64') });
const MULTIPART_GARBAGE = 'content-type: multipart/form-data\r\ncontent-length: 3';
const BIG = 'x'.repeat(70 * 1024);

/** Refusals by Node's parser (clientError): the answer is written on the socket, outside Fastify. */
function transportCases(path: string, auth: string): Case[] {
  const a = auth ? `\r\n${auth}` : '';
  return [
    { name: 'negative Content-Length (parser)', status: 400, head: `POST ${path} HTTP/1.1${a}\r\ncontent-type: application/json\r\ncontent-length: -1` },
    { name: 'Content-Length and Transfer-Encoding (parser)', status: 400, head: `POST ${path} HTTP/1.1${a}\r\ncontent-length: 2\r\ntransfer-encoding: chunked`, body: '0\r\n\r\n' },
    { name: '60 KB header (parser)', status: 431, head: `POST ${path} HTTP/1.1${a}\r\nx-big: ${'a'.repeat(60_000)}\r\ncontent-length: 2`, body: '{}' },
    { name: 'incomplete body (receive timeout)', status: 408, head: `POST ${path} HTTP/1.1${a}\r\ncontent-type: application/json\r\n${MCP_ACCEPT}\r\ncontent-length: 1000`, body: '{"img": "' },
    { name: 'path not valid percent-encoding (router)', status: 400, head: `GET ${path}%zz HTTP/1.1${a}` },
    { name: 'HTTP/1.1 without Host', status: 400, head: `POST ${path} HTTP/1.1${a}\r\n${json('{}')}`, body: '{}', noHost: true },
    { name: 'probe without Host', status: 400, head: 'GET /health HTTP/1.1', noHost: true },
    { name: 'Expect other than 100-continue', status: 417, head: `POST ${path} HTTP/1.1${a}\r\nexpect: 200-ok\r\n${json('{}')}`, body: '{}' },
  ];
}

const SURFACES: Record<string, Case[]> = {
  gateway: [
    { name: 'health', status: 200, head: 'GET /health HTTP/1.1' },
    { name: 'readiness', status: 200, head: 'GET /readiness HTTP/1.1' },
    { name: 'capabilities', status: 200, head: 'GET /capabilities HTTP/1.1\r\nauthorization: Bearer rest-key' },
    { name: 'represent (compute)', status: 200, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer rest-key\r\n${json(IMG)}`, body: IMG },
    { name: 'no key', status: 401, head: `POST /represent HTTP/1.1\r\n${json(IMG)}`, body: IMG },
    { name: 'unknown key', status: 401, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer nope\r\n${json(IMG)}`, body: IMG },
    { name: 'unknown field', status: 400, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer rest-key\r\n${json('{"img":"x","zzz":1}')}`, body: '{"img":"x","zzz":1}' },
    { name: 'unknown model', status: 400, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer rest-key\r\n${json('{"img":"x","model_name":"Nope"}')}`, body: '{"img":"x","model_name":"Nope"}' },
    { name: 'malformed JSON', status: 400, head: `POST /verify HTTP/1.1\r\nauthorization: Bearer rest-key\r\n${json('{{{')}`, body: '{{{' },
    { name: 'malformed multipart', status: 400, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer rest-key\r\n${MULTIPART_GARBAGE}`, body: 'abc' },
    { name: 'oversized body', status: 413, head: `POST /represent HTTP/1.1\r\nauthorization: Bearer rest-key\r\ncontent-type: application/json\r\ncontent-length: ${200 * 1024 * 1024}` },
    { name: 'wrong method', status: 405, head: 'DELETE /verify HTTP/1.1\r\nauthorization: Bearer rest-key' },
    { name: 'unknown path', status: 404, head: 'GET /nope HTTP/1.1' },
    ...transportCases('/represent', 'authorization: Bearer rest-key'),
  ],
  mcp: [
    { name: 'health', status: 200, head: 'GET /health HTTP/1.1' },
    { name: 'readiness', status: 200, head: 'GET /readiness HTTP/1.1' },
    { name: 'initialize (SDK, JSON)', status: 200, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\n${json(INIT)}`, body: INIT },
    { name: 'tools/call (SDK, JSON)', status: 200, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\n${json(rpc({ id: 2, method: 'tools/call', params: { name: 'get_capabilities', arguments: {} } }))}`, body: rpc({ id: 2, method: 'tools/call', params: { name: 'get_capabilities', arguments: {} } }) },
    { name: 'notification (SDK, 202)', status: 202, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\n${json(rpc({ method: 'notifications/initialized' }))}`, body: rpc({ method: 'notifications/initialized' }) },
    { name: 'no event-stream in Accept (SDK, 406)', rpc: true, status: 406, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\naccept: application/json\r\n${json(INIT)}`, body: INIT },
    { name: 'not JSON-RPC (SDK, 400)', rpc: true, status: 400, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\n${json('{"a":1}')}`, body: '{"a":1}' },
    { name: 'no key', status: 401, head: `POST /mcp HTTP/1.1\r\n${MCP_ACCEPT}\r\n${json(INIT)}`, body: INIT },
    { name: 'origin not allowed', status: 403, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\norigin: https://evil.example\r\n${MCP_ACCEPT}\r\n${json(INIT)}`, body: INIT },
    { name: 'malformed JSON', status: 400, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\n${json('{{{')}`, body: '{{{' },
    { name: 'oversized body', status: 413, head: `POST /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\ncontent-type: application/json\r\ncontent-length: ${200 * 1024 * 1024}` },
    { name: 'GET (stateless, 405)', rpc: true, status: 405, head: `GET /mcp HTTP/1.1\r\n${MCP_AUTH}` },
    { name: 'wrong method', status: 405, head: `PUT /mcp HTTP/1.1\r\n${MCP_AUTH}\r\n${json('{}')}`, body: '{}' },
    { name: 'unknown path', status: 404, head: 'GET /nope HTTP/1.1' },
    ...transportCases('/mcp', MCP_AUTH),
  ],
  console: [
    { name: 'health', status: 200, head: 'GET /health HTTP/1.1' },
    { name: 'readiness', status: 200, head: 'GET /readiness HTTP/1.1' },
    { name: 'HTML page', status: 200, head: 'GET /signin HTTP/1.1\r\naccept: text/html' },
    { name: 'redirect', status: 303, head: 'GET / HTTP/1.1\r\naccept: text/html' },
    { name: '/llms.txt', status: 200, head: 'GET /llms.txt HTTP/1.1' },
    { name: '/skill.md', status: 200, head: 'GET /skill.md HTTP/1.1' },
    { name: '/openapi.json', status: 200, head: 'GET /openapi.json HTTP/1.1' },
    { name: 'anonymous signup', status: 201, head: 'POST /api/signup/anonymous HTTP/1.1\r\ncontent-length: 0' },
    { name: 'not signed in', status: 401, head: 'GET /api/account HTTP/1.1' },
    { name: 'invalid body', status: 400, head: `POST /api/signup HTTP/1.1\r\n${json('{"email":1}')}`, body: '{"email":1}' },
    { name: 'malformed JSON', status: 400, head: `POST /api/signup HTTP/1.1\r\n${json('{{{')}`, body: '{{{' },
    { name: 'oversized body', status: 413, head: `POST /api/signup HTTP/1.1\r\n${json(BIG)}`, body: BIG },
    { name: 'wrong method', status: 405, head: 'DELETE /api/signup HTTP/1.1' },
    { name: 'unknown page (HTML)', status: 404, head: 'GET /nope HTTP/1.1\r\naccept: text/html' },
    { name: 'unknown path (JSON)', status: 404, head: 'GET /api/nope HTTP/1.1' },
    ...transportCases('/api/signup', ''),
  ],
};

t.before(async () => {
  ms = await startFakeModelServer();
  const config = loadConfig({
    FACECOMPUTE_LOG_LEVEL: 'info',
    FACECOMPUTE_DATA_DIR: dataDir,
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS: String(RECEIVE_TIMEOUT_MS),
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000',
    FACECOMPUTE_SIGNUP_RATE_LIMIT: '1000',
  });
  const s = await startSurfaces({ config, accounts, logger });
  ({ gw, mcp, store } = s);
  consoleApp = s.console;
  Object.assign(ports, s.ports);
  surfaces = s;
});

t.teardown(async () => {
  await surfaces?.close();
  ms?.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const settle = () => new Promise((r) => setTimeout(r, 50));

for (const [surface, cases] of Object.entries(SURFACES)) {
  t.test(`${surface}: both headers on every answer, the caller's UUID echoed, the id in the log`, async (t) => {
    const port = ports[surface]!;
    for (const c of cases) {
      const mine = randomUUID().toUpperCase();
      const sent = [
        { how: 'a UUID', line: `x-request-id: ${mine}` },
        { how: 'none', line: '' },
        { how: 'a non-UUID', line: 'x-request-id: any string' },
      ];
      for (const s of sent) {
        const r = await raw(port, request(c, s.line), c.waitMs);
        const what = `${c.name}, x-request-id ${s.how}`;
        t.equal(r.status, c.status, `${what}: status (${r.text.slice(0, 160)})`);
        t.equal(r.headers['x-api-version'], 'v1', `${what}: x-api-version`);
        t.equal(r.head.match(/\r\nx-(request-id|api-version):/gi)?.length, 2, `${what}: each header once`);
        if (r.status >= 400 && !c.rpc) {
          let body: unknown;
          try { body = JSON.parse(r.text); } catch { body = undefined; }
          // HTML error pages for browsers are the console's; everything else is {error, detail}.
          if (!/^text\/html/.test(r.headers['content-type'] ?? '')) t.same(Object.keys(body ?? {}).sort(), ['detail', 'error'], `${what}: {error, detail} (${r.text.slice(0, 120)})`);
        }
        const id = r.headers['x-request-id'] ?? '';
        if (s.how === 'a UUID') t.equal(id, mine.toLowerCase(), `${what}: echoed`);
        else t.match(id, UUID_V4, `${what}: a new UUID v4`);
        await settle();
        t.ok(id !== '' && logLines.some((l) => l.includes(`"request_id":"${id}"`)), `${what}: the id is in a log line`);
      }
    }
  });
}

t.test('the metrics listener (admin port) answers with both headers too', async (t) => {
  const server = await startMetricsServer(gw.metrics, 0);
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = (server.address() as { port: number }).port;
  const id = randomUUID();
  const ok = await raw(port, `GET /metrics HTTP/1.1\r\nhost: x\r\nx-request-id: ${id}\r\nconnection: close\r\n\r\n`);
  t.equal(ok.status, 200);
  t.match(ok.text, /facecompute_/);
  t.equal(ok.headers['x-request-id'], id);
  t.equal(ok.headers['x-api-version'], 'v1');
  const missing = await raw(port, 'GET /nope HTTP/1.1\r\nhost: x\r\nx-request-id: any string\r\nconnection: close\r\n\r\n');
  t.equal(missing.status, 404);
  t.same(JSON.parse(missing.text.replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, '')), { error: 'not_found', detail: 'this listener serves GET /metrics only' });
  t.match(missing.headers['x-request-id'], UUID_V4);
  t.equal(missing.headers['x-api-version'], 'v1');
});

t.test('two requests without an id get different ids', async (t) => {
  const a = await raw(ports['mcp']!, request(SURFACES['mcp']![0]!, ''));
  const b = await raw(ports['mcp']!, request(SURFACES['mcp']![0]!, ''));
  t.not(a.headers['x-request-id'], b.headers['x-request-id']);
});

/** Reads every response on one connection until the server closes it: `first` (a request whose body is unfinished), then, once close() has begun, `rest`. */
function duringClose(app: FastifyInstance, first: string, rest: string): Promise<string> {
  const port = (app.server.address() as { port: number }).port;
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(first));
    let out = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no close within 10 s; got ${JSON.stringify(out)}`)); }, 10_000);
    s.on('data', (d: Buffer) => (out += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => { clearTimeout(timer); resolve(out); });
    setTimeout(() => {
      void app.close();
      setTimeout(() => s.write(rest), 50);
    }, 100);
  });
}

t.test('console and MCP: a request that arrives while the surface closes is 503 gateway_draining in the contract shape, with both headers', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_DATA_DIR: dataDir, FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}` });
  const surfaces: Array<[string, FastifyInstance, string]> = [
    ['console', await buildConsole({ config, store }), '/api/signup'],
    ['mcp', (await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue })).app, '/mcp'],
  ];
  for (const [name, app, path] of surfaces) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const id = randomUUID();
    const out = await duringClose(
      app,
      `POST ${path} HTTP/1.1\r\nhost: x\r\n${MCP_AUTH}\r\n${MCP_ACCEPT}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{`,
      `}GET /health HTTP/1.1\r\nhost: x\r\nx-request-id: ${id}\r\n\r\n`,
    );
    const second = out.slice(out.indexOf('HTTP/1.1', 1));
    t.match(second, /^HTTP\/1\.1 503 /, `${name}: 503 (${out.slice(0, 400)})`);
    t.match(second, /\r\nx-api-version: v1\r\n/i, `${name}: x-api-version`);
    t.match(second, new RegExp(`\\r\\nx-request-id: ${id}\\r\\n`, 'i'), `${name}: the caller's id`);
    t.match(second, /\r\nretry-after: 5\r\n/i, `${name}: Retry-After`);
    const body = JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)) as Record<string, string>;
    t.same(Object.keys(body).sort(), ['detail', 'error']);
    t.equal(body['error'], 'gateway_draining');
    t.match(body['detail'], /shutting down/);
  }
});
