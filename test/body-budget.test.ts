/**
 * The process-wide budget of request bodies held at once (FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES,
 * src/http/body-budget.ts; issue 24, low): a request whose declared body would pass it is refused
 * from its headers, `503 body_capacity_full` with Retry-After, and the budget comes back when a held
 * request ends, however it ends. Bodies are held by not sending them; nothing is timed.
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { BodyBudget } from '../src/http/body-budget.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { rawRequest } from './helpers/raw-http.js';

const logger = createLogger('test', 'silent');

t.test('take and give', async (t) => {
  const b = new BodyBudget(100);
  t.ok(b.take(60));
  t.notOk(b.take(41), 'over the limit: refused');
  t.equal(b.inUse, 60, 'and nothing taken');
  t.ok(b.take(40));
  b.give(60);
  t.equal(b.inUse, 40);
  t.ok(b.take(0), 'a request without a body always fits');
});

const open = rawRequest;

const until = async (f: () => boolean) => {
  for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
};

t.test('a body that does not fit is refused unread, and the budget comes back when the holder ends', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_MAX_INFLIGHT_BODY_BYTES: '1000000' });
  t.equal(loadConfig({}).capacity.maxInflightBodyBytes, 256 * 1024 * 1024, 'default: 256 MiB');
  const accounts = new MemoryAccounts([
    { key: 'a', accountId: 'a', kind: 'rest' },
    { key: 'b', accountId: 'b', kind: 'rest' },
    { key: 'm', accountId: 'a', kind: 'mcp' },
  ]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream() });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => gw.close(0));
  const mcp = await createMcp({ config, accounts, logger, limiter: gw.limiter, upstream: stubUpstream(), queue: gw.queue, bodyBudget: gw.bodyBudget });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const gwPort = (gw.app.server.address() as AddressInfo).port;
  const mcpPort = (mcp.app.server.address() as AddressInfo).port;
  const head = (key: string, length: number, path = '/verify') =>
    `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${length}\r\n\r\n`;

  // Account a starts a 700 KB upload and sends 10 bytes of it: 700 KB of the budget are held.
  const holder = open(gwPort, head('a', 700_000), '{"img1": "');
  await until(() => gw.bodyBudget.inUse === 700_000);
  t.equal(gw.bodyBudget.inUse, 700_000, 'the declared body is held from the headers on');

  // Another account's 400 KB body does not fit: refused from its headers, even with the body sent.
  const refused = await open(gwPort, head('b', 400_000), ' '.repeat(400_000)).answer;
  t.equal(refused.status, 503);
  t.equal(refused.json.error, 'body_capacity_full');
  t.match(refused.headers, /\r\nretry-after: 1\r\n/i);
  // The MCP endpoint shares the budget (serve).
  const refusedMcp = await open(mcpPort, head('m', 400_000, '/mcp')).answer;
  t.equal(refusedMcp.status, 503);
  t.equal(refusedMcp.json.error, 'body_capacity_full');
  t.equal(gw.bodyBudget.inUse, 700_000, 'the refusals took nothing');

  // A body that fits goes through (here to a validation error).
  const small = await open(gwPort, head('b', 2), '{}').answer;
  t.equal(small.status, 400, 'a small body still fits');

  // The holder goes away mid-upload: its share comes back.
  holder.socket.destroy();
  await until(() => gw.bodyBudget.inUse === 0);
  t.equal(gw.bodyBudget.inUse, 0, 'given back when the connection closed');
  const later = await open(gwPort, head('b', 400_000), ' '.repeat(399_998) + '{}').answer;
  t.equal(later.status, 400, 'the same body now fits (and is read: an invalid body)');
  await until(() => gw.bodyBudget.inUse === 0);
  t.equal(gw.bodyBudget.inUse, 0, 'and is given back once answered');
});
