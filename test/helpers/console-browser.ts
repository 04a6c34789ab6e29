/**
 * A console on a loopback port, with its own accounts store in a fresh data directory, and Chromium to
 * drive it; everything is closed when the test ends. The browser tests of the console pages share it
 * (console-layout, console-agent-signup, docs-api-browser), each with the settings it needs.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Browser } from 'playwright-core';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createAccountsStore } from '../../src/accounts/index.js';
import { buildConsole } from '../../src/console/main.js';
import { launchChromiumOrFail } from './browser.js';

export interface ConsoleInBrowser {
  config: Config;
  store: Awaited<ReturnType<typeof createAccountsStore>>;
  app: Awaited<ReturnType<typeof buildConsole>>;
  /** The console's base URL, http://127.0.0.1:<port>. */
  base: string;
  browser: Browser;
}

/** `env` adds to a silent log and a data directory of its own, named after `name`. */
export async function consoleInChromium(t: Test, name: string, env: Record<string, string> = {}): Promise<ConsoleInBrowser> {
  const config = loadConfig({ FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), `fc-${name}-`)), FACECOMPUTE_LOG_LEVEL: 'silent', ...env });
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const closeConsole = async () => {
    await app.close();
    await store.close();
  };
  const browser = await launchChromiumOrFail(t, closeConsole);
  t.teardown(async () => {
    await browser.close();
    await closeConsole();
  });
  return { config, store, app, base, browser };
}
