/**
 * Real Chromium through playwright-core, never a downloaded browser: the system's /usr/bin/chromium
 * (scripts/bootstrap.sh installs it), or CHROMIUM_PATH.
 *
 * Fenced to loopback twice, with or without a network namespace: every context this browser opens
 * routes each request, and one for a host outside loopback is aborted and refused as the loopback guard
 * refuses (logged to TEST_LOOPBACK_GUARD_LOG, the test process fails); and Chromium's own traffic that
 * no route sees (a WebSocket, a prefetch) goes through a proxy on a closed loopback port, with host
 * names resolved to nothing and WebRTC kept off UDP. A test's own routes run first and may refuse more.
 */
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import type { Test } from 'tap';
import { refuseOffLoopback } from './loopback-guard.js';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=127.0.0.1;localhost;[::1]',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/** Whether a request URL stays on this machine: loopback hosts, and URLs with no host (data:, blob:, about:). */
export function loopbackUrl(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (!['http:', 'https:', 'ws:', 'wss:', 'ftp:'].includes(u.protocol)) return u.host === '' || u.protocol === 'blob:';
  const h = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  return /^127\.\d+\.\d+\.\d+$/.test(h) || h === '::1' || h === 'localhost' || h.endsWith('.localhost');
}

/** The route every context gets: requests beyond loopback are aborted and refused. */
export async function fenceContext(context: BrowserContext): Promise<void> {
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (loopbackUrl(url)) return route.fallback();
    refuseOffLoopback('a request from Chromium to', url);
    return route.abort('blockedbyclient');
  });
}

export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  // Every context, and so every page (browser.newPage opens a context too), is fenced before its first request.
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (...args: Parameters<Browser['newContext']>) => {
    const context = await newContext(...args);
    await fenceContext(context);
    return context;
  };
  browser.newPage = async (...args: Parameters<Browser['newPage']>) => {
    const context = await browser.newContext(...args);
    const page = await context.newPage();
    page.once('close', () => void context.close().catch(() => {}));
    return page;
  };
  return browser;
}

/**
 * Chromium for a browser test, or a loud failure: the test fails naming the fix, `cleanup` closes
 * what the test had started, and the process exits 1 (a browser test never skips).
 */
export async function launchChromiumOrFail(t: Test, cleanup: () => Promise<void>): Promise<Browser> {
  try {
    return await launchChromium();
  } catch (err) {
    t.fail(`Chromium could not start (apt-get install chromium): ${(err as Error).message}`);
    await cleanup();
    process.exit(1);
  }
}
