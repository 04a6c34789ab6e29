/**
 * Every console page in real Chromium at a phone's width (390 px, mobile emulation) and a laptop's
 * (1280 px), signed out and signed in, with the longest values a user can give (a 100-character key
 * name, a long email): no page scrolls sideways (`scrollWidth <= innerWidth`), the header spans the
 * width, nothing spills out of its card, and nothing is hidden in a sideways-scrolling box. The
 * screenshots (test-output/screenshots/layout-*.png) are there to be looked at.
 */
import t from 'tap';
import { verifyEmailOf } from './helpers/verify-email.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { consoleInChromium } from './helpers/console-browser.js';
import { TEST_OUTPUT_DIR } from './helpers/shared.js';
import { UsageRecorder } from '../src/accounts/usage/recorder.js';
import { layoutProblems } from './helpers/layout.js';

const SHOTS = join(TEST_OUTPUT_DIR, 'screenshots');
mkdirSync(SHOTS, { recursive: true });

// Long unbroken runs, as real addresses can have (dots are no line-break opportunity); a valid
// address (labels of at most 63 characters), or the browser would not submit the form.
const LONG_EMAIL = `firstname.middlename.lastname.departmentofresearch@${'mail.subdomain.'.repeat(4)}example-organisation-with-a-long-name.example`;
const LONG_NAME = 'billing-service-production-eu-west-1-'.repeat(3).slice(0, 100);
const PASSWORD = 'correct horse battery';

const { store, base, browser } = await consoleInChromium(t, 'layout', {
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
  FACECOMPUTE_SIGNUP_RATE_LIMIT: '100',
});

// A real account with the longest values, keys listed (live and revoked), and a card.
const long = await store.signup(LONG_EMAIL, PASSWORD);
const longId = long.account.id;
await verifyEmailOf(store, longId);
const longKey = await store.createKey(longId, 'rest', LONG_NAME);
const revoked = await store.createKey(longId, 'rest', `${LONG_NAME.slice(0, 60)} old`);
await store.revokeKey(longId, 'rest', revoked.id);
await store.createKey(longId, 'rest', 'laptop');
const longMcp = await store.createKey(longId, 'mcp', LONG_NAME);
// A full Usage page: 30 days of calls on every key, MCP tools, errors, and the 100 recent requests.
const recorder = new UsageRecorder(store.db, { retentionDays: 31, flushMs: 60_000 });
for (let i = 0; i < 240; i++) {
  const mcp = i % 5 === 0;
  const failed = i % 7 === 0;
  recorder.record({
    accountId: longId,
    keyId: mcp ? longMcp.id : i % 3 === 0 ? revoked.id : longKey.id,
    surface: mcp ? 'mcp' : 'rest',
    route: mcp ? 'verify_faces' : ['/verify', '/represent', '/compare'][i % 3]!,
    status: failed ? 400 : 200,
    error: failed ? 'embedding_dimension_mismatch' : null,
    outcome: failed ? 'not_charged' : i % 11 === 0 ? 'refunded' : 'charged',
    durationMs: 1234.5 + i,
    requestId: crypto.randomUUID(),
    at: Date.now() - (239 - i) * 3 * 3600_000,
  });
}
await recorder.close();
const carded = await store.signup(`card.${LONG_EMAIL.slice(5)}`, PASSWORD);
await verifyEmailOf(store, carded.account.id);
await store.saveCard(carded.account.id, 'pm_card_visa');

const VIEWPORTS = [
  { label: 'phone', width: 390, height: 844, isMobile: true },
  { label: 'laptop', width: 1280, height: 900, isMobile: false },
] as const;

type Session = 'none' | 'long' | 'card' | 'anonymous';

interface Scenario {
  name: string;
  session: Session;
  /** Brings the page to the state to check; returns whether it is an HTML page of ours. */
  open(page: Page): Promise<void>;
  html?: boolean;
}

const scenarios: Scenario[] = [
  { name: 'signin', session: 'none', open: (p) => go(p, '/signin') },
  {
    name: 'signin-error',
    session: 'none',
    async open(p) {
      await go(p, '/signin');
      await p.getByLabel('Email', { exact: true }).fill(LONG_EMAIL);
      await p.getByLabel('Password', { exact: true }).fill('wrong password!!');
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('alert').waitFor();
    },
  },
  { name: 'signup', session: 'none', open: (p) => go(p, '/signup') },
  {
    name: 'signup-error',
    session: 'none',
    async open(p) {
      await go(p, '/signup');
      await p.getByLabel('Email', { exact: true }).fill(LONG_EMAIL);
      await p.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await p.getByRole('button', { name: 'Create account' }).click();
      await p.getByRole('alert').waitFor();
    },
  },
  { name: 'signup-agent', session: 'none', open: (p) => go(p, '/signup?agent=1') },
  {
    name: 'keys-agent',
    session: 'none',
    async open(p) {
      await go(p, '/signup?agent=1');
      await p.getByRole('button', { name: 'Create an anonymous account and API key' }).click();
      await p.getByTestId('new-key').waitFor();
    },
  },
  { name: 'not-found', session: 'none', open: (p) => go(p, '/no/such/page', 404) },
  { name: 'llms-txt', session: 'none', open: (p) => go(p, '/llms.txt'), html: false },
  { name: 'skill-md', session: 'none', open: (p) => go(p, '/skill.md'), html: false },
  { name: 'openapi-json', session: 'none', open: (p) => go(p, '/openapi.json'), html: false },
  { name: 'account-long', session: 'long', open: (p) => go(p, '/account') },
  { name: 'account-card', session: 'card', open: (p) => go(p, '/account') },
  { name: 'keys-long', session: 'long', open: (p) => go(p, '/keys') },
  {
    name: 'keys-created',
    session: 'long',
    async open(p) {
      await go(p, '/keys');
      await p.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await p.getByRole('button', { name: 'Create API key' }).click();
      await p.getByTestId('new-key').waitFor();
    },
  },
  {
    name: 'mcp-created',
    session: 'long',
    async open(p) {
      await go(p, '/mcp');
      await p.getByLabel('Name', { exact: true }).fill(LONG_NAME);
      await p.getByRole('button', { name: 'Create MCP key' }).click();
      await p.getByTestId('new-key').waitFor();
    },
  },
  { name: 'account-anonymous', session: 'anonymous', open: (p) => go(p, '/account') },
  {
    name: 'keys-anonymous-limit',
    session: 'anonymous',
    async open(p) {
      await go(p, '/keys');
      for (const n of ['agent', 'second']) {
        await p.getByLabel('Name', { exact: true }).fill(n);
        await p.getByRole('button', { name: 'Create API key' }).click();
        await p.waitForLoadState();
      }
      await p.getByRole('alert').waitFor();
    },
  },
  { name: 'mcp-empty', session: 'anonymous', open: (p) => go(p, '/mcp') },
  { name: 'usage-long', session: 'long', open: (p) => go(p, '/usage') },
  { name: 'usage-empty', session: 'anonymous', open: (p) => go(p, '/usage') },
];

async function go(page: Page, path: string, status = 200): Promise<void> {
  const res = await page.goto(`${base}${path}`);
  if (res?.status() !== status) throw new Error(`${path}: status ${res?.status()}, expected ${status}`);
}

async function signedIn(context: BrowserContext, session: Session): Promise<void> {
  if (session === 'none') return;
  const token = session === 'long' ? long.session_token : session === 'card' ? carded.session_token : (await store.signupAnonymous(`192.0.2.${Math.floor(Math.random() * 250)}`)).session_token;
  await context.addCookies([{ name: 'fc_session', value: token, url: base }]);
}

for (const vp of VIEWPORTS) {
  t.test(`${vp.label} (${vp.width} px): every page fits`, async (t) => {
    for (const s of scenarios) {
      const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height }, isMobile: vp.isMobile, hasTouch: vp.isMobile });
      try {
        await signedIn(context, s.session);
        const page = await context.newPage();
        page.on('pageerror', (err) => t.fail(`${s.name}: page error: ${err.message}`));
        await s.open(page);
        const html = s.html ?? true;
        if (html) {
          // A phone lays out a page without the viewport meta at 980 px and shrinks it unreadably.
          t.equal(await page.evaluate(() => innerWidth), vp.width, `${s.name}: laid out at the device width`);
        }
        const problems = await layoutProblems(page, html);
        t.same(problems, [], `${s.name} at ${vp.width} px: ${problems.length ? problems.slice(0, 5).map((p) => `${p.el}: ${p.what}`).join('; ') : 'fits'}`);
        // The OpenAPI document is thousands of lines: its first screen says enough.
        await page.screenshot({ path: join(SHOTS, `layout-${vp.width}-${s.name}.png`), fullPage: s.name !== 'openapi-json' });
      } catch (err) {
        t.fail(`${s.name}: ${(err as Error).message.split('\n')[0]}`);
      } finally {
        await context.close();
      }
    }
  });
}
