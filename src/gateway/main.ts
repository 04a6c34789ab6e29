/**
 * Entry point of `facecompute gateway`: loads the configuration once, builds the gateway with its
 * dependencies, listens on FACECOMPUTE_HOST:FACECOMPUTE_GATEWAY_PORT, serves metrics on the admin
 * listener when FACECOMPUTE_METRICS_PORT is set, and drains on SIGTERM/SIGINT (exit 0).
 */
import type { Server } from 'node:http';
import { assertStartupConfig, loadConfig, type Config } from '../config/index.js';
import { createLogger } from '../logging/logger.js';
import { createAccountsStore } from '../accounts/index.js';
import { buildGateway, type Gateway, type GatewayDeps } from './app.js';
import { startMetricsServer } from './metrics.js';
import { listenSurface } from '../http/listen.js';
import { applyHeapGrowth } from './heap.js';
import { createUsageRecorder } from '../accounts/usage/recorder.js';

export { buildGateway, type Gateway, type GatewayDeps } from './app.js';

export interface RunOptions extends Partial<Omit<GatewayDeps, 'config'>> {
  config?: Config;
  /** Called once listening, with the bound port (tests listen on port 0). */
  onListening?: (port: number, gw: Gateway) => void;
}

/** Runs the gateway until SIGTERM/SIGINT; resolves with the exit code. */
export async function runGateway(opts: RunOptions = {}): Promise<number> {
  const config = opts.config ?? loadConfig();
  assertStartupConfig(config, 'gateway');
  const logger = opts.logger ?? createLogger('gateway', config.logLevel);
  const store = opts.accounts ? null : await createAccountsStore(config);
  const accounts = opts.accounts ?? store!;
  // Usage records go to the accounts database this process opened; a caller that passes its own
  // accounts passes its own sink too (`usage`), or records nothing.
  const recorder = !opts.usage && store ? createUsageRecorder(store, { ...config.usage, log: logger }) : null;
  const usage = opts.usage ?? recorder ?? undefined;
  const gw = await buildGateway({ ...opts, config, logger, accounts, ...(usage ? { usage } : {}) });
  let port: number;
  let metricsServer: Server | null = null;
  try {
    port = await listenSurface('gateway', gw.app, config.host, config.ports.gateway);
    if (config.ports.metrics > 0) metricsServer = await startMetricsServer(gw.metrics, config.ports.metrics, config.metricsHost);
  } catch (err) {
    // All or nothing: close what started, then src/cli/main.ts exits with EXIT_LISTEN_FAILED.
    logger.fatal({ err }, 'start-up failed; stopping');
    await gw.close(0).catch(() => undefined);
    await recorder?.close();
    if (!opts.accounts) await accounts.close().catch(() => undefined);
    throw err;
  }
  logger.info({ host: config.host, port, metrics: config.ports.metrics || 'off', limiter: gw.limiter.kind, model_servers: config.modelServerUrls.length }, 'gateway listening');
  opts.onListening?.(port, gw);
  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal, drain_timeout_ms: config.capacity.drainTimeoutMs }, 'draining');
      gw.startDraining();
      const hard = setTimeout(() => {
        logger.warn('drain timeout passed; exiting');
        resolveExit(0);
      }, config.capacity.drainTimeoutMs + 2000);
      hard.unref();
      gw
        .close(config.capacity.drainTimeoutMs)
        .catch((err: unknown) => logger.error({ err }, 'error while closing'))
        .finally(async () => {
          metricsServer?.close();
          // After the drain: the last answered requests' records are written before the store closes.
          await recorder?.close();
          await accounts.close().catch(() => undefined);
          clearTimeout(hard);
          logger.info('drained; bye');
          resolveExit(0);
        });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  // Process-wide, so here and in `serve`, not in runGateway (tests run gateways in their own process).
  applyHeapGrowth(config.limits.heapGrowthPercent);
  return runGateway({ config });
}
