/**
 * README (MCP endpoint): "Stateless Streamable HTTP with JSON responses (any replica answers any
 * request) ... body capped at FACECOMPUTE_MCP_MAX_BODY_BYTES (25 MiB: images travel inside as base64)."
 *
 * Two MCP endpoints built from the default configuration (the cap is the shipped default, not a test
 * value), sharing one accounts store and limiter as replicas do, over real sockets:
 * - statelessness: a session begun on one replica goes on at the other, and a call that never began
 *   one is answered too; no answer names a session, every answer is JSON (no event stream), and GET
 *   (a server-initiated stream) is refused with 405;
 * - the cap: a request of exactly 25 MiB is read and answered; one byte more is 413 request_too_large
 *   naming the limit, whether its length is declared or it comes chunked.
 */
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { loadConfig } from '../src/config/index.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { createMemoryLimiter } from '../src/service/limits/memory.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const MIB = 1024 * 1024;
const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1' });
const accounts = new MemoryAccounts([{ key: 'mcp-key', accountId: 'acct', kind: 'mcp' }]);
const limiter = createMemoryLimiter({ requests: 1000, windowMs: 60_000, concurrent: 10 });
const upstream = stubUpstream();
const logger = createLogger('test', 'silent');
const replicas: string[] = [];
const closers: Array<() => Promise<void>> = [];

t.before(async () => {
  for (let i = 0; i < 2; i++) {
    const mcp = await createMcp({ config, accounts, limiter, upstream, logger });
    await mcp.app.listen({ host: '127.0.0.1', port: 0 });
    replicas.push(`http://127.0.0.1:${(mcp.app.server.address() as { port: number }).port}/mcp`);
    closers.push(() => mcp.app.close());
  }
});
t.teardown(async () => {
  for (const c of closers) await c();
});

const HEADERS = { authorization: 'Bearer mcp-key', 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** One POST over node:http, so that the body can be sent with a declared length or chunked. */
function post(url: string, body: Buffer, opts: { chunked?: boolean; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...HEADERS, ...opts.headers };
    if (!opts.chunked) headers['content-length'] = String(body.length);
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }));
    });
    // A refused upload may be cut before all of it is written (the server answers and closes): the answer still comes.
    req.on('error', reject);
    if (opts.chunked) {
      for (let i = 0; i < body.length; i += 1 << 20) req.write(body.subarray(i, i + (1 << 20)));
      req.end();
    } else req.end(body);
  });
}

const rpc = (id: number, method: string, params: Record<string, unknown> = {}) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params }));

/** A JSON-RPC request padded with trailing whitespace (valid JSON) to exactly `size` bytes. */
function padded(size: number): Buffer {
  const head = rpc(7, 'tools/list');
  const body = Buffer.alloc(size, 0x20);
  head.copy(body, 0);
  return body;
}

t.test('the body cap is the shipped default: 25 MiB', async (t) => {
  t.equal(config.mcp.maxBodyBytes, 25 * MIB, 'FACECOMPUTE_MCP_MAX_BODY_BYTES defaults to 26214400');
});

t.test('a request of exactly 25 MiB is answered; one byte more is 413 request_too_large', async (t) => {
  const url = replicas[0]!;
  const at = await post(url, padded(config.mcp.maxBodyBytes));
  t.equal(at.status, 200, `${config.mcp.maxBodyBytes} bytes: 200 (${at.body.slice(0, 120)})`);
  t.equal((JSON.parse(at.body) as { result: { tools: unknown[] } }).result.tools.length, 5, 'the five tools listed');
  for (const chunked of [false, true]) {
    const over = await post(url, padded(config.mcp.maxBodyBytes + 1), { chunked });
    const how = chunked ? 'chunked' : 'with its length';
    t.equal(over.status, 413, `${config.mcp.maxBodyBytes + 1} bytes ${how}: 413`);
    t.same(JSON.parse(over.body), { error: 'request_too_large', detail: `MCP requests are limited to ${25 * MIB} bytes` }, `${how}: request_too_large naming the limit`);
  }
});

t.test('stateless: a session begun on one replica goes on at the other; no session is ever named', async (t) => {
  const [a, b] = replicas as [string, string];
  const init = await post(a, rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stateless-test', version: '1' } }));
  t.equal(init.status, 200, 'initialize on replica A');
  const version = (JSON.parse(init.body) as { result: { protocolVersion: string } }).result.protocolVersion;
  const after = { 'mcp-protocol-version': version };
  const answers: Answer[] = [init];
  const initialized = await post(b, Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })), { headers: after });
  t.equal(initialized.status, 202, 'the initialized notification accepted by replica B');
  answers.push(initialized);
  const list = await post(b, rpc(2, 'tools/list'), { headers: after });
  t.equal(list.status, 200, 'tools/list on replica B');
  t.same((JSON.parse(list.body) as { result: { tools: Array<{ name: string }> } }).result.tools.map((x) => x.name).sort(), ['compare_inputs', 'get_capabilities', 'represent_face', 'search_docs', 'verify_faces']);
  const call = await post(a, rpc(3, 'tools/call', { name: 'get_capabilities', arguments: {} }), { headers: after });
  t.equal(call.status, 200, 'a tool call back on replica A');
  t.equal((JSON.parse(call.body) as { result: { structuredContent: { default_model: string } } }).result.structuredContent.default_model, 'Facenet', 'the tool answered');
  // A client that never initialized anywhere (a fresh agent behind a load balancer) is answered too.
  const cold = await post(b, rpc(4, 'tools/call', { name: 'get_capabilities', arguments: {} }));
  t.equal(cold.status, 200, 'a call without any initialize: 200');
  t.notOk((JSON.parse(cold.body) as { error?: unknown }).error, 'and not a JSON-RPC error');
  answers.push(list, call, cold);
  for (const [i, r] of answers.entries()) {
    t.equal(r.headers['mcp-session-id'], undefined, `answer ${i + 1}: no mcp-session-id`);
    if (r.status === 200) t.match(String(r.headers['content-type']), /^application\/json/, `answer ${i + 1}: JSON, not an event stream`);
  }
  const get = await fetch(a, { headers: { authorization: 'Bearer mcp-key', accept: 'text/event-stream' } });
  t.equal(get.status, 405, 'GET (a server-initiated stream) is refused: 405');
  t.equal(get.headers.get('allow'), 'POST');
});
