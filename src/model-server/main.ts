/**
 * `facecompute model-server`: the internal inference process. It binds FACECOMPUTE_MODEL_SERVER_HOST
 * (loopback by default); any other address needs FACECOMPUTE_INTERNAL_TOKEN, checked before a model
 * is loaded, so a misconfigured pod fails at once instead of serving unauthenticated inference.
 */
import { assertStartupConfig, loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { buildModelServer } from './app.js';
import { engines, imageOps } from './adapters.js';
import { assertSafeBind } from './internal-auth.js';
import { startRegistry } from './registry.js';
import { assertDefaultsServable, planServing } from './serving-plan.js';
import { listenSurface } from '../http/listen.js';

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  assertStartupConfig(config, 'model-server');
  const { host, internalToken } = config.modelServer;
  assertSafeBind(host, internalToken);
  const logger = createLogger('model-server', config.logLevel);
  // A configured default it cannot serve stops it here, before any port or model (unless the operator
  // allowed a degraded start); `serve` treats that exit as final instead of restarting it.
  const plan = await planServing(config);
  assertDefaultsServable(config, plan);
  const state = await startRegistry(config, logger, engines(config), plan);
  const app = await buildModelServer({ config, logger, state, image: imageOps(config) });
  // A port that cannot be bound ends the process (src/cli/main.ts exits with EXIT_LISTEN_FAILED,
  // which `serve` does not retry).
  try {
    await listenSurface('model server', app, host, config.ports.modelServer);
  } catch (err) {
    logger.fatal({ err }, 'start-up failed; stopping');
    throw err;
  }
  logger.info({ host, port: config.ports.modelServer, internal_token: internalToken ? 'required' : 'off' }, 'model server listening');
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
