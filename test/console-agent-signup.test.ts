/**
 * /signup?agent=1 in real Chromium, as an agent driving a browser uses it, at 390 and 1280 px: the
 * page tells it what to do; one click makes an anonymous account and its REST key, shown on the key
 * page (`#new-key`) with what to do next; the MCP key page follows in agent mode. Under the console's
 * CSP (a violation is a console error, which fails), with no page scrolling sideways.
 * Screenshots: test-output/screenshots/agent-signup-<width>-<step>.png.
 */
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { consoleInChromium } from './helpers/console-browser.js';
import { TEST_OUTPUT_DIR } from './helpers/shared.js';

const SHOTS = join(TEST_OUTPUT_DIR, 'screenshots');
mkdirSync(SHOTS, { recursive: true });

const { store, app, base, browser } = await consoleInChromium(t, 'agent-signup', {
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
  FACECOMPUTE_FREE_CALLS_ANONYMOUS: '17',
});

async function fits(page: Page): Promise<string> {
  return page.evaluate(() => {
    const doc = document.documentElement;
    return doc.scrollWidth > innerWidth ? `scrollWidth ${doc.scrollWidth} > ${innerWidth}` : 'fits';
  });
}

for (const vp of [{ width: 390, height: 844, isMobile: true }, { width: 1280, height: 900, isMobile: false }]) {
  t.test(`${vp.width} px: one click to an account and a key, then the MCP key`, async (t) => {
    const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height }, isMobile: vp.isMobile, hasTouch: vp.isMobile });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.on('pageerror', (err) => t.fail(`page error: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') t.fail(`console error (a CSP violation is one): ${msg.text()}`);
    });
    const shot = (step: string) => page.screenshot({ path: join(SHOTS, `agent-signup-${vp.width}-${step}.png`), fullPage: true });

    const res = await page.goto(`${base}/signup?agent=1`);
    t.equal(res?.status(), 200);
    t.match(res?.headers()['content-security-policy'], /script-src 'nonce-/, 'under the console CSP');
    const steps = page.getByTestId('agent-instructions');
    t.match(await steps.innerText(), /Click the button Create an anonymous account and API key/);
    t.match(await steps.innerText(), /17 free calls/, 'the configured allowance');
    t.match(await steps.innerText(), /https:\/\/api\.facecompute\.example\/verify/, "the deployment's gateway");
    t.equal(await fits(page), 'fits');
    await shot('1-signup');

    // One click: the account, its session and a REST key.
    await page.getByRole('button', { name: 'Create an anonymous account and API key' }).click();
    await page.waitForURL(`${base}/keys?agent=1`);
    const key = (await page.getByTestId('new-key').innerText()).trim();
    t.match(key, /^fc_live_/, 'the REST key is shown');
    const rest = await store.authenticate(key, 'rest');
    t.match(await store.getAccount(rest.accountId), { tier: 'anonymous', free_calls: { total: 17, used: 0 } }, 'an anonymous account holds it');
    t.match(await page.getByTestId('agent-instructions').innerText(), /Your API key is the text of the element with id new-key/);
    t.equal(await fits(page), 'fits');
    await shot('2-keys');

    // Reloading does not show the key again (it is shown once).
    await page.reload();
    t.equal(await page.getByTestId('new-key').count(), 0, 'shown once');

    await page.getByTestId('agent-next').click();
    await page.waitForURL(`${base}/mcp?agent=1`);
    t.match(await page.getByTestId('agent-instructions').innerText(), /Type a name in the Name field/);
    await page.getByLabel('Name', { exact: true }).fill('agent-mcp');
    await page.getByRole('button', { name: 'Create MCP key' }).click();
    await page.waitForURL(`${base}/mcp?agent=1`);
    const mcpKey = (await page.getByTestId('new-key').innerText()).trim();
    t.match(mcpKey, /^fc_mcp_/, 'the MCP key is shown');
    t.equal((await store.authenticate(mcpKey, 'mcp')).accountId, rest.accountId, 'of the same account');
    t.match(await page.getByTestId('agent-instructions').innerText(), /Your MCP key is the text of the element with id new-key/, 'still in agent mode');
    t.match(await page.locator('#cfg-claude-code').innerText(), mcpKey, 'the client configuration has it filled in');
    t.equal(await fits(page), 'fits');
    await shot('3-mcp');
  });
}

t.test('without ?agent=1 the signup page is the people\'s', async (t) => {
  const res = await app.inject({ url: '/signup' });
  t.notMatch(res.body, /agent-instructions/);
  const agent = await app.inject({ url: '/signup?agent=1' });
  t.match(agent.body, /data-testid="agent-instructions"/);
});
