/**
 * The console's "Try it" page in real Chromium, against a real gateway over a real model server
 * (Facenet; opencv and yunet), the console and the gateway on two loopback ports as under
 * `facecompute serve` (two origins: the page works through the gateway's CORS for the console only).
 *
 * - At 390 px (a phone) and 1280 px: sign up, open Try it from the navigation, make a key for the page,
 *   verify the sample pair; every face the API returned has a box drawn over the photo where the JSON
 *   puts it, scaled to the displayed size (within a pixel), the face /verify used is the highlighted
 *   one, eyes are marked; the thresholds shown are /capabilities' calibration; the page says how many
 *   calls the run spent and how many remain (the store's figures); nothing scrolls sideways.
 *   Screenshots: test-output/screenshots/try-it-{390,1280}.png (docs/images/ holds the committed copies).
 * - Two people in one photo against one of them: both faces boxed, the one /verify chose highlighted.
 * - Usage: the run's x-request-id appears on the Usage page.
 * The browser reaches nothing but the two loopback servers: any other request is refused and fails the test.
 */
import t, { type Test } from 'tap';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { createAccountsStore } from '../src/accounts/index.js';
import { createUsageRecorder } from '../src/accounts/usage/recorder.js';
import { buildConsole } from '../src/console/main.js';
import { buildGateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { launchChromiumOrFail } from './helpers/browser.js';
import { freePort } from './helpers/ports.js';
import { startRealModelServer, stackConfig } from './helpers/real-stack.js';
import { REPO_ROOT, ROBUSTNESS_DIR, TEST_OUTPUT_DIR } from './helpers/shared.js';
import { layoutProblems } from './helpers/layout.js';
import type { FacialArea } from '../src/model-client/protocol.js';

const SHOTS = join(TEST_OUTPUT_DIR, 'screenshots');
mkdirSync(SHOTS, { recursive: true });
const DETECTORS = 'opencv,yunet';

const ms = await startRealModelServer({ FACECOMPUTE_ALLOWED_DETECTORS: DETECTORS });
const [gwPort, consolePort] = [await freePort(), await freePort()];
const gatewayUrl = `http://127.0.0.1:${gwPort}`;
const consoleUrl = `http://127.0.0.1:${consolePort}`;
const config = stackConfig(ms.url, {
  FACECOMPUTE_ALLOWED_DETECTORS: DETECTORS,
  FACECOMPUTE_PUBLIC_BASE_URL: gatewayUrl,
  FACECOMPUTE_PUBLIC_CONSOLE_URL: consoleUrl,
  FACECOMPUTE_USAGE_FLUSH_MS: '50',
  FACECOMPUTE_SIGNUP_RATE_LIMIT: '100',
});
const store = await createAccountsStore(config);
const usage = createUsageRecorder(store, config.usage)!;
const gw = await buildGateway({ config, accounts: store, logger: createLogger('test', 'silent'), usage });
await gw.app.listen({ host: '127.0.0.1', port: gwPort });
const app = await buildConsole({ config, store });
await app.listen({ host: '127.0.0.1', port: consolePort });
const stop = async () => {
  await app.close();
  await gw.close(1000);
  await usage.close();
  await store.close();
  await ms.stop();
};
const browser: Browser = await launchChromiumOrFail(t, stop);
t.teardown(async () => {
  await browser.close();
  await stop();
});

const capabilities = (await (await fetch(`${gatewayUrl}/capabilities`)).json()) as {
  calibration: { models: Record<string, Record<string, Record<string, Record<string, { threshold: number }>>>> };
};

/** A facial area as the API returns it (the protocol's own type, not a copy). */
type Area = FacialArea;

/** A signed-in page at this width whose browser can reach the console and the gateway, nothing else. */
async function signedInPage(t: Test, width: number, email: string): Promise<Page> {
  const phone = width < 600;
  const context = await browser.newContext({ viewport: { width, height: phone ? 844 : 900 }, isMobile: phone, hasTouch: phone });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${consoleUrl}/`) || url.startsWith(`${gatewayUrl}/`) || url.startsWith('data:')) return route.continue();
    t.fail(`the page asked for ${url}`);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => t.fail(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // The API's refusals (422 no face, …) are reported by Chromium; a 404 would be a missing asset.
    const refusal = /status of 4(0[0-35-9]|[1-9]\d) /.test(msg.text());
    if (msg.type() === 'error' && !refusal) t.fail(`console error (a CSP violation, CORS refusal or failed load): ${msg.text()}`);
  });
  await page.goto(`${consoleUrl}/signup`);
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${consoleUrl}/account`);
  await page.getByRole('link', { name: 'Try it' }).click();
  await page.waitForURL(`${consoleUrl}/try`);
  await page.locator('#try-form[data-ready="true"]').waitFor();
  await page.getByRole('button', { name: 'Create a key for this page' }).click();
  await page.getByRole('status').filter({ hasText: 'Created the key' }).waitFor();
  return page;
}

/** Clicks Verify and waits until the run has finished, answered or not. */
async function submit(page: Page): Promise<void> {
  const runs = Number((await page.locator('#try-form').getAttribute('data-runs')) ?? 0);
  await page.getByRole('button', { name: 'Verify' }).click();
  await page.locator(`#try-form[data-runs="${runs + 1}"]`).waitFor({ timeout: 60_000 });
}

async function run(t: Test, page: Page): Promise<{ verify: any; represent: any }> {
  await submit(page);
  t.equal(await page.locator('#try-result').getAttribute('data-drawn'), 'true', `drawn (${await page.locator('#try-status').textContent()})`);
  const verify = JSON.parse((await page.locator('#try-json').textContent())!);
  const represent = JSON.parse((await page.locator('#try-represent-json').textContent())!);
  return { verify, represent };
}

/**
 * The rectangles drawn over photo `i` (1 or 2), in the image's own pixels: each box's displayed
 * rectangle, relative to the displayed image, divided by the displayed scale.
 */
async function drawn(page: Page, i: 1 | 2): Promise<{ scale: number; boxes: Array<{ x: number; y: number; w: number; h: number; used: boolean }>; eyes: Array<[number, number]> }> {
  return page.evaluate((i) => {
    const img = document.getElementById(`try-view${i}`) as HTMLImageElement;
    const r = img.getBoundingClientRect();
    const sx = r.width / img.naturalWidth;
    const sy = r.height / img.naturalHeight;
    const boxes = [...document.querySelectorAll(`#try-boxes${i} .face-box`)].map((el) => {
      const b = el.getBoundingClientRect();
      return { x: (b.left - r.left) / sx, y: (b.top - r.top) / sy, w: b.width / sx, h: b.height / sy, used: el.classList.contains('used') };
    });
    const eyes = [...document.querySelectorAll(`#try-boxes${i} .eye.used`)].map((el) => {
      const b = el.getBoundingClientRect();
      return [(b.left + b.width / 2 - r.left) / sx, (b.top + b.height / 2 - r.top) / sy] as [number, number];
    });
    return { scale: sx, boxes, eyes };
  }, i);
}

/** Within 1.5 displayed pixels, in image pixels. */
const near = (a: number, b: number, scale: number) => Math.abs(a - b) * scale <= 1.5;
const sameRect = (d: { x: number; y: number; w: number; h: number }, f: Area, s: number) => near(d.x, f.x, s) && near(d.y, f.y, s) && near(d.w, f.w, s) && near(d.h, f.h, s);

/** Every face of the JSON has its box, the used one (and only it) highlighted, with its eyes. */
async function checkBoxes(t: Test, page: Page, i: 1 | 2, faces: Area[], used: Area): Promise<number> {
  const d = await drawn(page, i);
  t.equal(d.boxes.length, faces.length, `photo ${i}: one box per face the API returned (${faces.length})`);
  for (const f of faces) {
    const box = d.boxes.find((b) => sameRect(b, f, d.scale));
    t.ok(box, `photo ${i}: a box drawn at the face ${f.x},${f.y} ${f.w}x${f.h} (scale ${d.scale.toFixed(3)}); drawn: ${JSON.stringify(d.boxes.map((b) => [Math.round(b.x), Math.round(b.y), Math.round(b.w), Math.round(b.h)]))}`);
  }
  const highlighted = d.boxes.filter((b) => b.used);
  t.equal(highlighted.length, 1, `photo ${i}: one face highlighted`);
  t.ok(highlighted[0] && sameRect(highlighted[0], used, d.scale), `photo ${i}: the highlighted face is the one /verify used`);
  const eyes = [used.left_eye, used.right_eye].filter((e): e is [number, number] => Array.isArray(e));
  t.equal(d.eyes.length, eyes.length, `photo ${i}: its eyes are marked`);
  for (const e of eyes) t.ok(d.eyes.some((m) => near(m[0], e[0], d.scale) && near(m[1], e[1], d.scale)), `photo ${i}: an eye marked at ${e}`);
  return d.scale;
}

for (const width of [390, 1280]) {
  t.test(`${width} px: sign up, Try it with the sample pair, a box on every face the API returned`, async (t) => {
    const email = `try-${width}@example.com`;
    const page = await signedInPage(t, width, email);
    const key = await page.evaluate(() => sessionStorage.getItem('facecompute.try-it.key'));
    t.match(key, /^fc_live_/, 'the key made for the page is kept in this tab');
    const { verify, represent } = await run(t, page);
    t.equal(verify.verified, true, 'img1.jpg and img2.jpg: the same person');
    t.match(await page.locator('#try-verdict').textContent(), /^Same person: distance/);
    const scales: number[] = [];
    for (const i of [1, 2] as const) scales.push(await checkBoxes(t, page, i, represent.results[i - 1].map((r: { facial_area: Area }) => r.facial_area), verify.facial_areas[`img${i}`]));
    if (width === 390) t.ok(scales.every((s) => s < 0.95), `the photos are shown smaller than their pixels (${scales.map((s) => s.toFixed(3))}), so an unscaled box would be off`);

    const cal = capabilities.calibration.models[verify.model]![verify.detector_backend]![verify.similarity_metric]!;
    for (const [mark, value] of [['distance', verify.distance], ['threshold', verify.threshold], ['deepface', cal['deepface']!.threshold], ['far-1e-2', cal['far_1e_2']!.threshold], ['far-1e-3', cal['far_1e_3']!.threshold]] as const) {
      t.match(await page.locator(`dd[data-mark="${mark}"]`).textContent(), new RegExp(`^${value.toFixed(4)}`), `${mark} shown: ${value.toFixed(4)}`);
    }
    const { id } = await store.db.selectFrom('accounts').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    const remaining = (await store.getAccount(id)).free_calls.remaining;
    t.equal(await page.getByTestId('try-remaining').getAttribute('data-spent'), '2', 'the run spent two calls (/verify and /represent)');
    t.equal(await page.getByTestId('try-remaining').getAttribute('data-remaining'), String(remaining), 'and says what the account has left');

    const curl = (await page.locator('#try-curl').textContent())!;
    t.match(curl, `curl -sS ${gatewayUrl}/verify`);
    t.match(curl, '-F img1=@img1.jpg -F img2=@img2.jpg');
    t.notOk(curl.includes(key!), 'the curl command names the key by a variable, never its value');
    t.notOk((await page.content()).includes(key!), 'the key is not in the page (only in its password field)');
    t.notOk(page.url().includes(key!.slice(8)), 'nor in a URL');

    const unlabelled = await page.$$eval('input:not([type=hidden]), select, textarea', (els) =>
      els.filter((el) => !(el as HTMLInputElement).labels?.length && !el.getAttribute('aria-label')).map((el) => el.outerHTML),
    );
    t.same(unlabelled, [], 'every form control has a label');
    const problems = await layoutProblems(page, true);
    t.same(problems, [], `fits ${width} px: ${problems.slice(0, 5).map((p) => `${p.el}: ${p.what}`).join('; ')}`);
    await page.screenshot({ path: join(SHOTS, `try-it-${width}.png`), fullPage: true });

    // Usage: the call just made, by its request id.
    const requestId = await page.locator('#try-result').getAttribute('data-verify-request-id');
    t.match(requestId, /^[0-9a-f-]{36}$/);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage' }).click();
    await page.waitForURL(`${consoleUrl}/usage`);
    const row = page.locator(`tr[data-request-id="${requestId}"]`);
    for (let i = 0; i < 50 && (await row.count()) === 0; i++) {
      // Recorded off the request's path, in batches (FACECOMPUTE_USAGE_FLUSH_MS=50 here).
      await new Promise((r) => setTimeout(r, 100));
      await page.reload();
    }
    t.equal(await row.count(), 1, `Usage lists the /verify call ${requestId}`);
    t.match(await row.textContent(), '/verify');
    if (width === 1280) await page.screenshot({ path: join(SHOTS, 'try-it-usage-1280.png'), fullPage: true });
    await page.context().close();
  });
}

t.test('two people in one photo: both boxed, the one /verify chose highlighted', async (t) => {
  const page = await signedInPage(t, 1280, 'two-people@example.com');
  await page.getByLabel('My own photos').check();
  await page.getByLabel('First photo').setInputFiles(join(ROBUSTNESS_DIR, 'multi_face', 'face_recognition__examples__two_people.jpg'));
  await page.getByLabel('Second photo').setInputFiles(join(REPO_ROOT, 'samples', 'img1.jpg'));
  await page.getByLabel('Detector').selectOption('yunet');
  const { verify, represent } = await run(t, page);
  const faces: Area[] = represent.results[0].map((r: { facial_area: Area }) => r.facial_area);
  t.equal(faces.length, 2, 'the API found both people');
  t.equal(verify.verified, true, 'one of them is the person of img1.jpg');
  await checkBoxes(t, page, 1, faces, verify.facial_areas.img1);
  await checkBoxes(t, page, 2, represent.results[1].map((r: { facial_area: Area }) => r.facial_area), verify.facial_areas.img2);
  t.match(await page.locator('#try-curl').textContent(), '-F img1=@face_recognition__examples__two_people.jpg -F img2=@img1.jpg');
  t.match(await page.locator('#try-curl').textContent(), '-F detector_backend=yunet');

  await page.screenshot({ path: join(SHOTS, 'try-it-two-people-1280.png'), fullPage: true });

  // The other sample pair: two people.
  await page.getByLabel('Sample pair: two people (img1.jpg, img3.jpg)').check();
  const other = await run(t, page);
  t.equal(other.verify.verified, false, 'img1.jpg and img3.jpg: two people');
  t.match(await page.locator('#try-verdict').textContent(), /^Different people: distance/);
  t.match(await page.locator('#try-curl').textContent(), '-F img1=@img1.jpg -F img2=@img3.jpg');

  // Signing out from the page forgets the key kept in the tab.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${consoleUrl}/signin`);
  t.equal(await page.evaluate(() => sessionStorage.getItem('facecompute.try-it.key')), null, 'signed out: the key is forgotten');
  await page.context().close();
});

t.test('a photo without a face: the error, one call spent, no /represent', async (t) => {
  const page = await signedInPage(t, 1280, 'no-face@example.com');
  // A key of another account is refused before any call: it would spend that account's calls.
  const mine = await page.locator('#try-key').inputValue();
  const { session_token } = await store.signupAnonymous('127.0.0.1');
  const { key: theirs } = await store.createKey((await store.sessionAccount(session_token))!, 'rest', 'theirs');
  await page.locator('#try-key').fill(theirs);
  const calls: string[] = [];
  page.on('request', (r) => {
    if (r.url().startsWith(gatewayUrl) && r.method() === 'POST') calls.push(new URL(r.url()).pathname);
  });
  await submit(page);
  t.match(await page.locator('#try-status').textContent(), 'This key is not an active REST key of this account.');
  t.same(calls, [], 'and no call was made');
  await page.locator('#try-key').fill(mine);

  await page.getByLabel('My own photos').check();
  await page.getByLabel('First photo').setInputFiles(join(ROBUSTNESS_DIR, 'no_face', 'face-api.js__test__images__white.png'));
  await page.getByLabel('Second photo').setInputFiles(join(REPO_ROOT, 'samples', 'img1.jpg'));
  await submit(page);
  t.match(await page.locator('#try-verdict').textContent(), /^The API answered 422 no_face_detected: /);
  t.same(calls, ['/verify'], 'no /represent after a refused /verify');
  t.equal(await page.locator('#try-json').textContent().then((j) => JSON.parse(j!).error), 'no_face_detected', 'the raw JSON is the error');
  t.equal(await page.getByTestId('try-remaining').getAttribute('data-spent'), '1', 'compute ran: one call charged, as the Usage page counts it');
  t.equal(await page.locator('#try-answer').isVisible(), false, 'no photos or scale for a refused call');
  await page.context().close();
});

// readFileSync keeps the samples' bytes honest: the page fetched these exact files.
t.test('the samples served are the shipped files', async (t) => {
  for (const n of ['img1.jpg', 'img2.jpg', 'img3.jpg']) {
    const r = await fetch(`${consoleUrl}/samples/${n}`);
    t.equal(r.status, 200);
    t.same(Buffer.from(await r.arrayBuffer()), readFileSync(join(REPO_ROOT, 'samples', n)), n);
  }
});
