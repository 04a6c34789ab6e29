/**
 * `facecompute serve`: every surface of contract §1 with embedded defaults. The gateway, the MCP
 * endpoint and the console run in this process and share one accounts store (SQLite under the data
 * directory unless FACECOMPUTE_DATABASE_URL says otherwise), one per-account limiter (so REST and
 * MCP count against the same limits) and one model-server client. The model server runs as a child
 * process on 127.0.0.1, unless FACECOMPUTE_MODEL_SERVER_URLS points at running ones.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { loadConfig } from '../config/index.js';
import { createLogger } from '../logging/logger.js';

const BIN = join(PACKAGE_ROOT, 'bin', 'facecompute.js');

function startModelServer(log: ReturnType<typeof createLogger>): ChildProcess {
  const child = spawn(process.execPath, [BIN, 'model-server'], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
  child.on('exit', (code, signal) => log.warn({ code, signal }, 'model-server child exited'));
  return child;
}

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  const logger = createLogger('serve', config.logLevel);
  const localChild = process.env['FACECOMPUTE_MODEL_SERVER_URLS'] ? null : startModelServer(logger);
  // Imported only now: loading the gateway, MCP and accounts modules is the longest part of a start
  // (about 0.2 s bundled, 0.45 s unbundled), and the model-server child, whose warmup decides
  // readiness, loads its models meanwhile.
  const [{ createAccountsStore }, { buildGateway }, { startMetricsServer }, { buildConsole }, { createMcp }] = await Promise.all([
    import('../accounts/index.js'),
    import('../gateway/app.js'),
    import('../gateway/metrics.js'),
    import('../console/app.js'),
    import('../mcp/main.js'),
  ]);

  const store = await createAccountsStore(config);
  const gw = await buildGateway({ config, accounts: store, logger: logger.child({ surface: 'gateway' }) });
  const mcp = await createMcp({ config, accounts: store, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue, logger: logger.child({ surface: 'mcp' }) });
  const consoleApp = await buildConsole({ config, store, logger: logger.child({ surface: 'console' }) });

  await gw.app.listen({ host: config.host, port: config.ports.gateway });
  await mcp.app.listen({ host: config.host, port: config.ports.mcp });
  await consoleApp.listen({ host: config.host, port: config.ports.console });
  const metrics = config.ports.metrics > 0 ? await startMetricsServer(gw.metrics, config.ports.metrics, config.metricsHost) : null;
  logger.info(
    {
      gateway: `http://${config.host}:${config.ports.gateway}`,
      mcp: `http://${config.host}:${config.ports.mcp}/mcp`,
      console: `http://${config.host}:${config.ports.console}`,
      model_servers: config.modelServerUrls,
    },
    'facecompute serving',
  );

  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'draining');
      gw.startDraining();
      void (async () => {
        await gw.close(config.capacity.drainTimeoutMs).catch((err: unknown) => logger.error({ err }, 'gateway close'));
        await mcp.app.close().catch(() => undefined);
        await consoleApp.close().catch(() => undefined);
        metrics?.close();
        await store.close().catch(() => undefined);
        if (localChild && localChild.exitCode === null) {
          localChild.kill('SIGTERM');
          await new Promise((r) => localChild.once('exit', r));
        }
        resolveExit(0);
      })();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
