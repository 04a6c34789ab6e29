/**
 * The fence, proven from every kind of process the tests start, with or without a network namespace:
 * each tries once to reach 192.0.2.1 (TEST-NET-1, never a real host) and is refused before a packet
 * leaves, and the refusal is logged. Each attempt runs as a child with its own guard log (not the run's,
 * which would fail the run), exactly as a test's child would run:
 * - Node and Python: the loopback guard (test/setup/loopback-only.mjs, its sitecustomize), logged;
 * - npm (Node, with its update check off), logged by the guard;
 * - curl: test/setup/bin/curl refuses and logs a URL it sees, and proxies any other to a closed port;
 * - Chromium: the route test/helpers/browser.ts gives every context refuses and logs; under it, the
 *   proxy on a closed loopback port refuses what no route sees;
 * - HAProxy: test/helpers/fence.ts refuses a configuration that names a non-loopback server, logged;
 * - Go and cargo: their configuration (GOPROXY=off, CARGO_NET_OFFLINE) refuses before any lookup, and
 *   they say so.
 * In the CI run's namespace there is also no route; these hold without it (`unshare` refused).
 */
import t from 'tap';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

const TARGET = '192.0.2.1';
const work = mkdtempSync(join(tmpdir(), 'facecompute-fence-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

let n = 0;
/** Runs one attempt as a test's child runs (the guard's environment), with a guard log of its own. */
function attempt(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeout?: number } = {}): { r: SpawnSyncReturns<string>; log: string; out: string } {
  const log = join(work, `guard-${++n}.log`);
  writeFileSync(log, '');
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...opts.env, TEST_LOOPBACK_GUARD_LOG: log };
  delete env['TEST_LOOPBACK_GUARD_EXPECT'];
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? work, env, encoding: 'utf8', timeout: opts.timeout ?? 60_000 });
  return { r, log: readFileSync(log, 'utf8'), out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

t.test('every test process inherits the fence', async (t) => {
  for (const [k, v] of Object.entries({ NPM_CONFIG_UPDATE_NOTIFIER: 'false', CARGO_NET_OFFLINE: 'true', GOPROXY: 'off', GOSUMDB: 'off', PIP_NO_INDEX: '1', NO_PROXY: '*' })) {
    t.equal(process.env[k], v, `${k}=${v}`);
  }
  t.match(process.env['NODE_OPTIONS'] ?? '', /loopback-only\.mjs/, 'NODE_OPTIONS preloads the guard into Node children');
  t.match(process.env['PYTHONPATH'] ?? '', /test\/setup\/python/, 'PYTHONPATH loads it into Python children');
  t.equal((process.env['PATH'] ?? '').split(':')[0], join(REPO_ROOT, 'test', 'setup', 'bin'), "test/setup/bin is first on PATH (curl's wrapper)");
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy']) t.notOk(process.env[k], `no ${k}`);
  const which = spawnSync('bash', ['-c', 'command -v curl'], { encoding: 'utf8' });
  t.equal(which.stdout.trim(), join(REPO_ROOT, 'test', 'setup', 'bin', 'curl'), 'a child asking for curl gets the wrapper');
});

t.test('every browser test launches Chromium through the fenced helper', async (t) => {
  const files = readdirSync(join(REPO_ROOT, 'test'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.includes('node_modules'));
  const direct = files.filter((f) => f !== join('helpers', 'browser.ts') && f !== 'fence.test.ts' && /chromium\.(launch|connect)|launchPersistentContext/.test(readFileSync(join(REPO_ROOT, 'test', f), 'utf8')));
  t.same(direct, [], 'no test starts Chromium but test/helpers/browser.ts');
  const users = files.filter((f) => /from '\.\/(helpers\/)?browser\.js'/.test(readFileSync(join(REPO_ROOT, 'test', f), 'utf8')));
  t.ok(users.length >= 2, `the helper's users: ${users.join(', ')}`);
});

t.test('Node: refused by the guard, and logged', async (t) => {
  const { r, log, out } = attempt(process.execPath, ['-e', `require('node:net').connect(80, '${TARGET}').on('error', (e) => { console.error(e.message); process.exit(3); }).on('connect', () => process.exit(0));`]);
  t.not(r.status, 0, 'the child fails');
  t.match(out, `loopback guard: refused a connection to ${TARGET}:80`);
  t.match(log, new RegExp(`pid \\d+ .*: loopback guard: refused a connection to ${TARGET.replace(/\./g, '\\.')}:80`), 'logged');
});

t.test('Python: refused by the guard, and logged', async (t) => {
  const { r, log, out } = attempt('python3', ['-c', `import socket\nsocket.create_connection(("${TARGET}", 80), timeout=5)`]);
  t.not(r.status, 0, 'the child fails');
  t.match(out, `loopback guard: refused a connection to ${TARGET}:80`);
  t.match(log, `python -c: loopback guard: refused a connection to ${TARGET}:80`, 'logged');
});

t.test('npm: no update check, and a registry request refused by the guard, logged', async (t) => {
  const cfg = attempt('npm', ['config', 'get', 'update-notifier']);
  t.equal(cfg.r.stdout.trim(), 'false', "npm's update notifier is off");
  const { r, log } = attempt('npm', ['view', 'left-pad', 'version', `--registry=http://${TARGET}/`, '--fetch-retries=0', '--fetch-timeout=5000']);
  t.not(r.status, 0, 'npm fails');
  t.match(log, `loopback guard: refused a connection to ${TARGET}:80`, 'logged');
});

t.test('curl: a URL beyond loopback refused and logged; one curl finds itself goes to a closed loopback port', async (t) => {
  const seen = attempt('curl', ['-sS', '--max-time', '5', `http://${TARGET}/`]);
  t.equal(seen.r.status, 7, "curl's exit code for a refused connection");
  t.match(seen.log, `curl -sS --max-time 5 http://${TARGET}/: loopback guard: refused a connection to http://${TARGET}/`, 'logged');
  // A URL the wrapper cannot see (in a config file) meets the proxy on a closed loopback port instead.
  writeFileSync(join(work, 'curl.cfg'), `url = "http://${TARGET}/"\n`);
  const hidden = attempt('curl', ['-sS', '--max-time', '5', '-K', join(work, 'curl.cfg')]);
  t.equal(hidden.r.status, 7, 'refused');
  t.match(hidden.out, /Failed to connect to 127\.0\.0\.1 port 9/, 'at the closed loopback proxy, never the address');
  const loop = attempt('curl', ['-sS', '--max-time', '5', 'http://127.0.0.1:9/']);
  t.equal(loop.log, '', 'loopback passes the wrapper (and finds the port closed)');
});

t.test('Chromium: refused by the route every context gets, and logged; the proxy under it refuses too', { timeout: 120_000 }, async (t) => {
  const script = `
    import { chromium } from 'playwright-core';
    import { launchChromium, CHROMIUM_ARGS } from ${JSON.stringify(join(REPO_ROOT, 'test/helpers/browser.ts'))};
    const browser = await launchChromium();
    const page = await browser.newPage();
    const routed = await page.goto('http://${TARGET}/').then(() => 'loaded', (e) => e.message.split('\\n')[0]);
    console.log('ROUTED ' + routed);
    await browser.close();
    // The proxy alone: a browser with the same arguments and no route.
    const bare = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
    const p2 = await (await bare.newContext()).newPage();
    const proxied = await p2.goto('http://${TARGET}/').then(() => 'loaded', (e) => e.message.split('\\n')[0]);
    console.log('PROXIED ' + proxied);
    await bare.close();
  `;
  const { r, log, out } = attempt(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, timeout: 110_000 });
  t.match(out, /ROUTED .*net::ERR_BLOCKED_BY_CLIENT/, `the page's request was aborted by the route: ${out.slice(-600)}`);
  t.match(out, /PROXIED .*net::ERR_PROXY_CONNECTION_FAILED/, 'with no route, the closed loopback proxy refuses it');
  t.match(log, `loopback guard: refused a request from Chromium to http://${TARGET}/`, 'logged');
  t.not(r.status, 0, 'the process fails, as a browser test that tried would');
});

t.test('HAProxy: a configuration naming a server beyond loopback is refused before it starts, and logged', async (t) => {
  const script = `
    import { assertLoopbackHaproxyConfig } from ${JSON.stringify(join(REPO_ROOT, 'test/helpers/fence.ts'))};
    assertLoopbackHaproxyConfig('frontend f\\n    bind 127.0.0.1:8080\\nbackend b\\n    server ok 127.0.0.1:8081 check\\n');
    console.log('LOOPBACK OK');
    try { assertLoopbackHaproxyConfig('backend b\\n    server out ${TARGET}:80 check\\n'); console.log('NOT REFUSED'); } catch (e) { console.log('REFUSED ' + e.message); }
  `;
  const { log, out } = attempt(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT });
  t.match(out, 'LOOPBACK OK', 'a loopback configuration passes');
  t.match(out, `REFUSED loopback guard: refused an HAProxy configuration with "server out ${TARGET}:80 check"`);
  t.match(log, `refused an HAProxy configuration with "server out ${TARGET}:80 check"`, 'logged');
});

t.test('Go: GOPROXY=off refuses a module download before any lookup', async (t) => {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (!t.equal(go.status, 0, 'go is installed (scripts/bootstrap.sh installs it)')) return;
  const { r, out, log } = attempt('go', ['mod', 'download', '-json', `golang.org/x/text@v0.3.0`], { env: { GOMODCACHE: join(work, 'gomod'), GOPATH: join(work, 'gopath') } });
  t.not(r.status, 0, 'refused');
  t.match(out, 'module lookup disabled by GOPROXY=off', 'by its configuration, and it says so');
  t.equal(log, '', 'nothing reached the guard: Go never tried');
});

t.test('cargo: offline, it refuses to fetch a crate it does not have', { timeout: 120_000 }, async (t) => {
  const dir = join(work, 'crate');
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'Cargo.toml'), '[package]\nname = "fence-probe"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nitoa = "1"\n\n[workspace]\n');
  writeFileSync(join(dir, 'src', 'main.rs'), 'fn main() {}\n');
  // An empty CARGO_HOME: no index cached, so only the network could answer, and offline it may not ask.
  const { r, out } = attempt('cargo', ['generate-lockfile'], { cwd: dir, env: { CARGO_HOME: join(work, 'cargo-home') } });
  t.not(r.status, 0, 'refused');
  t.match(out, /offline/, `by its configuration (CARGO_NET_OFFLINE), and it says so: ${out.slice(0, 300)}`);
  t.notOk(existsSync(join(dir, 'Cargo.lock')), 'no lock file: nothing was resolved');
});
