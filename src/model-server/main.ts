/** `facecompute model-server`: the internal inference process, always on 127.0.0.1. */
import { loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { buildModelServer } from './app.js';
import { engines, imageOps } from './adapters.js';
import { startRegistry } from './registry.js';

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  const logger = createLogger('model-server', config.logLevel);
  const state = await startRegistry(config, logger, engines(config));
  const app = await buildModelServer({ config, logger, state, image: imageOps(config) });
  // Inference is internal only: never bind anything but loopback.
  await app.listen({ host: '127.0.0.1', port: config.ports.modelServer });
  const stop = async (signal: string) => {
    logger.info({ signal }, 'model server stopping');
    await app.close();
    for (const r of state.recognizers.values()) await r.close?.();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  return new Promise<number>(() => {});
}
