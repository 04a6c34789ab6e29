import t from 'tap';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createRemoteFetcher, type LookupFn, type RemoteFetchOptions } from '../src/service/inputs/remote-fetch.js';
import { ServiceError } from '../src/errors/index.js';
import { makePng } from './helpers/images.js';
import { withExpectedRefusals } from './helpers/loopback-guard.js';

const PNG = makePng(8, 8);
const PUBLIC_IP = '93.184.216.34';

function handler(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void {
  const u = req.url ?? '/';
  if (u === '/img.png') {
    res.writeHead(200, { 'content-type': 'image/png', 'x-echo-auth': String(req.headers['authorization'] ?? '') });
    res.end(PNG);
  } else if (u === '/headers') {
    res.writeHead(200, { 'content-type': 'image/png' });
    // Leak check: the fetcher must not send client headers; the body is PNG + the header names.
    res.end(Buffer.concat([PNG, Buffer.from(Object.keys(req.headers).join(','))]));
  } else if (u === '/big-declared') {
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(5_000_000) });
    res.end(Buffer.concat([PNG, Buffer.alloc(5_000_000 - PNG.length)]));
  } else if (u === '/big-chunked') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(PNG);
    let n = 0;
    const iv = setInterval(() => {
      if (n++ > 100 || res.destroyed) { clearInterval(iv); res.end(); return; }
      res.write(Buffer.alloc(64 * 1024));
    }, 1);
  } else if (u === '/notimage') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html>hello</html>');
  } else if (u === '/404') {
    res.writeHead(404);
    res.end('nope');
  } else if (u === '/slow') {
    res.writeHead(200, { 'content-type': 'image/png' });
    res.write(PNG.subarray(0, 10));
  } else if (u.startsWith('/redirect?to=')) {
    res.writeHead(302, { location: decodeURIComponent(u.slice('/redirect?to='.length)) });
    res.end();
  } else if (u.startsWith('/loop')) {
    res.writeHead(302, { location: '/loop' });
    res.end();
  } else {
    res.writeHead(404);
    res.end();
  }
}

let httpPort = 0;
let httpsPort = 0;
let cert = '';
const servers: Server[] = [];

let rebindCalls = 0;
let lookups: string[] = [];
const DNS: Record<string, string[]> = {
  'img.example.com': [PUBLIC_IP],
  'cdn.example.com': [PUBLIC_IP],
  'private.example.com': ['10.0.0.5'],
  'mixed.example.com': [PUBLIC_IP, '127.0.0.1'],
  'metadata.example.com': ['169.254.169.254'],
  'v6mapped.example.com': ['::ffff:127.0.0.1'],
  'v6loop.example.com': ['::1'],
  'cgnat.example.com': ['100.64.1.1'],
  'zero.example.com': ['0.0.0.0'],
};
const fakeLookup: LookupFn = async (host) => {
  lookups.push(host);
  if (host === 'rebind.example.com') {
    rebindCalls++;
    return [{ address: rebindCalls === 1 ? PUBLIC_IP : '127.0.0.1', family: 4 }];
  }
  const a = DNS[host];
  if (!a) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

function fetcher(over: Partial<RemoteFetchOptions> = {}) {
  return createRemoteFetcher({
    mode: 'public',
    allowedOrigins: [],
    maxBytes: 1_000_000,
    timeoutMs: 2000,
    maxRedirects: 3,
    lookup: fakeLookup,
    // Test-only dial: the fake public address is served by the loopback test servers.
    testDial: (address, port) => {
      if (address !== PUBLIC_IP) throw new Error('test dial used for an unexpected address ' + address);
      return { host: '127.0.0.1', port: port === 443 ? httpsPort : httpPort };
    },
    ca: cert,
    ...over,
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (err instanceof ServiceError) return err.code;
    return 'unexpected:' + String(err);
  }
}

t.before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-tls-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=img.example.com', '-addext', 'subjectAltName=DNS:img.example.com,DNS:cdn.example.com'], { stdio: 'ignore' });
  cert = readFileSync(join(dir, 'c.pem'), 'utf8');
  const http = createServer(handler);
  const https = createHttpsServer({ key: readFileSync(join(dir, 'k.pem')), cert }, handler);
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
  httpPort = (http.address() as AddressInfo).port;
  httpsPort = (https.address() as AddressInfo).port;
  servers.push(http, https as unknown as Server);
});
t.teardown(() => {
  for (const s of servers) { s.closeAllConnections(); s.close(); }
});

const HOSTILE: string[] = [
  'http://127.0.0.1/img.png',
  'http://127.1/img.png',
  'http://127.0.1/img.png',
  'http://2130706433/img.png',
  'http://0x7f000001/img.png',
  'http://0x7f.0.0.1/img.png',
  'http://0177.0.0.1/img.png',
  'http://017700000001/img.png',
  'http://127.000.000.001/img.png',
  'http://0/img.png',
  'http://0.0.0.0/img.png',
  'http://[::1]/img.png',
  'http://[0:0:0:0:0:0:0:1]/img.png',
  'http://[::ffff:127.0.0.1]/img.png',
  'http://[::ffff:7f00:1]/img.png',
  'http://[::127.0.0.1]/img.png',
  'http://[::]/img.png',
  'http://[::ffff:169.254.169.254]/',
  'http://[64:ff9b::7f00:1]/',
  'http://[2002:7f00:1::]/',
  'http://[fe80::1]/',
  'http://[fc00::1]/',
  'http://[fd00:ec2::254]/latest/meta-data/',
  'http://[ff02::1]/',
  'http://localhost/img.png',
  'http://localhost./img.png',
  'http://LOCALHOST/img.png',
  'http://api.localhost/img.png',
  'http://printer.local/img.png',
  'http://printer.local./img.png',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.1/',
  'http://172.16.0.1/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://198.18.0.1/',
  'http://224.0.0.1/',
  'http://239.255.255.250/',
  'http://240.0.0.1/',
  'http://255.255.255.255/',
  'http://192.0.0.192/',
  'http://user:pass@img.example.com/img.png',
  'http://user@img.example.com/img.png',
  'http://img.example.com@127.0.0.1/img.png',
  'http://img.example.com:8080/img.png',
  'https://img.example.com:8443/img.png',
  'http://private.example.com/img.png',
  'http://mixed.example.com/img.png',
  'http://metadata.example.com/latest/meta-data/',
  'http://v6mapped.example.com/img.png',
  'http://v6loop.example.com/img.png',
  'http://cgnat.example.com/img.png',
  'http://zero.example.com/img.png',
  'ftp://img.example.com/img.png',
  'file:///etc/passwd',
  'gopher://img.example.com/',
  'data:image/png;base64,AAAA',
  'javascript:alert(1)',
  'not a url',
  'http://intranet/img.png',
  'http://img.example.com/redirect?to=http%3A%2F%2F10.0.0.1%2F',
  'http://img.example.com/redirect?to=http%3A%2F%2Flocalhost%2Fimg.png',
  'http://img.example.com/redirect?to=http%3A%2F%2F169.254.169.254%2Flatest%2F',
  'http://img.example.com/redirect?to=http%3A%2F%2Fprivate.example.com%2Fimg.png',
  'http://img.example.com/redirect?to=http%3A%2F%2F%5B%3A%3A1%5D%2F',
  'http://img.example.com/redirect?to=file%3A%2F%2F%2Fetc%2Fpasswd',
  'http://img.example.com/redirect?to=http%3A%2F%2Fimg.example.com%3A6379%2F',
];

t.test(`hostile URL matrix (${HOSTILE.length} URLs) → url_not_allowed`, async (t) => {
  t.ok(HOSTILE.length >= 40);
  const f = fetcher();
  for (const u of HOSTILE) t.equal(await code(f.fetch(u)), 'url_not_allowed', u);
});

t.test('public mode fetches a public image over HTTP and HTTPS', async (t) => {
  const f = fetcher();
  const r = await f.fetch('http://img.example.com/img.png');
  t.same(r.bytes, PNG);
  const r2 = await f.fetch('https://img.example.com/img.png');
  t.same(r2.bytes, PNG);
  const r3 = await f.fetch('http://img.example.com/redirect?to=%2Fimg.png');
  t.same(r3.bytes, PNG, 'a redirect to a public URL is followed');
});

t.test('no client headers are forwarded', async (t) => {
  const r = await fetcher().fetch('http://img.example.com/headers');
  const names = r.bytes.subarray(PNG.length).toString();
  t.notMatch(names, /authorization|cookie|x-api-key/);
  t.match(names, /user-agent/);
});

t.test('allowlist mode: HTTPS and exact origins only', async (t) => {
  const f = fetcher({ mode: 'allowlist', allowedOrigins: ['https://img.example.com'] });
  t.same((await f.fetch('https://img.example.com/img.png')).bytes, PNG);
  t.equal(await code(f.fetch('http://img.example.com/img.png')), 'url_not_allowed', 'non-HTTPS refused');
  t.equal(await code(f.fetch('https://cdn.example.com/img.png')), 'url_not_allowed', 'other origin refused');
  t.equal(await code(f.fetch('https://img.example.com/redirect?to=https%3A%2F%2Fcdn.example.com%2Fimg.png')), 'url_not_allowed', 'redirect off the allowlist refused');
  t.equal(await code(f.fetch('https://img.example.com.evil.com/img.png')), 'url_not_allowed');
});

t.test('an allowlisted origin may use a non-standard port', async (t) => {
  const f = fetcher({ mode: 'allowlist', allowedOrigins: ['https://img.example.com:8443'], testDial: (_a, _p) => ({ host: '127.0.0.1', port: httpsPort }) });
  t.same((await f.fetch('https://img.example.com:8443/img.png')).bytes, PNG);
});

t.test('DNS rebinding: resolved once per hop, connection pinned, second resolution re-checked', async (t) => {
  rebindCalls = 0;
  lookups = [];
  const f = fetcher();
  const r = await f.fetch('http://rebind.example.com/img.png');
  t.same(r.bytes, PNG, 'first resolution public: fetched from the pinned address');
  t.equal(lookups.filter((h) => h === 'rebind.example.com').length, 1, 'resolved exactly once');
  // A redirect back to the same name resolves again: now private, so refused.
  t.equal(await code(f.fetch('http://rebind.example.com/redirect?to=http%3A%2F%2Frebind.example.com%2Fimg.png')), 'url_not_allowed');
});

t.test('fetch failures → url_fetch_failed; oversize → image_too_large', async (t) => {
  const f = fetcher({ maxBytes: 100_000, timeoutMs: 500 });
  t.equal(await code(f.fetch('http://img.example.com/404')), 'url_fetch_failed');
  t.equal(await code(f.fetch('http://img.example.com/notimage')), 'url_not_image', 'fetched whole, not an image: its own (charged) code');
  t.equal(await code(f.fetch('http://nxdomain.example.com/img.png')), 'url_fetch_failed');
  t.equal(await code(f.fetch('http://img.example.com/loop')), 'url_fetch_failed', 'too many redirects');
  t.equal(await code(f.fetch('http://img.example.com/big-declared')), 'image_too_large');
  t.equal(await code(f.fetch('http://img.example.com/big-chunked')), 'image_too_large');
  // A body that never ends is cut by the fetch's own 500 ms deadline: the detail says so, and the
  // answer did not come before it (a lower bound cannot flake; an upper one would measure the machine).
  const t0 = performance.now();
  const slow = await f.fetch('http://img.example.com/slow').then(() => null, (err: unknown) => err);
  const waited = performance.now() - t0;
  t.match(slow, { code: 'url_fetch_failed', detail: /timed out/ }, 'total timeout');
  t.ok(waited >= 450, `cut at the deadline (${waited.toFixed(0)} ms)`);
  const f0 = fetcher({ maxRedirects: 0 });
  t.equal(await code(f0.fetch('http://img.example.com/redirect?to=%2Fimg.png')), 'url_fetch_failed', 'redirects off');
});

t.test('the production connector dials only the checked address (no testDial)', async (t) => {
  // Without testDial the connector dials the address the policy checked. The loopback guard refuses
  // that connect before any packet leaves and records where it was asked to go: exactly the public
  // address img.example.com resolved to, on port 80, and nothing else (in particular never loopback).
  const f = fetcher({ testDial: undefined, timeoutMs: 2000 });
  const { error, attempts, refused } = await withExpectedRefusals(() => f.fetch('http://img.example.com/img.png'));
  t.ok(error instanceof ServiceError && error.code === 'url_fetch_failed', 'the fetch fails with url_fetch_failed');
  t.same(attempts, [{ host: PUBLIC_IP, port: 80, allowed: false }], 'one connect, to the checked public address only');
  t.same(refused.map((r) => r.target), [`${PUBLIC_IP}:80`], 'the guard refused that connect, so no packet left');
  const cause = String((error as { cause?: unknown })?.cause ?? '');
  t.match(cause, /loopback guard: refused a connection to 93\.184\.216\.34:80/, 'the failure is the guard refusing the checked address');
});
