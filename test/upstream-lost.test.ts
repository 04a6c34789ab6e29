/**
 * A request lost with its model server (issue 24, item 3): `502 upstream_lost` is not refunded (one
 * credit used to buy endless crashes, each 502 refunded) and is a strike; at FACECOMPUTE_STRIKE_LIMIT
 * strikes in FACECOMPUTE_STRIKE_WINDOW_MS the account's requests with images are refused
 * `429 too_many_strikes` until the window ends, on REST and MCP (one limiter). The window runs on a
 * driven clock; nothing is timed.
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createMemoryLimiter } from '../src/service/limits/memory.js';
import { consumesCall } from '../src/accounts/charging.js';
import { createUpstream } from '../src/model-client/client.js';
import type { RepresentHeader } from '../src/model-client/protocol.js';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createLogger } from '../src/logging/logger.js';
import { ServiceError } from '../src/errors/index.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { makeBombPng, makePng } from './helpers/images.js';

const logger = createLogger('test', 'silent');
const PNG = makePng(8, 8).toString('base64');
const E = Array.from({ length: 128 }, (_, i) => Math.sin(i));

/** Where a received request's head ends and the length its body declares, once the head is whole. */
function frameHead(data: Buffer): { head: number; length: number } | null {
  const head = data.indexOf('\r\n\r\n');
  if (head < 0) return null;
  return { head, length: Number(/content-length: *(\d+)/i.exec(data.subarray(0, head).toString('latin1'))?.[1] ?? 0) };
}

/** A replica that reads each request's head and then `end`s how it says: 'close' once the whole frame is read (FIN), 'reset' before (RST). */
async function tcpReplica(end: 'close' | 'reset'): Promise<{ server: TcpServer; port: number; frames: () => number }> {
  let frames = 0;
  const server = createTcpServer((socket: Socket) => {
    let data = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      data = Buffer.concat([data, c]);
      const frame = frameHead(data);
      if (!frame) return;
      const { head, length } = frame;
      if (end === 'reset') {
        frames++;
        socket.resetAndDestroy();
      } else if (data.length - head - 4 >= length) {
        frames++;
        socket.end();
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, frames: () => frames };
}

async function goodReplica(): Promise<{ server: HttpServer; port: number; frames: () => number }> {
  let frames = 0;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      frames++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ results: [[]], model: 'Facenet', detector_backend: 'skip' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, frames: () => frames };
}

t.test('a frame read whole and then dropped is lost; one reset unread goes to another replica', async (t) => {
  const header: RepresentHeader = { op: 'represent', model_name: 'Facenet', detector_backend: 'skip', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base', images: [0], max_faces: null, l2_normalize: false };
  // A big frame, so that it spans many socket reads.
  const image = Buffer.alloc(2 << 20, 7);
  for (const [end, expected] of [['close', 'upstream_lost'], ['reset', 'answered']] as const) {
    const dying = await tcpReplica(end);
    const good = await goodReplica();
    t.teardown(() => {
      dying.server.close();
      good.server.close();
    });
    // The dying replica first: least-outstanding picks in order when both are idle.
    const c = createUpstream({ urls: [`http://127.0.0.1:${dying.port}`, `http://127.0.0.1:${good.port}`], timeoutMs: 5000, maxResponseBytes: 1 << 20 });
    t.teardown(() => c.close());
    const got = await c.represent(header, [image], { requestId: 'r' }).then(
      () => 'answered',
      (err: unknown) => (err instanceof ServiceError ? err.code : String(err)),
    );
    t.equal(got, expected, `${end}: ${expected}`);
    t.equal(dying.frames(), 1, `${end}: the dying replica got the frame once`);
    t.equal(good.frames(), end === 'reset' ? 1 : 0, end === 'reset' ? 'reset unread: sent to the other replica' : 'read whole: not sent again');
  }
});

/** A replica that reads whole frames and, once it holds `n` of them, dies: every connection closed at once. */
async function dyingWithFrames(n: number): Promise<{ server: TcpServer; port: number }> {
  const held: Socket[] = [];
  const server = createTcpServer((socket: Socket) => {
    let data = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      data = Buffer.concat([data, c]);
      const frame = frameHead(data);
      if (!frame) return;
      const { head, length } = frame;
      if (data.length - head - 4 < length || held.includes(socket)) return;
      held.push(socket);
      if (held.length === n) for (const s of held) s.end();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

t.test('a model server that dies strikes only the request with the largest job; bystanders go elsewhere or are refunded', async (t) => {
  const header: RepresentHeader = { op: 'represent', model_name: 'Facenet', detector_backend: 'mtcnn', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base', images: [0], max_faces: null, l2_normalize: false };
  // Image headers of three sizes; mtcnn's cost grows with the pixels.
  const sizes = [800, 4000, 1600];
  // Alone, the dying replica gets all three; beside a good one, least-outstanding sends it 800 and
  // 1600 (the 4000 goes to the good one), so 1600 is the largest job it dies with.
  const cases = [
    { withOther: false, holds: 3, expected: ['upstream_failed', 'upstream_lost', 'upstream_failed'] },
    { withOther: true, holds: 2, expected: ['answered', 'answered', 'upstream_lost'] },
  ];
  for (const { withOther, holds, expected } of cases) {
    const dying = await dyingWithFrames(holds);
    const good = await goodReplica();
    t.teardown(() => {
      dying.server.close();
      good.server.close();
    });
    const urls = [`http://127.0.0.1:${dying.port}`, ...(withOther ? [`http://127.0.0.1:${good.port}`] : [])];
    const c = createUpstream({ urls, timeoutMs: 5000, maxResponseBytes: 1 << 20 });
    t.teardown(() => c.close());
    const got = await Promise.all(
      sizes.map((w) =>
        c.represent(header, [makeBombPng(w, w)], { requestId: `r${w}` }).then(
          () => 'answered',
          (err: unknown) => (err instanceof ServiceError ? err.code : String(err)),
        ),
      ),
    );
    t.same(got, expected, `${withOther ? 'beside another replica' : 'alone'}: only the largest job it was running is lost, charged and struck; bystanders ${withOther ? 'are answered elsewhere' : 'are refunded'}`);
    t.same(got.map((code) => consumesCall(code === 'answered' ? 200 : 502, code === 'answered' ? null : (code as 'upstream_lost'))), got.map((code) => code !== 'upstream_failed'), 'the bystanders are not charged');
  }
});

t.test('upstream_lost keeps the call; every other 5xx gives it back', async (t) => {
  t.equal(consumesCall(502, 'upstream_lost'), true);
  t.equal(consumesCall(502, 'upstream_failed'), false);
  t.equal(consumesCall(504, 'upstream_timeout'), false);
  t.equal(consumesCall(503, 'service_warming'), false);
});

t.test('strikes: lost requests are charged and counted; past the limit, image requests are refused until the window ends', async (t) => {
  let clock = 1_000_000;
  const windowMs = 3_600_000;
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_STRIKE_LIMIT: '3', FACECOMPUTE_STRIKE_WINDOW_MS: String(windowMs) });
  const limiter = createMemoryLimiter({ requests: 1000, windowMs: 60_000, concurrent: 8, strikeWindowMs: windowMs }, () => clock);
  let forwarded = 0;
  const lose = async (): Promise<never> => {
    forwarded++;
    throw new ServiceError('upstream_lost', 'the model server stopped while computing this request; it is not sent again');
  };
  const accounts = new MemoryAccounts([
    { key: 'rest', accountId: 'striker', kind: 'rest' },
    { key: 'mcp', accountId: 'striker', kind: 'mcp' },
    { key: 'other', accountId: 'innocent', kind: 'rest' },
  ]);
  const upstream = stubUpstream({ represent: lose, verify: lose, embed: lose });
  const gw = await buildGateway({ config, accounts, logger, limiter, upstream });
  t.teardown(() => gw.close(0));
  const post = (key: string, path: string, body: unknown) =>
    gw.app.inject({ method: 'POST', url: path, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  for (let i = 0; i < 3; i++) {
    const r = await post('rest', '/represent', { img: PNG });
    t.equal(r.statusCode, 502, `lost request ${i + 1}: 502`);
    t.equal(r.json().error, 'upstream_lost');
  }
  t.equal(accounts.used.get('striker'), 3, 'each lost request was charged (no refund)');
  t.equal((await limiter.strikes('striker')).count, 3, 'and is a strike');

  const refused = await post('rest', '/verify', { img1: PNG, img2: PNG });
  t.equal(refused.statusCode, 429);
  t.equal(refused.json().error, 'too_many_strikes');
  t.equal(refused.headers['retry-after'], String(windowMs / 1000), 'Retry-After: until the window ends');
  t.equal((await post('rest', '/compare', { source: { img: PNG }, targets: [E] })).json().error, 'too_many_strikes', 'an image source too');
  t.equal(forwarded, 3, 'the refused requests were not forwarded');
  t.equal(accounts.used.get('striker'), 3, 'nor charged');
  t.equal((await post('rest', '/verify', { img1: E, img2: E })).statusCode, 200, 'embeddings only still run');
  t.equal((await post('other', '/represent', { img: PNG })).json().error, 'upstream_lost', 'another account is not affected');

  // MCP shares the limiter, so the strikes: the same refusal as a tool error.
  const mcp = await createMcp({ config, accounts, logger, limiter, upstream, queue: gw.queue });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const client = new Client({ name: 'strikes', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`), { requestInit: { headers: { Authorization: 'Bearer mcp' } } }));
  t.teardown(() => client.close());
  t.match((await client.callTool({ name: 'represent_face', arguments: { img: PNG } })).structuredContent, { error: 'too_many_strikes' });

  clock += windowMs;
  const after = await post('rest', '/represent', { img: PNG });
  t.equal(after.json().error, 'upstream_lost', 'once the window has ended, image requests run again');
  t.equal((await limiter.strikes('striker')).count, 1, 'a new window, from this strike');
});
