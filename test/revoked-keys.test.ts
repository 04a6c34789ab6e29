/**
 * A revoked key answers exactly as a key that never existed (issue 15, item 8): the same status,
 * code, detail and headers, on REST and on MCP, for a revoked key of the endpoint's kind and of the
 * other kind, on SQLite and PostgreSQL. Nothing tells the holder of a leaked key that it was real.
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { KEY_PREFIX } from '../src/accounts/secrets.js';
import { eachDatabase } from './helpers/accounts-db.js';

interface Answer { status: number; body: unknown; headers: Record<string, string> }

/** Everything a caller sees, less what differs on every response (its id and date). */
async function answer(r: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  r.headers.forEach((v, k) => { if (k !== 'x-request-id' && k !== 'date') headers[k] = v; });
  return { status: r.status, body: await r.json(), headers };
}

const unknownKey = (kind: 'rest' | 'mcp') => KEY_PREFIX[kind] + randomBytes(32).toString('base64url');

eachDatabase(t, async (t: Test, tdb) => {
  const store = await tdb.open();
  const logger = createLogger('test', 'silent');
  const config = { ...tdb.config, modelServerUrls: ['http://127.0.0.1:1'] };
  const gw = await buildGateway({ config, accounts: store, logger });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const mcp = await createMcp({ config, accounts: store, logger, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await mcp.app.close();
    await gw.close(100);
    await store.close();
  });
  const gateway = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  const mcpUrl = `http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`;

  const { account } = await store.signup(`revoked-${tdb.name}@example.com`, 'correct horse battery');
  const rest = await store.createKey(account.id, 'rest', 'leaked rest key');
  const mcpKey = await store.createKey(account.id, 'mcp', 'leaked mcp key');

  const onRest = async (key: string) =>
    answer(await fetch(`${gateway}/compare`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ source: { embedding: [1] }, targets: [[1]] }) }));
  const onMcp = async (key: string) =>
    answer(await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    }));

  t.test('before revocation the keys work', async (t) => {
    t.not((await onRest(rest.key)).status, 401);
    t.equal((await onMcp(mcpKey.key)).status, 200);
  });

  t.test('after revocation: exactly as unknown keys', async (t) => {
    const liveOtherKind = { rest: await onRest(mcpKey.key), mcp: await onMcp(rest.key) };
    await store.revokeKey(account.id, 'rest', rest.id);
    await store.revokeKey(account.id, 'mcp', mcpKey.id);
    const restUnknown = await onRest(unknownKey('rest'));
    t.equal(restUnknown.status, 401);
    t.match(restUnknown.body, { error: 'invalid_api_key' });
    t.same(await onRest(rest.key), restUnknown, 'REST: a revoked REST key = an unknown REST key');
    t.same(await onRest(mcpKey.key), await onRest(unknownKey('mcp')), 'REST: a revoked MCP key = an unknown MCP key');
    t.notSame(liveOtherKind.rest, restUnknown, 'while it was live, an MCP key on REST was told which kind is expected');
    const mcpUnknown = await onMcp(unknownKey('mcp'));
    t.equal(mcpUnknown.status, 401);
    t.match(mcpUnknown.headers['www-authenticate'], /^Bearer/);
    t.same(await onMcp(mcpKey.key), mcpUnknown, 'MCP: a revoked MCP key = an unknown MCP key');
    t.same(await onMcp(rest.key), await onMcp(unknownKey('rest')), 'MCP: a revoked REST key = an unknown REST key');
    t.notSame(liveOtherKind.mcp, mcpUnknown);
    t.notMatch(JSON.stringify([restUnknown, mcpUnknown]), /revoked/i);
  });
});
