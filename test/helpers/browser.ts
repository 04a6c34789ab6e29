/**
 * Real Chromium through playwright-core, never a downloaded browser: the system's /usr/bin/chromium
 * (scripts/bootstrap.sh installs it), or CHROMIUM_PATH.
 */
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
}
