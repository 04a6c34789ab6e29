/** `facecompute model-server`: the internal inference process, always on 127.0.0.1. */
import { loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { buildModelServer } from './app.js';
import { engines, imageOps } from './adapters.js';
import { startRegistry } from './registry.js';
import { listenSurface } from '../cli/listen.js';

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  const logger = createLogger('model-server', config.logLevel);
  const state = await startRegistry(config, logger, engines(config));
  const app = await buildModelServer({ config, logger, state, image: imageOps(config) });
  // Inference is internal only: never bind anything but loopback. A port that cannot be bound ends
  // the process (src/cli/main.ts exits with EXIT_LISTEN_FAILED, which `serve` does not retry).
  try {
    await listenSurface('model server', app, '127.0.0.1', config.ports.modelServer);
  } catch (err) {
    logger.fatal({ err }, 'start-up failed; stopping');
    throw err;
  }
  const stop = async (reason: string) => {
    logger.info({ reason }, 'model server stopping');
    await app.close();
    for (const r of state.recognizers.values()) await r.close?.();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  // Started by `serve` with an IPC channel: when the parent dies (even by SIGKILL) the channel
  // closes, and an orphaned model server would otherwise keep its port and its memory.
  if (process.send) process.once('disconnect', () => void stop('parent process gone'));
  return new Promise<number>(() => {});
}
