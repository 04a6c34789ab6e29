/**
 * The console's documentation in real Chromium, offline: /docs/api renders the REST reference from
 * /openapi.json with Swagger UI served from node_modules (every request the page makes goes to the
 * console itself, and the strict nonce CSP reports no violation: either would fail here), lists every
 * operation, and does not overflow horizontally at 1280 and 390 px, collapsed or with /verify open.
 * The screenshots go to test-output/screenshots/ and are checked to be those widths; docs/images holds
 * copies of them for the docs. The rendered docs pages are checked the same way, and the "Docs" link
 * leads to them.
 */
import t from 'tap';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { consoleInChromium } from './helpers/console-browser.js';
import { TEST_OUTPUT_DIR } from './helpers/shared.js';

const SHOTS = join(TEST_OUTPUT_DIR, 'screenshots');
mkdirSync(SHOTS, { recursive: true });

const { base, browser } = await consoleInChromium(t, 'docs-browser');

/** A page at this width that fails the test on any console error, page error or request leaving the console. */
async function open(t: Tap.Test, width: number): Promise<{ page: Page; foreign: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const foreign: string[] = [];
  // Offline: anything not served by the console is refused here, and counted.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${base}/`) || url.startsWith('data:')) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => t.fail(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') t.fail(`console error (a CSP violation or a failed load): ${msg.text()}`);
  });
  return { page, foreign };
}

const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/** A PNG's width, from its IHDR chunk. */
const pngWidth = (path: string) => readFileSync(path).readUInt32BE(16);

const OPERATIONS = [
  ['POST', '/verify', 'verify'],
  ['POST', '/represent', 'represent'],
  ['POST', '/compare', 'compare'],
  ['GET', '/health', 'health'],
  ['GET', '/readiness', 'readiness'],
  ['GET', '/capabilities', 'capabilities'],
];

for (const width of [1280, 390]) {
  t.test(`/docs/api at ${width} px: every operation listed, no horizontal overflow, offline`, async (t) => {
    const { page, foreign } = await open(t, width);
    await page.goto(`${base}/docs/api`);
    await page.locator('.opblock').nth(OPERATIONS.length - 1).waitFor({ timeout: 60_000 });
    const listed = await page.$$eval('.opblock', (els) =>
      els.map((el) => [el.querySelector('.opblock-summary-method')?.textContent?.trim(), el.querySelector('.opblock-summary-path')?.textContent?.trim(), el.querySelector('.opblock-summary-operation-id')?.textContent?.trim()]),
    );
    t.same(listed.map((x) => x.join(' ')).sort(), OPERATIONS.map((x) => x.join(' ')).sort(), 'the six operations, with their operationIds');
    t.equal(await page.locator('.opblock-tag', { hasText: 'Compute' }).count(), 1, 'grouped under their tags');
    t.equal(await overflow(page), 0, 'no horizontal overflow');
    const collapsed = join(SHOTS, `docs-api-${width}.png`);
    await page.screenshot({ path: collapsed });
    t.equal(pngWidth(collapsed), width, `${collapsed} is ${width} px wide`);

    // Opened: parameters, the request body with its examples, the responses with their codes.
    await page.locator('.opblock-summary', { hasText: '/verify' }).first().click();
    await page.locator('.opblock-body').first().waitFor();
    await page.getByText('no_face_detected').first().waitFor();
    t.ok(await page.getByText('x-request-id').first().isVisible(), 'the request id header is documented');
    t.equal(await overflow(page), 0, 'no horizontal overflow with /verify open');
    const opened = join(SHOTS, `docs-api-verify-${width}.png`);
    await page.screenshot({ path: opened, fullPage: false });
    t.equal(pngWidth(opened), width);
    t.same(foreign, [], 'no request left the console');
    await page.context().close();
  });
}

t.test('the rendered docs pages: the Docs link, tables that scroll in their box, no overflow at 390 px', async (t) => {
  const { page, foreign } = await open(t, 390);
  await page.goto(`${base}/signin`);
  await page.getByRole('link', { name: 'Docs' }).click();
  await page.waitForURL(`${base}/docs/`);
  t.equal(await page.locator('article.doc h1').count(), 1, 'the Docs link opens the rendered index, not raw Markdown');
  for (const path of ['/docs/', '/docs/errors.md', '/docs/configuration.md']) {
    await page.goto(`${base}${path}`);
    t.equal(await overflow(page), 0, `${path}: no horizontal overflow`);
  }
  await page.goto(`${base}/docs/errors.md`);
  t.ok((await page.locator('.table-wrap table tbody tr').count()) >= 40, 'the error table is there');
  await page.screenshot({ path: join(SHOTS, 'docs-errors-390.png') });
  t.same(foreign, [], 'no request left the console');
  await page.context().close();
});
