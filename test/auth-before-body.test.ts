/**
 * Every surface that takes keys authenticates from the headers before it reads a body (issue 24,
 * item 1): the MCP endpoint parsed an anonymous 25 MiB body before looking at the key, and the
 * console's JSON API parsed the body of a request whose session token it had not checked.
 *
 * Two observations per surface, neither timed: (1) a request without a valid key and with a body
 * that is not JSON gets the authentication error, not the parse error; (2) a request that declares a
 * 20 MiB body and sends none of it is answered with the authentication error (a server that read the
 * body first would wait for it, and answer 408 once FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS passed,
 * or 413 where the length is over its limit).
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { buildConsole } from '../src/console/main.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { rawRequest, type RawAnswer } from './helpers/raw-http.js';

const dir = mkdtempSync(join(tmpdir(), 'fc-auth-first-'));
const config = loadConfig({
  FACECOMPUTE_LOG_LEVEL: 'silent',
  FACECOMPUTE_DATA_DIR: dir,
  FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9',
  // Short enough that a server waiting for the body answers 408 within the test, not after minutes.
  FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS: '1500',
});
const logger = createLogger('test', 'silent');
const accounts = new MemoryAccounts([
  { key: 'rest-key', accountId: 'a1', kind: 'rest' },
  { key: 'mcp-key', accountId: 'a1', kind: 'mcp' },
]);
const apps: FastifyInstance[] = [];
const ports: Record<'gateway' | 'mcp' | 'console', number> = { gateway: 0, mcp: 0, console: 0 };

async function listen(app: FastifyInstance): Promise<number> {
  apps.push(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

t.before(async () => {
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream() });
  ports.gateway = await listen(gw.app);
  const mcp = await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream: stubUpstream(), queue: gw.queue });
  ports.mcp = await listen(mcp.app);
  const store = await createAccountsStore(config);
  t.teardown(() => store.close());
  ports.console = await listen(await buildConsole({ config, store, logger }));
});
t.teardown(async () => {
  for (const app of apps.reverse()) await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The answer to `head` and `body` on a new socket, which is then closed. */
async function raw(port: number, head: string, body = ''): Promise<RawAnswer> {
  const r = rawRequest(port, head, body);
  try {
    return await r.answer;
  } finally {
    r.socket.destroy();
  }
}

const surfaces: Array<{ name: keyof typeof ports; path: string; badKey: string; code: string; status: number }> = [
  { name: 'gateway', path: '/verify', badKey: 'Bearer wrong', code: 'invalid_api_key', status: 401 },
  { name: 'gateway', path: '/compare', badKey: '', code: 'missing_api_key', status: 401 },
  { name: 'mcp', path: '/mcp', badKey: '', code: 'missing_api_key', status: 401 },
  { name: 'mcp', path: '/mcp', badKey: 'Bearer rest-key', code: 'invalid_api_key', status: 401 },
  { name: 'console', path: '/api/keys', badKey: 'Bearer not-a-session', code: 'unauthorized', status: 401 },
  { name: 'console', path: '/api/account/upgrade', badKey: '', code: 'unauthorized', status: 401 },
];

function head(s: (typeof surfaces)[number], length: number): string {
  const auth = s.badKey ? `authorization: ${s.badKey}\r\n` : '';
  const accept = s.name === 'mcp' ? 'accept: application/json, text/event-stream\r\n' : '';
  return `POST ${s.path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n${auth}${accept}content-length: ${length}\r\n\r\n`;
}

t.test('a body that is not JSON, without a valid key, gets the authentication error', async (t) => {
  const body = '{"img1": "AAAA' + 'A'.repeat(10_000);
  for (const s of surfaces) {
    const r = await raw(ports[s.name], head(s, body.length), body);
    t.equal(r.status, s.status, `${s.name} ${s.path} ${s.badKey || 'no key'}: status`);
    t.equal(r.json.error, s.code, `${s.name} ${s.path}: code`);
  }
});

t.test('a declared 20 MiB body that never comes is refused from the headers alone', async (t) => {
  for (const s of surfaces) {
    const r = await raw(ports[s.name], head(s, 20 << 20));
    t.equal(r.status, s.status, `${s.name} ${s.path} ${s.badKey || 'no key'}: status`);
    t.equal(r.json.error, s.code, `${s.name} ${s.path}: code`);
  }
});
