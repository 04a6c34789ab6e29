/**
 * The gateway answers CORS for the console's origin only (src/gateway/cors.ts), so that the console's
 * Try it page can call it from the browser and no other site can read its answers:
 * - a preflight from the console's origin (FACECOMPUTE_PUBLIC_CONSOLE_URL) is allowed for GET and POST
 *   with the Authorization header, without credentials;
 * - a preflight from any other origin, or none, is the contract's 404, as before;
 * - answers to the console's origin name it and expose the request id and rate-limit headers, errors
 *   (401) included; answers to another origin carry no CORS header.
 */
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { buildGateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { consoleOrigins } from '../src/gateway/cors.js';

const CONSOLE = 'https://console.facecompute.example';
const config = loadConfig({
  FACECOMPUTE_LOG_LEVEL: 'silent',
  FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-cors-')),
  FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9',
  // A path and a trailing slash: the origin is scheme, host and port only.
  FACECOMPUTE_PUBLIC_CONSOLE_URL: `${CONSOLE}/console/`,
});
const gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'rest-key', accountId: 'a1', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream: stubUpstream() });
t.teardown(() => gw.close(500));

const preflight = (path: string, origin?: string, method = 'POST') =>
  gw.app.inject({
    method: 'OPTIONS',
    url: path,
    headers: { ...(origin ? { origin } : {}), 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
  });

t.test("a preflight from the console's origin is allowed, without credentials", async (t) => {
  for (const [path, method] of [['/verify', 'POST'], ['/represent', 'POST'], ['/capabilities', 'GET']] as const) {
    const r = await preflight(path, CONSOLE, method);
    t.equal(r.statusCode, 204, `${path}: 204`);
    t.equal(r.headers['access-control-allow-origin'], CONSOLE, `${path}: the console's origin, not *`);
    t.match(String(r.headers['access-control-allow-methods']), method);
    t.match(String(r.headers['access-control-allow-headers']), /\bauthorization\b/);
    t.equal(r.headers['access-control-allow-credentials'], undefined, `${path}: no credentials`);
  }
});

t.test('a preflight from another origin is the 404 it was; without one it is not a preflight (405)', async (t) => {
  for (const origin of ['https://evil.example', 'http://console.facecompute.example', 'https://console.facecompute.example:8443', 'null', undefined]) {
    const r = await preflight('/verify', origin);
    // Without Origin, OPTIONS is just a method /verify does not take (src/http/route-guard.ts).
    const [status, code] = origin === undefined ? [405, 'method_not_allowed'] : [404, 'not_found'];
    t.equal(r.statusCode, status, `origin ${origin}: ${status}`);
    t.equal(r.json().error, code);
    t.equal(r.headers['access-control-allow-origin'], undefined, `origin ${origin}: no CORS header`);
    t.equal(r.headers['access-control-allow-methods'], undefined);
  }
});

t.test("answers name the console's origin and expose what a client reads, errors included", async (t) => {
  const ok = await gw.app.inject({ method: 'GET', url: '/health', headers: { origin: CONSOLE } });
  t.equal(ok.statusCode, 200);
  t.equal(ok.headers['access-control-allow-origin'], CONSOLE);
  const refused = await gw.app.inject({ method: 'POST', url: '/verify', headers: { origin: CONSOLE, authorization: 'Bearer wrong', 'content-type': 'application/json' }, payload: '{}' });
  t.equal(refused.statusCode, 401, 'a refused key');
  t.equal(refused.headers['access-control-allow-origin'], CONSOLE, 'the page can read why');
  const exposed = String(refused.headers['access-control-expose-headers']).split(/,\s*/);
  for (const h of ['x-request-id', 'ratelimit-remaining', 'retry-after']) t.ok(exposed.includes(h), `${h} exposed`);
  const charged = await gw.app.inject({ method: 'POST', url: '/verify', headers: { origin: CONSOLE, authorization: 'Bearer rest-key', 'content-type': 'application/json' }, payload: '{}' });
  t.equal(charged.headers['access-control-allow-origin'], CONSOLE, `a keyed answer (${charged.statusCode})`);
  t.match(String(charged.headers['vary']), /origin/i, 'caches keep answers per origin');

  const other = await gw.app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://evil.example' } });
  t.equal(other.statusCode, 200);
  t.equal(other.headers['access-control-allow-origin'], undefined, 'another origin cannot read it');
  t.equal(other.headers['access-control-expose-headers'], undefined);
});

t.test("on loopback (serve's default console URL), the same port under its other names, nothing else", async (t) => {
  t.same([...consoleOrigins('http://127.0.0.1:8082')].sort(), ['http://127.0.0.1:8082', 'http://[::1]:8082', 'http://localhost:8082']);
  t.same([...consoleOrigins('https://console.facecompute.example/x/')], ['https://console.facecompute.example'], 'a public URL: its origin only');
  const local = await buildGateway({ config: { ...config, accounts: { ...config.accounts, publicConsoleUrl: 'http://127.0.0.1:8082' } }, accounts: new MemoryAccounts([]), logger: createLogger('test', 'silent'), upstream: stubUpstream() });
  t.teardown(() => local.close(500));
  for (const [origin, allowed] of [['http://localhost:8082', true], ['http://127.0.0.1:8082', true], ['http://localhost:8083', false], ['https://localhost:8082', false], ['http://127.0.0.2:8082', false]] as const) {
    const r = await local.app.inject({ method: 'GET', url: '/health', headers: { origin } });
    t.equal(r.headers['access-control-allow-origin'], allowed ? origin : undefined, `${origin}: ${allowed ? 'allowed' : 'refused'}`);
  }
});
