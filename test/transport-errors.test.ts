/**
 * Requests Node's HTTP parser refuses before any route (issue 15, item 6), on all three surfaces over
 * real sockets: a negative Content-Length, a 60 KB header, and a body that never finishes arriving.
 * Each answer is the contract's `{error, detail}` with a stable code, and the incomplete body is
 * refused within FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS (+1 s), not after ~128 s.
 */
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import type { Gateway } from '../src/gateway/app.js';
import type { AccountsStore } from '../src/accounts/index.js';
import { clientErrorToServiceError } from '../src/http/transport-guards.js';
import { startSurfaces, type Surfaces } from './helpers/surfaces.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { setFault, startFakeModelServer, type Proc } from './helpers/procs.js';
import { makePng } from './helpers/images.js';

const RECEIVE_TIMEOUT_MS = 600;
const dataDir = mkdtempSync(join(tmpdir(), 'fc-transport-'));
let ms: Proc;
const logger = createLogger('test', 'silent');
const accounts = new MemoryAccounts([
  { key: 'rest-key', accountId: 'acct-1', kind: 'rest' },
  { key: 'mcp-key', accountId: 'acct-1', kind: 'mcp' },
]);

let gw: Gateway;
let mcp: FastifyInstance;
let consoleApp: FastifyInstance;
let store: AccountsStore;
const ports: Record<string, number> = {};
let surfaces: Surfaces | undefined;

interface Raw { status: number; headers: Record<string, string>; body: any; ms: number; text: string }

/** Writes `data` on a fresh connection and reads until the server closes it (or `waitMs`). */
function raw(port: number, data: string, waitMs = 10_000): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const s = connect(port, '127.0.0.1', () => s.write(data));
    let out = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error(`no answer within ${waitMs} ms; got ${JSON.stringify(out)}`)); }, waitMs);
    s.on('data', (d) => (out += d.toString()));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      const [head = '', ...rest] = out.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) { const i = l.indexOf(':'); if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
      const text = rest.join('\r\n\r\n');
      let body: any;
      try { body = JSON.parse(text); } catch { body = undefined; }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body, ms: performance.now() - t0, text: out });
    });
  });
}

function contractError(t: Test, r: Raw, status: number, code: string, detail: RegExp): void {
  t.equal(r.status, status, `status (${r.text.slice(0, 200)})`);
  t.same(Object.keys(r.body ?? {}).sort(), ['detail', 'error'], 'only error and detail');
  t.equal(r.body?.error, code);
  t.match(r.body?.detail, detail);
  t.match(r.headers['content-type'], /^application\/json/);
  t.equal(r.headers['x-api-version'], 'v1');
  t.match(r.headers['x-request-id'], /^[0-9a-f-]{36}$/);
}


t.before(async () => {
  ms = await startFakeModelServer();
  const config = loadConfig({
    FACECOMPUTE_LOG_LEVEL: 'silent',
    FACECOMPUTE_DATA_DIR: dataDir,
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS: String(RECEIVE_TIMEOUT_MS),
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1',
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

const SURFACES = [
  { name: 'gateway', path: '/verify', auth: 'Bearer rest-key' },
  { name: 'mcp', path: '/mcp', auth: 'Bearer mcp-key' },
  { name: 'console', path: '/api/signup', auth: '' },
];

for (const s of SURFACES) {
  t.test(`${s.name}: parser refusals in the contract's shape`, async (t) => {
    const port = ports[s.name]!;
    const auth = s.auth ? `authorization: ${s.auth}\r\n` : '';
    const neg = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}content-type: application/json\r\ncontent-length: -1\r\n\r\n`);
    contractError(t, neg, 400, 'invalid_request', /Content-Length/);
    const big = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}x-big: ${'a'.repeat(60_000)}\r\ncontent-length: 2\r\n\r\n{}`);
    contractError(t, big, 431, 'headers_too_large', /headers/);
    const both = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}content-length: 2\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`);
    contractError(t, both, 400, 'invalid_request', /together with Content-Length/);
    const twice = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}content-length: 2\r\ncontent-length: 3\r\n\r\n{}`);
    contractError(t, twice, 400, 'invalid_request', /more than one Content-Length/);
    const badPath = await raw(port, `POST ${s.path}%zz HTTP/1.1\r\nhost: x\r\n${auth}content-length: 2\r\nconnection: close\r\n\r\n{}`);
    contractError(t, badPath, 400, 'invalid_request', /percent-encoding/);
    const noHost = await raw(port, `POST ${s.path} HTTP/1.1\r\n${auth}content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`);
    contractError(t, noHost, 400, 'invalid_request', /Host header/);
    const expect = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}content-type: application/json\r\nexpect: 200-ok\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`);
    contractError(t, expect, 417, 'expectation_failed', /100-continue/);
  });

  t.test(`${s.name}: a method no route has is 405 method_not_allowed with Allow on a known path and 404 not_found elsewhere, whatever its body (QUERY without Content-Type was a 400 and, on the console, a 500)`, async (t) => {
    const port = ports[s.name]!;
    const auth = s.auth ? `authorization: ${s.auth}\r\n` : '';
    for (const path of [s.path, '/health', '/nope']) {
      const query = await raw(port, `QUERY ${path} HTTP/1.1\r\nhost: x\r\n${auth}connection: close\r\n\r\n`);
      const badJson = await raw(port, `QUERY ${path} HTTP/1.1\r\nhost: x\r\n${auth}content-type: application/json\r\ncontent-length: 3\r\nconnection: close\r\n\r\n{{{`);
      // Every surface serves its own path and /health; /nope is no route at all.
      const known = path !== '/nope';
      for (const r of [query, badJson]) {
        t.equal(r.status, known ? 405 : 404, `QUERY ${path}: status (${r.text.slice(0, 200)})`);
        t.same(r.body, { error: known ? 'method_not_allowed' : 'not_found', detail: r.body?.detail }, 'only error and detail');
        t.match(r.headers['content-type'], /^application\/json/);
        if (known) t.ok(r.headers['allow'], `QUERY ${path}: Allow names the methods (${r.headers['allow']})`);
      }
    }
  });

  t.test(`${s.name}: an incomplete body is refused within the receive timeout`, async (t) => {
    const port = ports[s.name]!;
    const auth = s.auth ? `authorization: ${s.auth}\r\n` : '';
    const r = await raw(port, `POST ${s.path} HTTP/1.1\r\nhost: x\r\n${auth}content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 1000\r\n\r\n{"img1": "`);
    contractError(t, r, 408, 'request_timeout', new RegExp(`${RECEIVE_TIMEOUT_MS} ms`));
    // The detail names the configured bound, and the answer did not come before it: a lower bound
    // cannot flake. Nothing else could end a body that never comes, so no upper bound is asserted
    // (it would measure the machine; Node checks the bound on a timer of at most 1 s).
    t.ok(r.ms >= RECEIVE_TIMEOUT_MS - 50, `not before the bound (${r.ms.toFixed(0)} ms)`);
  });
}

t.test('gateway: a request that timed out gives its concurrency slot back', async (t) => {
  // FACECOMPUTE_RATE_LIMIT_CONCURRENT=1: a leaked slot would make the next request a 429.
  const port = ports['gateway']!;
  await raw(port, `POST /compare HTTP/1.1\r\nhost: x\r\nauthorization: Bearer rest-key\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"source"`);
  await new Promise((r) => setTimeout(r, 100));
  const body = JSON.stringify({ source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.2)], model_name: 'Facenet' });
  const res = await fetch(`http://127.0.0.1:${port}/compare`, { method: 'POST', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, body });
  t.equal(res.status, 200, await res.text());
});

t.test('gateway: a client that disconnects mid-body gives its concurrency slot back', async (t) => {
  const port = ports['gateway']!;
  for (let i = 0; i < 3; i++) {
    await new Promise<void>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.write(`POST /compare HTTP/1.1\r\nhost: x\r\nauthorization: Bearer rest-key\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"source"`);
        setTimeout(() => { s.destroy(); resolve(); }, 50);
      });
      s.on('error', () => undefined);
    });
  }
  await new Promise((r) => setTimeout(r, 100));
  const body = JSON.stringify({ source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.2)], model_name: 'Facenet' });
  const res = await fetch(`http://127.0.0.1:${port}/compare`, { method: 'POST', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, body });
  t.equal(res.status, 200, await res.text());
});

t.test('gateway: the bound covers receiving only, not a request that is slow to compute', async (t) => {
  await setFault(ms.port, 'none', RECEIVE_TIMEOUT_MS * 3);
  t.teardown(() => setFault(ms.port, 'none'));
  const port = ports['gateway']!;
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/represent`, { method: 'POST', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, body: JSON.stringify({ img: makePng(8, 8).toString('base64') }) });
  t.equal(res.status, 200, await res.text());
  t.ok(performance.now() - t0 > RECEIVE_TIMEOUT_MS * 3, 'the model server took longer than the receive bound');
});

t.test('the mapping: every parser code has a precise detail, resets write nothing', async (t) => {
  t.equal(clientErrorToServiceError(Object.assign(new Error('x'), { code: 'ECONNRESET' }), 1000), null);
  t.equal(clientErrorToServiceError(Object.assign(new Error('x'), { code: 'HPE_INVALID_METHOD' }), 1000)?.detail, 'the HTTP method is invalid');
  const unknown = clientErrorToServiceError(Object.assign(new Error('/secret/path'), { code: 'HPE_SOMETHING_NEW' }), 1000);
  t.equal(unknown?.code, 'invalid_request');
  t.notMatch(unknown?.detail ?? '', /secret/);
});
