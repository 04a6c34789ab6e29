/**
 * The Try it page's server side (src/console/routes/try.ts), without a browser:
 * - signed out, /try redirects to sign-in; signed in, it names the gateway's public URL
 *   (FACECOMPUTE_PUBLIC_BASE_URL) and its CSP lets the page connect to the console and that origin only,
 *   run the console's script with the page's nonce, and nothing inline without it;
 * - the script is a static file served as JavaScript; the samples are the three shipped photos and
 *   nothing else (no path reaches beyond them).
 * test/console-try.test.ts runs the page in Chromium.
 */
import t from 'tap';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';
import { TRY_SCRIPT_PATH } from '../src/console/routes/try.js';
import { REPO_ROOT } from './helpers/shared.js';

const config = loadConfig({
  FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-try-page-')),
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example/',
  FACECOMPUTE_LOG_LEVEL: 'silent',
});
const store = await createAccountsStore(config);
const app = await buildConsole({ config, store });
t.teardown(async () => {
  await app.close();
  await store.close();
});

t.test('/try: sign-in first; then the gateway URL and a CSP that reaches it and nothing else', async (t) => {
  const out = await app.inject({ url: '/try' });
  t.equal(out.statusCode, 303);
  t.equal(out.headers.location, '/signin');

  const { session_token } = await store.signupAnonymous('127.0.0.1');
  const r = await app.inject({ url: '/try', cookies: { fc_session: session_token } });
  t.equal(r.statusCode, 200);
  t.match(r.body, 'data-gateway="https://api.facecompute.example"', 'the public base URL, without its trailing slash');
  const csp = Object.fromEntries(String(r.headers['content-security-policy']).split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]));
  t.same(csp['connect-src'], ["'self'", 'https://api.facecompute.example'], 'connects to the console and the gateway only');
  const nonce = /script-src 'nonce-([^']+)'/.exec(String(r.headers['content-security-policy']))![1]!;
  t.same(csp['script-src'], [`'nonce-${nonce}'`], 'scripts need the nonce: no inline script without it, no other origin');
  t.match(r.body, `<script src="/assets/try-it.js" nonce="${nonce}"></script>`);
  t.match(r.body, /<a href="\/try" aria-current="page">Try it<\/a>/, 'in the navigation');
  t.same(csp['img-src'], ["'self'", 'data:'], 'images from the console (samples) and data: URLs (uploads) only');
});

t.test('the script and the samples are static files; nothing else is served from there', async (t) => {
  const js = await app.inject({ url: '/assets/try-it.js' });
  t.equal(js.statusCode, 200);
  t.match(js.headers['content-type'], /^text\/javascript/);
  t.equal(js.body, readFileSync(TRY_SCRIPT_PATH, 'utf8'));
  for (const n of ['img1.jpg', 'img2.jpg', 'img3.jpg']) {
    const s = await app.inject({ url: `/samples/${n}` });
    t.equal(s.statusCode, 200, n);
    t.equal(s.headers['content-type'], 'image/jpeg');
    t.same(s.rawPayload, readFileSync(join(REPO_ROOT, 'samples', n)), `${n}: the shipped photo`);
  }
  for (const p of ['/samples/LICENSE', '/samples/README.md', '/samples/..%2Fpackage.json', '/samples/img4.jpg', '/assets/other.js']) {
    const s = await app.inject({ url: p });
    t.equal(s.statusCode, 404, `${p}: 404`);
  }
});
