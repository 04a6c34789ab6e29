/**
 * Proves the loopback guard (test/setup/loopback-only.mjs): in a test process, and in every Node and
 * Python child a test starts, a connect, a name lookup or a UDP send beyond loopback is refused before
 * any packet leaves, with the guard's message; loopback still works. The public addresses below are
 * destinations the guard must refuse; none is ever reached.
 */
import t from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import dgram from 'node:dgram';
import { lookup, promises as dnsPromises, resolve4 } from 'node:dns';
import { spawnSync, execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { guardInstalled, withExpectedRefusals, EXPECT_REFUSALS_ENV } from './helpers/loopback-guard.js';

const PUBLIC_V4 = '93.184.216.34';
const PUBLIC_V6 = '2606:2800:220:1:248:1893:25c8:1946';
const GUARD = /loopback guard: refused/;
const PYTHON = resolve('.venv/bin/python');

function socketError(s: net.Socket): Promise<Error> {
  return new Promise((resolve, reject) => {
    s.once('error', resolve);
    s.once('connect', () => reject(new Error('connected beyond loopback')));
  });
}

t.test('the guard is installed in this test process', async (t) => {
  t.ok(guardInstalled());
  t.match(process.env['NODE_OPTIONS'] ?? '', /loopback-only\.mjs/, 'children inherit it through NODE_OPTIONS');
  t.equal(process.env['GOPROXY'], 'off', 'Go builds under test use only the module cache');
  t.equal(process.env['GOTOOLCHAIN'], 'local', 'and never download a toolchain');
  t.equal(process.env['PIP_NO_INDEX'], '1', 'pip has no index unless a test points it at a loopback one');
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) t.notOk(process.env[k], `no ${k}`);
});

t.test('net and tls connects beyond loopback are refused and recorded', async (t) => {
  const { attempts, refused } = await withExpectedRefusals(async () => {
    t.match((await socketError(net.connect(80, PUBLIC_V4))).message, GUARD, 'IPv4');
    t.match((await socketError(net.connect({ port: 443, host: PUBLIC_V6 }))).message, GUARD, 'IPv6');
    t.match((await socketError(tls.connect({ port: 443, host: PUBLIC_V4, servername: 'example.com' }))).message, GUARD, 'TLS');
    t.match((await socketError(net.connect(80, '10.0.0.1'))).message, GUARD, 'a private address is not loopback either');
    t.match((await socketError(net.connect(80, '0.0.0.0'))).message, GUARD, 'nor is 0.0.0.0');
    // npm's HTTP agent passes `path: null` beside the host; only a truthy path is a Unix socket.
    t.match((await socketError(net.connect({ host: '192.0.2.1', port: 80, path: null } as unknown as net.NetConnectOpts))).message, GUARD, 'with path: null (npm)');
  });
  t.same(attempts.map((a) => `${a.host}:${a.port}`), [`${PUBLIC_V4}:80`, `${PUBLIC_V6}:443`, `${PUBLIC_V4}:443`, '10.0.0.1:80', '0.0.0.0:80', '192.0.2.1:80']);
  t.equal(refused.length, 6);
});

t.test('HTTP clients end in the same refusal: fetch (undici) to an address and to a name', async (t) => {
  await withExpectedRefusals(async () => {
    const byAddress = await fetch(`http://${PUBLIC_V4}/`).then(() => null, (e: Error) => e);
    t.match(String((byAddress as { cause?: unknown } | null)?.cause), GUARD, 'by address');
    const byName = await fetch('https://example.com/').then(() => null, (e: Error) => e);
    t.match(String((byName as { cause?: unknown } | null)?.cause), GUARD, 'by name: the lookup itself is refused');
  });
});

t.test('name lookups and DNS queries beyond loopback are refused', async (t) => {
  await withExpectedRefusals(async () => {
    const cbErr = await new Promise<Error | null>((r) => lookup('example.com', (e) => r(e)));
    t.match(String(cbErr?.message), GUARD, 'dns.lookup');
    await t.rejects(dnsPromises.lookup('example.com'), GUARD, 'dns.promises.lookup');
    const resolveErr = await new Promise<Error | null>((r) => resolve4('example.com', (e) => r(e)));
    t.match(String(resolveErr?.message), GUARD, 'dns.resolve4 to the system resolver');
    const resolver = new dnsPromises.Resolver();
    resolver.setServers(['8.8.8.8']);
    await t.rejects(resolver.resolve4('example.com'), GUARD, 'a Resolver pointed at a public server');
  });
});

t.test('UDP sends beyond loopback are refused', async (t) => {
  await withExpectedRefusals(async () => {
    const sock = dgram.createSocket('udp4');
    const err = await new Promise<Error | null>((r) => sock.send(Buffer.from('x'), 53, '8.8.8.8', (e) => r(e)));
    sock.close();
    t.match(String(err?.message), GUARD);
  });
});

t.test('loopback keeps working: connects by address and by localhost, lookups of localhost', async (t) => {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  t.equal(await (await fetch(`http://127.0.0.1:${port}/`)).text(), 'ok');
  t.equal(await (await fetch(`http://localhost:${port}/`)).text(), 'ok');
  const addr = await dnsPromises.lookup('localhost');
  t.ok(addr.address === '127.0.0.1' || addr.address === '::1');
});

t.test('a Node child, even with a bare environment, is guarded and exits non-zero if it swallows the refusal', async (t) => {
  const script = `require('net').connect(443, '${PUBLIC_V4}').on('error', (e) => console.log(e.message));`;
  const r = spawnSync(process.execPath, ['-e', script], { env: { PATH: process.env['PATH'] ?? '', ...EXPECT_REFUSALS_ENV }, encoding: 'utf8' });
  t.match(r.stdout, GUARD, 'the child saw the guard refuse the connect');
  // Unexpected refusals make the process fail even though the script handled the error.
  // Its refusal goes to a log of its own, not the run's (which fails the run when not empty).
  const log = join(mkdtempSync(join(tmpdir(), 'fc-guard-')), 'refusals.log');
  const loud = spawnSync(process.execPath, ['-e', script], { env: { PATH: process.env['PATH'] ?? '', TEST_LOOPBACK_GUARD_LOG: log }, encoding: 'utf8' });
  t.equal(loud.status, 1, 'exit status 1');
  t.match(loud.stderr, /loopback guard: 1 refused attempt/, 'and says why on stderr');
  t.match(readFileSync(log, 'utf8'), /refused a connection to 93\.184\.216\.34:443/, 'and appends it to the refusals log the test runner checks');
  // The asynchronous spawn path (spawn, fork, exec, execFile) is guarded the same way.
  const child = spawn(process.execPath, ['-e', script], { env: { PATH: process.env['PATH'] ?? '', ...EXPECT_REFUSALS_ENV } });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => child.on('close', r));
  t.match(out, GUARD);
});

t.test('a Python child is guarded (sitecustomize on PYTHONPATH)', async (t) => {
  if (!existsSync(PYTHON)) {
    t.fail(`${PYTHON} missing: scripts/bootstrap.sh creates it`);
    return;
  }
  const script = [
    'import socket, urllib.request',
    'for f in (lambda: socket.create_connection(("93.184.216.34", 80), timeout=1), lambda: socket.getaddrinfo("example.com", 443), lambda: urllib.request.urlopen("https://pypi.org/simple/", timeout=1)):',
    '    try:',
    '        f(); print("reached")',
    '    except Exception as e:',
    '        print(e)',
  ].join('\n');
  const out = execFileSync(PYTHON, ['-c', script], { env: { PATH: process.env['PATH'] ?? '', ...EXPECT_REFUSALS_ENV }, encoding: 'utf8' });
  const lines = out.trim().split('\n');
  t.equal(lines.length, 3);
  for (const line of lines) t.match(line, GUARD);
});
