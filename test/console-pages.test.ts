import t from 'tap';
import { verifyEmailOf } from './helpers/verify-email.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';

function cookies(res: { headers: Record<string, unknown> }): Record<string, string> {
  const raw = res.headers['set-cookie'];
  const list = Array.isArray(raw) ? raw : raw ? [String(raw)] : [];
  return Object.fromEntries(list.map((c: string) => [c.split('=')[0]!, c]));
}
const value = (setCookie: string) => setCookie.split(';')[0]!.split('=').slice(1).join('=');
const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1]!;

async function setup(t: any, env: Record<string, string> = {}) {
  const config = loadConfig({ FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-pages-')), ...env });
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  return { app, store };
}

t.test('forms need the CSRF token; sessions are httpOnly SameSite=Lax cookies', async (t) => {
  const { app } = await setup(t);
  const page = await app.inject({ url: '/signup' });
  t.equal(page.statusCode, 200);
  const csrfCookie = cookies(page)['fc_csrf']!;
  t.match(csrfCookie, /HttpOnly/);
  t.match(csrfCookie, /SameSite=Lax/);
  t.notMatch(csrfCookie, /Secure/, 'not Secure on loopback with auto');
  const token = csrfOf(page.body);
  t.equal(token, value(csrfCookie));

  const form = (body: Record<string, string>, cookie: string) =>
    app.inject({ method: 'POST', url: '/signup', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, payload: new URLSearchParams(body).toString() });
  const noToken = await form({ email: 'p@example.com', password: 'correct horse battery' }, `fc_csrf=${token}`);
  t.equal(noToken.statusCode, 403);
  t.match(noToken.body, /reload the page/);
  const wrong = await form({ email: 'p@example.com', password: 'correct horse battery', _csrf: 'x'.repeat(43) }, `fc_csrf=${token}`);
  t.equal(wrong.statusCode, 403);
  const ok = await form({ email: 'p@example.com', password: 'correct horse battery', _csrf: token }, `fc_csrf=${token}`);
  t.equal(ok.statusCode, 303);
  t.equal(ok.headers.location, '/account');
  const session = cookies(ok)['fc_session']!;
  t.match(session, /^fc_session=fc_sess_/);
  t.match(session, /HttpOnly/);
  t.match(session, /SameSite=Lax/);
  t.match(session, /Path=\//);

  const acct = await app.inject({ url: '/account', headers: { cookie: `fc_csrf=${token}; fc_session=${value(session)}` } });
  t.equal(acct.statusCode, 200);
  t.match(acct.body, 'p@example.com');
  t.match(acct.body, /A call is used only when compute ran[^<]*Requests refused before compute[^<]*cost nothing/, 'the fair-credit rule where the allowance is shown');
  const csp = String(acct.headers['content-security-policy']);
  const nonce = /script-src 'nonce-([^']+)'/.exec(csp)![1]!;
  t.match(acct.body, `<script nonce="${nonce}">`);
  t.match(csp, /default-src 'none'/);
  t.notMatch(acct.body, /https?:\/\/(?!127\.0\.0\.1)[^"'\s<]*\.(css|js|woff2?)/, 'no external assets');

  const anon = await app.inject({ url: '/account' });
  t.equal(anon.statusCode, 303);
  t.equal(anon.headers.location, '/signin');
});

t.test('a stale form in a browser gets an HTML error page; the API stays JSON', async (t) => {
  const { app, store } = await setup(t);
  const { session_token } = await store.signup('stale@example.com', 'correct horse battery');
  const res = await app.inject({
    method: 'POST',
    url: '/keys',
    headers: { cookie: `fc_session=${session_token}; fc_csrf=${'a'.repeat(43)}`, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=x&_csrf=' + 'b'.repeat(43),
  });
  t.equal(res.statusCode, 403);
  t.match(res.headers['content-type'], /^text\/html/);
  t.match(res.body, /reload the page/);
  const api = await app.inject({ method: 'POST', url: '/api/keys', headers: { cookie: `fc_session=${session_token}`, accept: 'text/html' }, payload: { name: 'x' } });
  t.equal(api.statusCode, 403);
  t.equal(api.json().error, 'csrf_failed');
});

t.test('FACECOMPUTE_COOKIE_SECURE=auto is Secure exactly when the public console URL is https', async (t) => {
  const { secureCookies } = await import('../src/console/app.js');
  t.equal(secureCookies(loadConfig({ FACECOMPUTE_HOST: '127.0.0.1' })), false, 'the default http://127.0.0.1:8082');
  // Behind a TLS-terminating proxy the console binds loopback or 0.0.0.0 over plain HTTP: the public URL decides.
  t.equal(secureCookies(loadConfig({ FACECOMPUTE_HOST: '127.0.0.1', FACECOMPUTE_PUBLIC_CONSOLE_URL: 'https://console.example' })), true, 'loopback behind an https proxy');
  t.equal(secureCookies(loadConfig({ FACECOMPUTE_HOST: '0.0.0.0' })), false, 'a plain-HTTP console on every address (the browser would drop a Secure cookie)');
  t.equal(secureCookies(loadConfig({ FACECOMPUTE_HOST: '0.0.0.0', FACECOMPUTE_PUBLIC_CONSOLE_URL: 'https://console.example', FACECOMPUTE_COOKIE_SECURE: 'false' })), false);
  t.equal(secureCookies(loadConfig({ FACECOMPUTE_HOST: '127.0.0.1', FACECOMPUTE_COOKIE_SECURE: 'true' })), true);
});

t.test('behind a trusted proxy the signup limit counts X-Forwarded-For; otherwise the socket address', async (t) => {
  const signup = (app: any, xff: string) => app.inject({ method: 'POST', url: '/api/signup/anonymous', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': xff } });
  const trusting = await setup(t, { FACECOMPUTE_TRUSTED_PROXIES: '127.0.0.1', FACECOMPUTE_SIGNUP_RATE_LIMIT: '1' });
  t.equal((await signup(trusting.app, '198.51.100.20')).statusCode, 201);
  t.equal((await signup(trusting.app, '198.51.100.21')).statusCode, 201, 'another client behind the proxy');
  t.equal((await signup(trusting.app, '198.51.100.20')).statusCode, 429);
  const plain = await setup(t, { FACECOMPUTE_SIGNUP_RATE_LIMIT: '1' });
  t.equal((await signup(plain.app, '198.51.100.20')).statusCode, 201);
  t.equal((await signup(plain.app, '198.51.100.21')).statusCode, 429, 'a forged header is not believed');
});

t.test('Secure cookies when configured', async (t) => {
  const { app } = await setup(t, { FACECOMPUTE_COOKIE_SECURE: 'true' });
  const set = cookies(await app.inject({ url: '/signin' }))['__Host-fc_csrf']!;
  t.match(set, /Secure/);
  t.match(set, /Path=\//);
  t.notMatch(set, /Domain=/);
  const csrf = value(set);
  const ok = await app.inject({
    method: 'POST',
    url: '/signup',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `__Host-fc_csrf=${csrf}` },
    payload: new URLSearchParams({ email: 'secure@example.com', password: 'correct horse battery', _csrf: csrf }).toString(),
  });
  t.equal(ok.statusCode, 303);
  const session = cookies(ok)['__Host-fc_session']!;
  t.match(session, /Secure/);
  t.equal((await app.inject({ url: '/account', headers: { cookie: `__Host-fc_session=${value(session)}` } })).statusCode, 200);
  t.equal((await app.inject({ url: '/account', headers: { cookie: `fc_session=${value(session)}` } })).statusCode, 303, 'the unprefixed name is not read');
});

t.test('user text is escaped in pages', async (t) => {
  const { app, store } = await setup(t);
  const { session_token } = await store.signup('x@example.com', 'correct horse battery');
  await store.createKey((await store.sessionAccount(session_token))!, 'rest', '<script>alert(1)</script>');
  const res = await app.inject({ url: '/keys', headers: { cookie: `fc_session=${session_token}` } });
  t.notMatch(res.body, '<script>alert(1)</script>');
  t.match(res.body, '&lt;script&gt;alert(1)&lt;/script&gt;');
});

t.test('the free-call numbers shown are the configured ones, not the defaults', async (t) => {
  const { app, store } = await setup(t, { FACECOMPUTE_FREE_CALLS_ANONYMOUS: '7', FACECOMPUTE_FREE_CALLS_ACCOUNT: '33', FACECOMPUTE_FREE_CALLS_CARD: '77' });
  const signup = await app.inject({ url: '/signup' });
  t.match(signup.body, /data-testid="signup-calls">Active at once, with 7 free calls until you follow the link we mail you, then 33 free calls in total\. Add a card later for 77 in total\./);
  t.match(signup.body, /data-testid="anonymous-calls">An anonymous account with 7 free calls and one API key/);
  t.notMatch(signup.body, /\b(50|100|10) free calls|for 100\b/, 'no default number on the page');

  const anon = await store.signupAnonymous('192.0.2.9');
  const page = await app.inject({ url: '/account', headers: { cookie: `fc_session=${anon.session_token}` } });
  t.match(page.body, /real one with 33 free calls in total/);
  t.match(page.body, /data-testid="calls-total">7</);
  const account = await store.signup('numbers@example.com', 'correct horse battery');
  const unverified = await app.inject({ url: '/account', headers: { cookie: `fc_session=${account.session_token}` } });
  t.match(unverified.body, /Until it is followed the account has 7 free calls in total and one key of each kind; verified, 33 free calls/);
  await verifyEmailOf(store, account.account.id);
  const page2 = await app.inject({ url: '/account', headers: { cookie: `fc_session=${account.session_token}` } });
  t.match(page2.body, /raises your free calls to 77 in total/);
  t.notMatch(page2.body, /\b(50|100) (free calls|in total)/);

  // The refusal that tells a caller how to get more names the configured totals too.
  for (let i = 0; i < 7; i++) await store.consume(anon.account.id);
  const e = await store.consume(anon.account.id).catch((err: { detail: string }) => err);
  t.match((e as { detail: string }).detail, /all 7 free calls of this account are used; add and verify an email \(33 in total\), then a card \(77 in total\)/);
  for (let i = 0; i < 33; i++) await store.consume(account.account.id);
  const e2 = await store.consume(account.account.id).catch((err: { detail: string }) => err);
  t.match((e2 as { detail: string }).detail, /save a card in the console \(77 in total\)/);
});

t.test('creating a key is post/redirect/get: the key is shown once, a reload creates nothing', async (t) => {
  const { app, store } = await setup(t);
  const { session_token } = await store.signup('prg@example.com', 'correct horse battery');
  const id = (await store.sessionAccount(session_token))!;
  const csrf = 'c'.repeat(43);
  const jar = `fc_session=${session_token}; fc_csrf=${csrf}`;
  for (const [form, page, kind, prefix] of [['/keys', '/keys', 'rest', 'fc_live_'], ['/mcp/keys', '/mcp', 'mcp', 'fc_mcp_']] as const) {
    const post = await app.inject({ method: 'POST', url: form, headers: { cookie: jar, 'content-type': 'application/x-www-form-urlencoded' }, payload: `name=laptop&_csrf=${csrf}` });
    t.equal(post.statusCode, 303, `${form}: the form answers with a redirect`);
    t.equal(post.headers.location, page);
    t.notMatch(post.body, prefix, 'the key is not in the POST answer');
    const flash = cookies(post)['fc_flash']!;
    t.match(flash, /HttpOnly/);
    t.match(flash, /SameSite=Strict/);
    t.match(flash, /Max-Age=120/);
    const keys = await store.listKeys(id, kind);
    t.equal(keys.length, 1, 'one key created');
    const sealed = value(flash);
    t.notMatch(Buffer.from(sealed, 'base64url').toString('latin1'), prefix, 'the cookie does not hold the key in the clear');

    const shown = await app.inject({ url: page, headers: { cookie: `${jar}; fc_flash=${sealed}` } });
    t.equal(shown.statusCode, 200);
    const key = /data-testid="new-key">([^<]+)</.exec(shown.body)?.[1];
    t.match(key, new RegExp(`^${prefix}[A-Za-z0-9_-]{43}$`), 'the new key is shown on the page the redirect leads to');
    t.ok(key!.startsWith(keys[0]!.prefix), "the key listed");
    t.match(String(cookies(shown)['fc_flash']), /fc_flash=;.*Expires=Thu, 01 Jan 1970/, 'and the flash is cleared');

    // The browser reloads: it sends the page's GET again, now without the flash.
    const reload = await app.inject({ url: page, headers: { cookie: jar } });
    t.notMatch(reload.body, key!, 'a reload does not show the key again');
    t.equal((await store.listKeys(id, kind)).length, 1, 'and creates no second key');

    // Another session cannot read the flash, nor can a tampered one show anything.
    const other = await store.signup(`other-${kind}@example.com`, 'correct horse battery');
    const stolen = await app.inject({ url: page, headers: { cookie: `fc_session=${other.session_token}; fc_flash=${sealed}` } });
    t.equal(stolen.statusCode, 200);
    t.notMatch(stolen.body, key!, "another session's page does not open the flash");
    const bytes = Buffer.from(sealed, 'base64url');
    bytes[20] = bytes[20]! ^ 1;
    const tampered = await app.inject({ url: page, headers: { cookie: `${jar}; fc_flash=${bytes.toString('base64url')}` } });
    t.notMatch(tampered.body, 'data-testid="new-key"');
  }

  // A refused form stays a page with its message and status (nothing was created to show).
  const anon = await store.signupAnonymous('192.0.2.50');
  const anonJar = `fc_session=${anon.session_token}; fc_csrf=${csrf}`;
  const first = await app.inject({ method: 'POST', url: '/keys', headers: { cookie: anonJar, 'content-type': 'application/x-www-form-urlencoded' }, payload: `name=a&_csrf=${csrf}` });
  t.equal(first.statusCode, 303);
  const second = await app.inject({ method: 'POST', url: '/keys', headers: { cookie: anonJar, 'content-type': 'application/x-www-form-urlencoded' }, payload: `name=b&_csrf=${csrf}` });
  t.equal(second.statusCode, 409);
  t.match(second.body, /1 active REST key/);
});

t.test('upgrade and card forms redirect too, with their notice shown once', async (t) => {
  const { app, store } = await setup(t);
  const anon = await store.signupAnonymous('192.0.2.51');
  const csrf = 'd'.repeat(43);
  const jar = `fc_session=${anon.session_token}; fc_csrf=${csrf}`;
  const post = (url: string, body: Record<string, string>) =>
    app.inject({ method: 'POST', url, headers: { cookie: jar, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ ...body, _csrf: csrf }).toString() });
  const up = await post('/account/upgrade', { email: 'prg-up@example.com', password: 'correct horse battery' });
  t.equal(up.statusCode, 303);
  t.equal(up.headers.location, '/account');
  const page = await app.inject({ url: '/account', headers: { cookie: `${jar}; fc_flash=${value(cookies(up)['fc_flash']!)}` } });
  t.match(page.body, 'your keys and usage are kept.');
  t.notMatch((await app.inject({ url: '/account', headers: { cookie: jar } })).body, 'your keys and usage are kept.', 'once');
  await verifyEmailOf(store, anon.account.id);
  const card = await post('/account/card', { payment_method: 'pm_card_visa' });
  t.equal(card.statusCode, 303);
  const cardPage = await app.inject({ url: '/account', headers: { cookie: `${jar}; fc_flash=${value(cookies(card)['fc_flash']!)}` } });
  t.match(cardPage.body, 'Card saved.');
  const declined = await post('/account/card', { payment_method: 'pm_card_chargeDeclined' });
  t.equal(declined.statusCode, 402, 'a refused form answers with its page and status');
  t.match(declined.body, /declined/);
});
