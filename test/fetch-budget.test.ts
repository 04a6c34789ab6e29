/**
 * Fetching is paid (issue 37, item 4): each account has a budget of remote fetches and of fetched
 * bytes per minute (FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE, _FETCH_BYTES_PER_MINUTE), counted whether
 * the fetch succeeds or fails, and a URL fetched whole that is not an image is `422 url_not_image`,
 * charged. Before, a failed fetch was refunded and nothing counted: fetching was free. The "remote"
 * server is on loopback, reached through the fetcher's test dialer after a fake DNS answer.
 */
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const logger = createLogger('test', 'silent');
const PAGE = Buffer.alloc(100_000, 'x');

t.test('per-account budget of fetches and fetched bytes; a non-image is charged', async (t) => {
  let served = 0;
  const server: Server = createServer((req, res) => {
    served++;
    if (req.url === '/missing.png') {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html', 'content-length': PAGE.length });
    res.end(PAGE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;

  const config = loadConfig({
    FACECOMPUTE_LOG_LEVEL: 'silent',
    FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9',
    FACECOMPUTE_REMOTE_IMAGES: 'public',
    FACECOMPUTE_REMOTE_FETCHES_PER_MINUTE: '3',
    FACECOMPUTE_REMOTE_FETCH_BYTES_PER_MINUTE: '150000',
  });
  t.equal(loadConfig({}).inputs.remoteFetchesPerMinute, 60, 'default: 60 fetches a minute');
  t.equal(loadConfig({}).inputs.remoteFetchBytesPerMinute, 256 * 1024 * 1024, 'default: 256 MiB a minute');
  const accounts = new MemoryAccounts([
    { key: 'a', accountId: 'a', kind: 'rest', credits: 100 },
    { key: 'b', accountId: 'b', kind: 'rest', credits: 100 },
  ]);
  const gw = await buildGateway({
    config,
    accounts,
    logger,
    upstream: stubUpstream(),
    remoteFetch: { lookup: async () => [{ address: '93.184.216.34', family: 4 }], testDial: () => ({ host: '127.0.0.1', port }) },
  });
  t.teardown(() => gw.close(0));
  const represent = (key: string, img: string) =>
    gw.app.inject({ method: 'POST', url: '/represent', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ img }) });

  // A page, fetched whole: not an image, and charged.
  const page = await represent('a', 'http://site.example.com/page.png');
  t.equal(page.statusCode, 422);
  t.equal(page.json().error, 'url_not_image');
  t.equal(accounts.used.get('a'), 1, 'the completed fetch of a non-image is charged');
  // A failed fetch is refunded, but counts against the fetches.
  const missing = await represent('a', 'http://site.example.com/missing.png');
  t.equal(missing.json().error, 'url_fetch_failed');
  t.equal(accounts.used.get('a'), 1, 'a failed fetch costs no call');
  // 100,000 bytes fetched so far: the third fetch is admitted and its 100,000 bytes pass the budget (150,000).
  t.equal((await represent('a', 'http://site.example.com/page2.png')).json().error, 'url_not_image');
  t.equal(served, 3);
  const over = await represent('a', 'http://site.example.com/page3.png');
  t.equal(over.statusCode, 429, 'past the budget: refused');
  t.equal(over.json().error, 'rate_limited');
  t.match(over.json().detail, /bytes of remote images/);
  t.ok(Number(over.headers['retry-after']) >= 1, 'with Retry-After');
  t.equal(served, 3, 'nothing fetched for the refused request');

  // Another account has its own budget; its fourth fetch is refused by the count.
  for (let i = 0; i < 3; i++) await represent('b', 'http://site.example.com/missing.png');
  const fourth = await represent('b', 'http://site.example.com/missing.png');
  t.equal(fourth.json().error, 'rate_limited');
  t.match(fourth.json().detail, /3 remote image fetches/);
  t.equal(served, 6);
});
