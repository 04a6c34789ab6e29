/** Entry point of `facecompute console`: the accounts console alone (contract §1). */
import { assertStartupConfig, loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { createAccountsStore } from '../accounts/index.js';
import { buildConsole } from './app.js';
import { listenSurface } from '../http/listen.js';

export { buildConsole, type ConsoleDeps } from './app.js';

export async function run(args: string[]): Promise<number> {
  if (args.length > 0) {
    process.stderr.write(`facecompute console takes no arguments (configure it with FACECOMPUTE_* variables); got ${args.join(' ')}\n`);
    return 2;
  }
  const config = loadConfig();
  assertStartupConfig(config, 'console');
  const logger = createLogger('console', config.logLevel);
  const store = await createAccountsStore(config, { log: logger });
  const app = await buildConsole({ config, store, logger });
  try {
    await listenSurface('console', app, config.host, config.ports.console);
  } catch (err) {
    logger.fatal({ err }, 'start-up failed; stopping');
    await app.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw err;
  }
  await new Promise<void>((done) => {
    const stop = () => done();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await app.close();
  await store.close();
  return 0;
}
