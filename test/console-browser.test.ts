/**
 * The console in real Chromium: sign up, keys shown once, revocation, MCP keys and client
 * configuration, and the anonymous-to-account upgrade. Screenshots go to test-output/screenshots/.
 *
 * Whether a key is accepted is asked through test/helpers/key-check.ts: AccountsPort.authenticate by
 * default, or a real gateway (FACECOMPUTE_TEST_GATEWAY_URL) sharing FACECOMPUTE_TEST_BROWSER_DATA_DIR.
 */
import t from 'tap';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { mailedToken } from './helpers/verify-email.js';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';
import { buildGateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { launchChromiumOrFail } from './helpers/browser.js';
import { TEST_OUTPUT_DIR } from './helpers/shared.js';
import { createKeyCheck } from './helpers/key-check.js';

const SHOTS = join(TEST_OUTPUT_DIR, 'screenshots');
mkdirSync(SHOTS, { recursive: true });

const config = loadConfig({
  FACECOMPUTE_DATA_DIR: process.env['FACECOMPUTE_TEST_BROWSER_DATA_DIR'] ?? mkdtempSync(join(tmpdir(), 'fc-browser-')),
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
  FACECOMPUTE_LOG_LEVEL: 'silent',
});
const store = await createAccountsStore(config);
const app = await buildConsole({ config, store });
// The real gateway on the same store decides whether a key is accepted (a compute call without a
// model server still says 401 for a refused key before anything else).
const gateway = await buildGateway({ config: { ...config, modelServerUrls: ['http://127.0.0.1:9'] }, accounts: store, logger: createLogger('test', 'silent') });
await gateway.app.listen({ host: '127.0.0.1', port: 0 });
const keys = createKeyCheck(store, `http://127.0.0.1:${(gateway.app.server.address() as { port: number }).port}`);
t.comment(`key acceptance checked via ${keys.via}`);
const restKeyAccepted = (key: string) => keys.accepted(key, 'rest');
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
const browser: Browser = await launchChromiumOrFail(t, async () => {
  await app.close();
  await store.close();
});
t.teardown(async () => {
  await browser.close();
  await gateway.close(500);
  await app.close();
  await store.close();
});

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  const page = await context.newPage();
  page.on('pageerror', (err) => t.fail(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // Form errors are answered with their status (409, 402, …), which Chromium reports; a 404 or a
    // 5xx would be a missing asset or a bug.
    const expected = /status of 4(0[0-35-9]|[1-9]\d) /.test(msg.text());
    if (msg.type() === 'error' && !expected) t.fail(`console error: ${msg.text()}`);
  });
  return page;
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Every visible form control has a label. */
async function allLabelled(page: Page): Promise<string[]> {
  return page.$$eval('input:not([type=hidden]), select, textarea', (els) =>
    els.filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label')).map((el) => el.outerHTML),
  );
}

t.test('sign up, create a named key, see it once, reload, revoke', async (t) => {
  const page = await newPage();
  await page.goto(`${base}/signup`);
  await shot(page, '01-signup');
  t.same(await allLabelled(page), []);
  await page.getByLabel('Email', { exact: true }).fill('browser@example.com');
  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${base}/account`);
  t.equal(await page.getByTestId('tier').textContent(), 'Account');
  t.equal(await page.getByTestId('calls-total').textContent(), '10', 'the anonymous allowance until the email is verified');
  // The link of the verification mail (the file mailer's outbox), followed in the browser.
  await page.goto(`${base}/verify-email?token=${mailedToken(config.dataDir, 'browser@example.com')}`);
  await page.getByRole('status').filter({ hasText: 'is verified' }).waitFor();
  await page.goto(`${base}/account`);
  t.equal(await page.getByTestId('calls-total').textContent(), '50');
  t.equal(await page.getByTestId('calls-remaining').textContent(), '50');
  await shot(page, '02-account');

  await page.getByRole('link', { name: 'API keys' }).click();
  await page.waitForURL(`${base}/keys`);
  await page.getByLabel('Name', { exact: true }).fill('laptop');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  t.match(key, /^fc_live_[A-Za-z0-9_-]{43}$/);
  await page.getByRole('button', { name: 'Copy', exact: true }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  t.equal(await page.evaluate(() => navigator.clipboard.readText()), key, 'the copy button copies the key');
  await shot(page, '03-keys-created');
  t.ok(await restKeyAccepted(key), 'the new key is accepted');

  // The browser's own reload: post/redirect/get left a GET to repeat, not the form.
  t.equal(page.url(), `${base}/keys`, 'the form answered with a redirect to the page');
  await page.reload();
  const html = await page.content();
  t.notOk(html.includes(key), 'after a reload the key is not shown');
  t.equal(await page.locator('tr', { hasText: 'laptop' }).count(), 1, 'and no second key was created');
  const owned = await store.db.selectFrom('api_keys').innerJoin('accounts', 'accounts.id', 'api_keys.account_id').select('api_keys.id').where('accounts.email', '=', 'browser@example.com').execute();
  t.equal(owned.length, 1, 'one key in the store');
  t.ok(html.includes(key.slice(0, 16)), 'its prefix is');
  const row = page.locator('tr', { hasText: 'laptop' });
  t.equal((await row.locator('code').textContent())!.trim(), `${key.slice(0, 16)}…`);
  await shot(page, '04-keys-list');

  await row.getByRole('button', { name: 'Revoke key laptop' }).click();
  await page.waitForURL(`${base}/keys`);
  await page.locator('tr', { hasText: 'laptop' }).locator('.badge.revoked').waitFor();
  t.notOk(await restKeyAccepted(key), 'the revoked key is refused');
  await shot(page, '05-keys-revoked');

  // Keyboard: the create form can be reached and submitted without a mouse.
  await page.getByLabel('Name', { exact: true }).focus();
  await page.keyboard.type('keyboard');
  await page.keyboard.press('Enter');
  await page.getByTestId('new-key').waitFor();
  t.pass('created with the keyboard');
});

t.test('MCP page: create an MCP key and copy a client configuration', async (t) => {
  const page = await newPage();
  await page.goto(`${base}/signin`);
  await page.getByLabel('Email', { exact: true }).fill('browser@example.com');
  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/account`);
  await page.getByRole('link', { name: 'MCP' }).click();
  await page.waitForURL(`${base}/mcp`);
  t.match(await page.locator('#cfg-cursor').textContent(), '<MCP_KEY>');
  await page.getByLabel('Name', { exact: true }).fill('claude');
  await page.getByRole('button', { name: 'Create MCP key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  t.match(key, /^fc_mcp_/);
  const cursor = JSON.parse((await page.locator('#cfg-cursor').textContent())!);
  t.same(cursor, { mcpServers: { facecompute: { url: 'https://mcp.facecompute.example/mcp', headers: { Authorization: `Bearer ${key}` } } } });
  t.match(await page.locator('#cfg-claude-code').textContent(), `claude mcp add --transport http facecompute https://mcp.facecompute.example/mcp --header "Authorization: Bearer ${key}"`);
  t.match(await page.locator('#cfg-claude-desktop').textContent(), key);
  await page.getByRole('button', { name: 'Copy the Cursor configuration' }).click();
  t.same(JSON.parse(await page.evaluate(() => navigator.clipboard.readText())), cursor);
  await shot(page, '06-mcp-created');
  t.ok(await keys.accepted(key, 'mcp'), 'the MCP key is accepted on MCP');
  t.notOk(await restKeyAccepted(key), 'an MCP key is refused on REST');
  await page.goto(`${base}/mcp`);
  t.notOk((await page.content()).includes(key));
  await shot(page, '07-mcp-list');
});

t.test('anonymous account, then upgrade with email and password, then a card', async (t) => {
  const page = await newPage();
  await page.goto(`${base}/signup`);
  await page.getByRole('button', { name: 'Continue without an email' }).click();
  await page.waitForURL(`${base}/keys`);
  await page.getByLabel('Name', { exact: true }).fill('agent');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const key = (await page.getByTestId('new-key').textContent())!.trim();
  await page.getByLabel('Name', { exact: true }).fill('second');
  await page.getByRole('button', { name: 'Create API key' }).click();
  await page.getByRole('alert').waitFor();
  t.match(await page.getByRole('alert').textContent(), /1 active REST key/);
  await shot(page, '08-anonymous-key-limit');

  await page.getByRole('link', { name: 'Account' }).click();
  t.equal(await page.getByTestId('tier').textContent(), 'Anonymous agent');
  t.equal(await page.getByTestId('calls-total').textContent(), '10');
  await shot(page, '09-anonymous-account');
  await page.getByLabel('Email', { exact: true }).fill('upgraded@example.com');
  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByRole('button', { name: 'Upgrade account' }).click();
  await page.getByRole('status').filter({ hasText: 'keys and usage are kept' }).waitFor();
  t.equal(await page.getByTestId('tier').textContent(), 'Account');
  t.equal(await page.getByTestId('calls-total').textContent(), '10');
  await page.goto(`${base}/verify-email?token=${mailedToken(config.dataDir, 'upgraded@example.com')}`);
  await page.getByRole('status').filter({ hasText: 'is verified' }).waitFor();
  await page.goto(`${base}/account`);
  t.equal(await page.getByTestId('calls-total').textContent(), '50');
  await shot(page, '10-upgraded');

  await page.getByLabel('Payment-method token', { exact: true }).fill('pm_card_chargeDeclined');
  await page.getByRole('button', { name: 'Save card' }).click();
  t.match(await page.getByRole('alert').textContent(), /declined/);
  await page.getByLabel('Payment-method token', { exact: true }).fill('pm_card_visa');
  await page.getByRole('button', { name: 'Save card' }).click();
  await page.getByRole('status').filter({ hasText: 'Card saved' }).waitFor();
  t.equal(await page.getByTestId('calls-total').textContent(), '100');
  t.match(await page.locator('#card-h + p').textContent(), /visa ending in 4242/);
  await shot(page, '11-card');

  await page.getByRole('link', { name: 'API keys' }).click();
  t.ok((await page.content()).includes(key.slice(0, 16)), 'the anonymous key is kept');
  t.ok(await restKeyAccepted(key));

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${base}/signin`);
  await page.getByLabel('Email', { exact: true }).fill('upgraded@example.com');
  await page.getByLabel('Password', { exact: true }).fill('wrong password!!');
  await page.getByRole('button', { name: 'Sign in' }).click();
  t.match(await page.getByRole('alert').textContent(), /email or password is wrong/);
  await shot(page, '12-signin-error');
});

t.test('keyboard focus is visible, and the pages fit a phone', async (t) => {
  const page = await newPage();
  await page.goto(`${base}/signin`);
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content', 'the first stop skips the navigation');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
  t.equal(outline, 'solid', 'focused links show an outline');
  await shot(page, '13-keyboard-focus');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/signup`);
  await page.getByRole('button', { name: 'Continue without an email' }).click();
  await page.waitForURL(`${base}/keys`);
  await page.getByLabel('Name', { exact: true }).fill('phone');
  await page.getByRole('button', { name: 'Create API key' }).click();
  await page.getByTestId('new-key').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 0, `no horizontal page scroll on a phone (${overflow}px)`);
  await shot(page, '14-phone-keys');
});
