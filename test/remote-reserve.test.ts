/**
 * Remote image URLs (issue 24, item 8): a call is reserved before any image is fetched, so an
 * account without credits gets 402 and nothing is fetched (a request of 16 URLs used to be fetched
 * in full at 0 credits); and the MCP endpoint follows FACECOMPUTE_REMOTE_IMAGES (it fetched public
 * HTTPS URLs with the setting off). Fetches are counted at the DNS lookup the fetcher makes first
 * (a fake resolver: no packet leaves), never timed.
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp, mcpInputPolicy } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import type { LookupFn } from '../src/service/inputs/remote-fetch.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { makePng } from './helpers/images.js';

const logger = createLogger('test', 'silent');
const URLS = Array.from({ length: 16 }, (_, i) => `https://images.example.com/face-${i}.jpg`);

/** A resolver that counts lookups and answers a documentation address (never dialled: the test ends first). */
function countingLookup(): { lookup: LookupFn; count: () => number } {
  let n = 0;
  return {
    lookup: async () => {
      n++;
      throw new Error('lookup refused by the test');
    },
    count: () => n,
  };
}

t.test('mcpInputPolicy follows FACECOMPUTE_REMOTE_IMAGES', async (t) => {
  const policy = (env: Record<string, string>) => mcpInputPolicy(loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', ...env })).remoteImages;
  t.equal(policy({}), 'off', 'off by default, as on REST');
  t.equal(policy({ FACECOMPUTE_REMOTE_IMAGES: 'off', FACECOMPUTE_MCP_STRICT_URLS: 'true' }), 'off');
  t.equal(policy({ FACECOMPUTE_REMOTE_IMAGES: 'allowlist', FACECOMPUTE_REMOTE_ORIGINS: 'https://a.example.com' }), 'allowlist');
  t.equal(policy({ FACECOMPUTE_REMOTE_IMAGES: 'public' }), 'public');
  t.equal(policy({ FACECOMPUTE_REMOTE_IMAGES: 'public', FACECOMPUTE_MCP_STRICT_URLS: 'true' }), 'allowlist', 'strict mode narrows public to the allowlist');
});

t.test('MCP with remote images off refuses a URL without fetching it', async (t) => {
  const dns = countingLookup();
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9' });
  const accounts = new MemoryAccounts([{ key: 'mcp-key', accountId: 'a1', kind: 'mcp' }]);
  const mcp = await createMcp({ config, accounts, logger, upstream: stubUpstream(), remoteFetch: { lookup: dns.lookup } });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const client = new Client({ name: 'remote-off', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`), { requestInit: { headers: { Authorization: 'Bearer mcp-key' } } }));
  t.teardown(() => client.close());
  const r = await client.callTool({ name: 'represent_face', arguments: { img: URLS[0] } });
  t.match(r.structuredContent, { error: 'input_mode_disabled' });
  t.equal(dns.count(), 0, 'nothing looked up, nothing fetched');
  const caps = (await client.callTool({ name: 'get_capabilities', arguments: {} })).structuredContent as { input_modes: string[] };
  t.notOk(caps.input_modes.includes('url'), 'capabilities do not offer url');
});

t.test('REST: an account without credits gets 402 before any image is fetched', async (t) => {
  const dns = countingLookup();
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_REMOTE_IMAGES: 'public' });
  const accounts = new MemoryAccounts([
    { key: 'broke', accountId: 'broke', kind: 'rest', credits: 0 },
    { key: 'rich', accountId: 'rich', kind: 'rest', credits: 100 },
  ]);
  const gw = await buildGateway({ config, accounts, logger, upstream: stubUpstream(), remoteFetch: { lookup: dns.lookup } });
  t.teardown(() => gw.close(0));
  const post = (key: string, path: string, body: unknown) =>
    gw.app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const png = makePng(8, 8).toString('base64');
  const bodies: Array<[string, unknown]> = [
    ['/represent', { img: URLS }],
    ['/verify', { img1: png, img2: URLS[0] }],
    ['/compare', { source: [{ img: URLS[0] }, { img: URLS[1] }], targets: [Array(128).fill(0.1)] }],
  ];
  for (const [path, body] of bodies) {
    const r = await gw.app.inject({ method: 'POST', url: path, headers: { authorization: 'Bearer broke', 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    t.equal(r.statusCode, 402, `${path}: 402`);
    t.equal(r.json().error, 'insufficient_credits');
  }
  t.equal(dns.count(), 0, 'no URL was looked up for the account without credits');
  // With credits the URL is fetched (and here fails): the reserved call is given back.
  const r = await post('rich', '/represent', { img: URLS[0] });
  t.equal(r.json().error, 'url_fetch_failed');
  t.equal(dns.count(), 1, 'fetched once the call was reserved');
  t.equal(accounts.used.get('rich') ?? 0, 0, 'the failed fetch cost nothing');
});
