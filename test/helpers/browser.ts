/**
 * Real Chromium through playwright-core, never a downloaded browser: the system's /usr/bin/chromium
 * (scripts/bootstrap.sh installs it), or CHROMIUM_PATH.
 */
import { chromium, type Browser } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
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
