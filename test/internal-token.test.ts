/**
 * The model server off loopback (issue 16 §1): FACECOMPUTE_INTERNAL_TOKEN is required on every
 * /internal/ request (missing → 401, wrong → 401, logged without the token), the kubelet's probes
 * need none and say only up/ready, a non-loopback bind without a token exits non-zero before any
 * model loads, and the gateway and the MCP endpoint send the token.
 */
import t from 'tap';
import { Writable } from 'node:stream';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { REDACT_PATHS, type Logger } from '../src/logging/logger.js';
import { startRegistry } from '../src/model-server/registry.js';
import { buildModelServer } from '../src/model-server/app.js';
import { imageOps } from '../src/model-server/adapters.js';
import { isLoopbackHost, tokenChecker } from '../src/model-server/internal-auth.js';
import { INTERNAL_TOKEN_HEADER } from '../src/model-client/protocol.js';
import { buildGateway } from '../src/gateway/app.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { startFakeModelServer } from './helpers/procs.js';
import { makePng } from './helpers/images.js';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';
import { MODELS_CACHE } from './helpers/real-stack.js';
import { zeroEngines } from './helpers/zero-engines.js';

const TOKEN = 'tok_' + 'a1b2c3d4'.repeat(5);
const WRONG = 'tok_' + 'zzzzyyyy'.repeat(5);

const engines = zeroEngines();

function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink), lines };
}

t.test('with a token, /internal/ refuses a missing or wrong one with 401 and logs neither', async (t) => {
  const cfg = loadConfig({ FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR, FACECOMPUTE_MODELS_CACHE: MODELS_CACHE, FACECOMPUTE_INTERNAL_TOKEN: TOKEN, FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib', FACECOMPUTE_LOG_LEVEL: 'info' });
  const { logger, lines } = capturingLogger();
  const state = await startRegistry(cfg, createLogger('t', 'silent'), engines);
  for (let i = 0; i < 200 && state.warmup.snapshot().status === 'warming'; i++) await new Promise((r) => setTimeout(r, 25));
  const app = await buildModelServer({ config: cfg, logger, state, image: imageOps(cfg) });
  t.teardown(() => app.close());

  for (const url of ['/internal/readiness', '/internal/capabilities', '/nope']) {
    const missing = await app.inject({ url });
    t.equal(missing.statusCode, 401, `${url}: no token → 401`);
    t.same(missing.json(), { error: 'unauthorized', detail: 'the internal token is required' });
  }
  const wrong = await app.inject({ url: '/internal/capabilities', headers: { [INTERNAL_TOKEN_HEADER]: WRONG } });
  t.equal(wrong.statusCode, 401, 'wrong token → 401');
  t.same(wrong.json(), { error: 'unauthorized', detail: 'the internal token is not valid' });
  const prefix = await app.inject({ url: '/internal/capabilities', headers: { [INTERNAL_TOKEN_HEADER]: TOKEN.slice(0, -1) } });
  t.equal(prefix.statusCode, 401, 'a prefix of the token is wrong too');
  const longer = await app.inject({ url: '/internal/capabilities', headers: { [INTERNAL_TOKEN_HEADER]: TOKEN + 'x' } });
  t.equal(longer.statusCode, 401, 'so is the token with more after it');
  const frame = await app.inject({ method: 'POST', url: '/internal/represent', headers: { 'content-type': 'application/vnd.facecompute.frame' }, payload: Buffer.alloc(64) });
  t.equal(frame.statusCode, 401, 'compute routes too, before the body is looked at');

  const ok = await app.inject({ url: '/internal/capabilities', headers: { [INTERNAL_TOKEN_HEADER]: TOKEN } });
  t.equal(ok.statusCode, 200, 'the right token passes');
  t.same(ok.json().allowed_models, ['Dlib']);

  // The kubelet's probes: no token, and nothing but up/ready.
  const health = await app.inject({ url: '/health' });
  t.same([health.statusCode, health.json()], [200, { status: 'ok' }]);
  const ready = await app.inject({ url: '/readiness' });
  t.same([ready.statusCode, ready.json()], [200, { status: 'ready', ready: true }]);

  const log = lines.join('');
  const refusals = lines.filter((l) => l.includes('internal request refused'));
  t.equal(refusals.length, 7, 'each refusal is logged');
  t.match(refusals[0], /"reason":"no internal token"/);
  t.ok(refusals.some((l) => l.includes('"reason":"wrong internal token"')));
  t.notOk(log.includes(WRONG), 'the wrong token is not in the log');
  t.notOk(log.includes(TOKEN.slice(4, 20)), 'nor any part of the real one');
});

t.test('without a token on loopback (the default), /internal/ stays open as before', async (t) => {
  const cfg = loadConfig({ FACECOMPUTE_ALLOWED_MODELS: 'Dlib', FACECOMPUTE_DEFAULT_MODEL: 'Dlib', FACECOMPUTE_LOG_LEVEL: 'silent' });
  const state = await startRegistry(cfg, createLogger('t', 'silent'), engines);
  const app = await buildModelServer({ config: cfg, logger: createLogger('t', 'silent'), state, image: imageOps(cfg) });
  t.teardown(() => app.close());
  t.equal((await app.inject({ url: '/internal/capabilities' })).statusCode, 200);
});

t.test('the token comparison: constant-time over hashes, exact', async (t) => {
  const check = tokenChecker(TOKEN);
  t.equal(check(TOKEN), 'ok');
  t.equal(check(WRONG), 'mismatch');
  t.equal(check(''), 'missing');
  t.equal(check(undefined), 'missing');
  t.equal(check(['a', 'b']), 'missing', 'a repeated header is not a token');
  t.equal(check(TOKEN.toUpperCase()), 'mismatch');
});

t.test('loopback is 127.0.0.0/8, ::1 and localhost; nothing else', async (t) => {
  for (const h of ['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', ' LOCALHOST ']) t.ok(isLoopbackHost(h), h);
  for (const h of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.2', 'fd00::1', 'model-server', 'localhost.example.com']) t.notOk(isLoopbackHost(h), h);
});

function runModelServer(env: Record<string, string>): Promise<{ code: number | null; out: string; ms: number }> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) clean[k] = v;
  const t0 = Date.now();
  const p = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'model-server'], { env: { ...clean, FACECOMPUTE_MODEL_SERVER_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO_ROOT });
  let out = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const killer = setTimeout(() => p.kill('SIGKILL'), 30_000);
  return new Promise((r) => p.on('exit', (code) => (clearTimeout(killer), r({ code, out, ms: Date.now() - t0 }))));
}

t.test('a non-loopback bind without a token exits non-zero, before loading anything', async (t) => {
  for (const host of ['0.0.0.0', '::', '10.11.12.13']) {
    const r = await runModelServer({ FACECOMPUTE_MODEL_SERVER_HOST: host });
    t.equal(r.code, 1, `${host}: exit 1`);
    t.match(r.out, new RegExp(`FACECOMPUTE_MODEL_SERVER_HOST=${host.replace(/\./g, '\\.')} is not a loopback address: set FACECOMPUTE_INTERNAL_TOKEN`));
    t.notMatch(r.out, /listening/i);
  }
  const short = await runModelServer({ FACECOMPUTE_MODEL_SERVER_HOST: '0.0.0.0', FACECOMPUTE_INTERNAL_TOKEN: 'short-secret-value' });
  t.equal(short.code, 1, 'a short token is refused too');
  t.match(short.out, /FACECOMPUTE_INTERNAL_TOKEN must be at least 32 visible ASCII characters/);
  t.notMatch(short.out, /short-secret-value/, 'and not echoed');
});

t.test('the gateway and the MCP endpoint send the token', async (t) => {
  const ms = await startFakeModelServer({ INTERNAL_TOKEN: TOKEN });
  t.teardown(() => ms.kill());
  const accounts = new MemoryAccounts([
    { key: 'rest-key', accountId: 'acct', kind: 'rest', credits: 100 },
    { key: 'fc_mcp_key', accountId: 'acct', kind: 'mcp', credits: 100 },
  ]);
  const env = { FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_ALLOWED_MODELS: 'Facenet', FACECOMPUTE_DEFAULT_MODEL: 'Facenet' };
  const logger = createLogger('t', 'silent');
  const img = makePng(20, 20, 9).toString('base64');
  const represent = async (config: ReturnType<typeof loadConfig>) => {
    const gw = await buildGateway({ config, accounts, logger });
    try {
      const r = await gw.app.inject({ method: 'POST', url: '/represent', headers: { authorization: 'Bearer rest-key', 'content-type': 'application/json' }, payload: { img } });
      return r.statusCode;
    } finally {
      await gw.close(0);
    }
  };
  t.equal(await represent(loadConfig({ ...env, FACECOMPUTE_INTERNAL_TOKEN: TOKEN })), 200, 'gateway with the token: served');
  t.equal(await represent(loadConfig(env)), 502, 'gateway without it: refused by the model server');

  const mcp = await createMcp({ config: loadConfig({ ...env, FACECOMPUTE_INTERNAL_TOKEN: TOKEN }), accounts, logger });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(async () => {
    await mcp.app.close();
    await mcp.upstream.close();
  });
  const c = new Client({ name: 't', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(mcp.app.server.address() as { port: number }).port}/mcp`), { requestInit: { headers: { Authorization: 'Bearer fc_mcp_key' } } }));
  t.teardown(() => c.close());
  const res = (await c.callTool({ name: 'represent_face', arguments: { img } })) as { isError?: boolean; structuredContent?: { results?: unknown[] } };
  t.notOk(res.isError, 'MCP endpoint with the token: served');
  t.equal(res.structuredContent?.results?.length, 1);
  const unauthorized = ((await (await fetch(`http://127.0.0.1:${ms.port}/__stats`)).json()) as { unauthorized: number }).unauthorized;
  t.ok(unauthorized >= 1, 'the refusals were the tokenless gateway');
});
