/**
 * Unknown routes and methods are refused from the request line, before any byte of the body is read
 * (src/http/route-guard.ts), on the gateway, the MCP endpoint and the console: each request below
 * declares a 1 MB body and sends 10 bytes of it, so an answer only arrives if the surface did not
 * wait for the body. It carries `Connection: close` (the unread body is dropped with the socket),
 * and `Allow` for a 405. Nothing is timed: a surface that read the body would never answer.
 */
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { buildConsole } from '../src/console/main.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { rawRequest } from './helpers/raw-http.js';
import { LINGER_MS } from '../src/http/lingering-close.js';

const logger = createLogger('test', 'silent');
const BODY = 1_000_000;

const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

/** A request declaring a 1 MB JSON body, of which 10 bytes are sent. */
function partial(port: number, method: string, path: string, extra = '') {
  const head = `${method} ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${BODY}\r\n${extra}\r\n`;
  return rawRequest(port, head, '{"img1": "');
}

async function expectRefused(t: Test, port: number, method: string, path: string, status: number, code: string, allow?: string, extra = '') {
  const r = partial(port, method, path, extra);
  t.teardown(() => r.socket.destroy());
  const a = await r.answer;
  t.equal(a.status, status, `${method} ${path}: ${status} before the body`);
  t.equal(a.json.error, code);
  t.match(a.headers, /\r\nconnection: close/i, `${method} ${path}: Connection: close`);
  if (allow) t.match(a.headers, new RegExp(`\\r\\nallow: ${allow}\\r\\n`, 'i'));
}

t.test('gateway', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  const accounts = new MemoryAccounts([{ key: 'a', accountId: 'a', kind: 'rest' }]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  const port = portOf(gw.app);
  await expectRefused(t, port, 'POST', '/x', 404, 'not_found');
  await expectRefused(t, port, 'POST', '/x?y=1', 404, 'not_found');
  await expectRefused(t, port, 'POST', '/capabilities', 405, 'method_not_allowed', 'GET');
  await expectRefused(t, port, 'DELETE', '/verify', 405, 'method_not_allowed', 'POST');
  await expectRefused(t, port, 'PUT', '/compare', 405, 'method_not_allowed', 'POST');
  // OPTIONS is the CORS preflight's: without Origin and a requested method it is not one.
  await expectRefused(t, port, 'OPTIONS', '/verify', 405, 'method_not_allowed', 'POST');
  await expectRefused(t, port, 'OPTIONS', '/verify', 405, 'method_not_allowed', 'POST', 'origin: http://127.0.0.1:8082\r\naccess-control-request-method: POST\r\n');

  // Without a body: the same answers, keeping the connection.
  const bare = await gw.app.inject({ method: 'GET', url: '/nothing' });
  t.equal(bare.statusCode, 404);
  t.not(bare.headers['connection'], 'close');
  const get = await gw.app.inject({ method: 'GET', url: '/verify' });
  t.equal(get.statusCode, 405);
  t.equal(get.headers['allow'], 'POST');
  // A real preflight still gets its 204 from the CORS plugin.
  const pre = await gw.app.inject({ method: 'OPTIONS', url: '/verify', headers: { origin: 'http://127.0.0.1:8082', 'access-control-request-method': 'POST' } });
  t.equal(pre.statusCode, 204);
  // A known route is untouched: its own refusal (no key) comes first.
  const known = await gw.app.inject({ method: 'POST', url: '/verify', payload: {} });
  t.equal(known.json().error, 'missing_api_key');
});

t.test('MCP endpoint', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  const accounts = new MemoryAccounts([{ key: 'm', accountId: 'a', kind: 'mcp' }]);
  const mcp = await createMcp({ config, accounts, logger, upstream: stubUpstream() });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const port = portOf(mcp.app);
  await expectRefused(t, port, 'POST', '/mcp/x', 404, 'not_found');
  await expectRefused(t, port, 'POST', '/x', 404, 'not_found');
  await expectRefused(t, port, 'PUT', '/mcp', 405, 'method_not_allowed', 'DELETE, GET, HEAD, POST');
  await expectRefused(t, port, 'POST', '/health', 405, 'method_not_allowed', 'GET, HEAD');
});

t.test('console', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-route-guard-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_DATA_DIR: dir });
  const store = await createAccountsStore(config);
  t.teardown(() => store.close());
  const app = await buildConsole({ config, store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const port = portOf(app);
  await expectRefused(t, port, 'POST', '/x', 404, 'not_found');
  await expectRefused(t, port, 'POST', '/api/nothing', 404, 'not_found');
  await expectRefused(t, port, 'DELETE', '/api/signup/anonymous', 405, 'method_not_allowed', 'POST');
});

t.test('admission follows the route config, not the URL string: POST /verify?x=1 takes its queue place from the headers', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  const accounts = new MemoryAccounts([{ key: 'a', accountId: 'a', kind: 'rest' }]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  for (const path of ['/verify?x=1', '/represent?', '/verify']) {
    const r = partial(portOf(gw.app), 'POST', path, 'authorization: Bearer a\r\n');
    for (let i = 0; i < 300 && gw.queue.stats().reserved === 0; i++) await new Promise((res) => setTimeout(res, 10));
    t.equal(gw.queue.stats().reserved, 1, `${path}: a place is reserved before the body arrives`);
    r.socket.destroy();
    for (let i = 0; i < 300 && gw.queue.stats().reserved > 0; i++) await new Promise((res) => setTimeout(res, 10));
  }
});

t.test('a refused upload that goes on sending is drained, not reset: the client gets its answer and a clean close', async (t) => {
  // The client reads the 404, then sends the rest of the 1 MB it declared and closes. Without the
  // lingering close (src/http/lingering-close.ts) the server had closed after its answer, so those
  // bytes met a closed socket and the client got a reset (ECONNRESET or EPIPE).
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  const gw = await buildGateway({ config, accounts: new MemoryAccounts([]), logger, upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  for (const [method, path, status] of [['POST', '/x', 404], ['PUT', '/verify', 405], ['POST', '/verify', 401]] as const) {
    const r = partial(portOf(gw.app), method, path);
    t.equal((await r.answer).status, status, `${method} ${path}: ${status} first`);
    const errors: string[] = [];
    r.socket.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
    const closed = new Promise<boolean>((res) => r.socket.once('close', res));
    r.socket.end(Buffer.alloc(BODY - 10, 0x61));
    t.equal(await closed, false, `${method} ${path}: the connection closed cleanly`);
    t.same(errors, [], `${method} ${path}: no reset`);
  }
  // A client that neither sends nor closes is not waited on for ever: the server closes after the linger.
  const idle = connect({ port: portOf(gw.app), host: '127.0.0.1', allowHalfOpen: true });
  idle.on('error', () => {});
  idle.write(`POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: ${BODY}\r\n\r\n{"img1": "`);
  const answered = new Promise((res) => idle.once('data', res));
  await answered;
  const open = () => new Promise<number>((res) => gw.app.server.getConnections((_e, n) => res(n)));
  for (let i = 0; i < 100 && (await open()) > 0; i++) await new Promise((res) => setTimeout(res, LINGER_MS / 20));
  t.equal(await open(), 0, 'the server closed the connection by itself, after its linger');
  t.notOk(idle.writableEnded, 'while the client kept its side open');
  idle.destroy();
});
