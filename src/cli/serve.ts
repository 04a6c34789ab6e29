/**
 * `facecompute serve`: every surface of contract §1 with embedded defaults. The gateway, the MCP
 * endpoint and the console run in this process and share one accounts store (SQLite under the data
 * directory unless FACECOMPUTE_DATABASE_URL says otherwise), one per-account limiter (so REST and
 * MCP count against the same limits) and one model-server client. The model server runs as a
 * supervised child process on FACECOMPUTE_MODEL_SERVER_HOST (127.0.0.1), restarted with backoff when
 * it dies (src/cli/supervisor.ts), unless FACECOMPUTE_MODEL_SERVER_URLS or FACECOMPUTE_MODEL_SERVER_DNS
 * point at running ones.
 *
 * Start-up is all or nothing: a listener that cannot bind, here or in the child, stops the command
 * with EXIT_LISTEN_FAILED after what had started is closed (src/http/listen.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';
import { assertStartupConfig, loadConfig, type Config } from '../config/index.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { INTERNAL_PATHS, INTERNAL_TOKEN_HEADER } from '../model-client/protocol.js';
import { EXIT_LISTEN_FAILED, listenSurface } from '../http/listen.js';
import { createSupervisor, type ProbeResult, type Supervisor } from './supervisor.js';
import { applyHeapGrowth } from '../gateway/heap.js';
import { assertDefaultsServable, planServing } from '../model-server/serving-plan.js';
import { EXIT_DEFAULTS_UNSERVABLE } from '../errors/exit-codes.js';

const BIN = join(PACKAGE_ROOT, 'bin', 'facecompute.js');

/**
 * Lowers the CPU priority of every thread of `pid` by `by` below this process's own (Linux niceness
 * is per thread; a thread inherits its creator's, so threads started later follow). Best effort: a
 * thread may end meanwhile.
 */
function deprioritize(pid: number | undefined, by: number): void {
  if (pid === undefined || by === 0) return;
  const nice = Math.min(19, getPriority() + by);
  let tids: number[] = [pid];
  try {
    tids = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    // no /proc: the main thread only
  }
  for (const tid of tids) {
    try {
      setPriority(tid, nice);
    } catch {
      // gone, or not ours to change
    }
  }
}

/** The model-server child, supervised; its readiness probe is its own internal route. */
function superviseModelServer(config: Config, logger: Logger, onFatal: (code: number) => void): Supervisor {
  const url = `http://127.0.0.1:${config.ports.modelServer}${INTERNAL_PATHS.readiness}`;
  const probe = async (): Promise<ProbeResult> => {
    const headers: Record<string, string> = config.modelServer.internalToken ? { [INTERNAL_TOKEN_HEADER]: config.modelServer.internalToken } : {};
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { status?: string };
    // Ready, or settled in its own warmup error, which its readiness reports truthfully.
    return body.status === 'ready' || body.status === 'error' ? 'up' : 'not_yet';
  };
  return createSupervisor({
    name: 'model-server',
    // An IPC channel, unused for messages: the child sees it close if this process dies, and exits.
    spawn: (): ChildProcess => {
      const child = spawn(process.execPath, [BIN, 'model-server'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: process.env });
      // At once (threads it starts from now on inherit it), and again once ready (threads Node
      // started before): inference yields the CPU to the front door, never the other way round.
      deprioritize(child.pid, config.supervisor.modelServerNice);
      return child;
    },
    onUp: (child) => deprioritize(child.pid, config.supervisor.modelServerNice),
    probe,
    logger,
    backoffMs: config.supervisor.backoffMs,
    backoffMaxMs: config.supervisor.backoffMaxMs,
    crashloopRestarts: config.supervisor.crashloopRestarts,
    crashloopWindowMs: config.supervisor.crashloopWindowMs,
    fatalExitCodes: [EXIT_LISTEN_FAILED, EXIT_DEFAULTS_UNSERVABLE],
    onFatal,
  });
}

export async function run(_args: string[]): Promise<number> {
  const config = loadConfig();
  for (const surface of ['gateway', 'mcp', 'console', 'model-server'] as const) assertStartupConfig(config, surface);
  // Before the surfaces allocate: the gateway's heap limit must leave room for upload chunks.
  applyHeapGrowth(config.limits.heapGrowthPercent);
  const logger = createLogger('serve', config.logLevel);
  let fatalCode: number | null = null;
  let onFatal: (code: number) => void = (code) => {
    fatalCode = code;
  };
  const localModelServer = !(process.env['FACECOMPUTE_MODEL_SERVER_URLS'] || config.modelServer.dns);
  // With a local model server, the configured defaults must be servable, or nothing starts: the
  // message names each missing file, every place and source tried and the command that fetches it.
  if (localModelServer) {
    const plan = await planServing(config);
    assertDefaultsServable(config, plan);
    if (plan.unservable.length > 0) logger.warn({ reasons: [plan.defaultModelReason, plan.defaultDetectorReason].filter(Boolean) }, 'starting DEGRADED (FACECOMPUTE_ALLOW_DEGRADED_START=true): a configured default cannot be served');
  }
  const supervisor = localModelServer ? superviseModelServer(config, logger, (code) => onFatal(code)) : null;
  supervisor?.start();
  // Imported only now: loading the gateway, MCP and accounts modules is the longest part of a start
  // (about 0.2 s bundled, 0.45 s unbundled), and the model-server child, whose warmup decides
  // readiness, loads its models meanwhile.
  const [{ createAccountsStore }, { buildGateway }, { startMetricsServer }, { buildConsole }, { createMcp }, { createUsageRecorder }] = await Promise.all([
    import('../accounts/index.js'),
    import('../gateway/app.js'),
    import('../gateway/metrics.js'),
    import('../console/app.js'),
    import('../mcp/main.js'),
    import('../accounts/usage/recorder.js'),
  ]);

  // Closers of what has started, run in reverse order when start-up fails or the process stops.
  const closers: Array<() => Promise<unknown>> = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((err: unknown) => logger.error({ err }, 'error while closing'));
    await supervisor?.stop();
  };
  let gw: Awaited<ReturnType<typeof buildGateway>>;
  /** Set once the gateway has drained (SIGTERM), so closing it again is a no-op. */
  let gatewayClosed: Promise<void> | null = null;
  try {
    const store = await createAccountsStore(config, { log: logger.child({ surface: 'console' }) });
    closers.push(() => store.close());
    // One usage recorder for REST and MCP; closed after both (closers run in reverse), so that the
    // records of their last requests are written before the store closes.
    const usage = createUsageRecorder(store, { ...config.usage, log: logger.child({ component: 'usage' }) });
    if (usage) closers.push(() => usage.close());
    gw = await buildGateway({ config, accounts: store, logger: logger.child({ surface: 'gateway' }), ...(supervisor ? { supervision: supervisor } : {}), ...(usage ? { usage } : {}) });
    const gateway = gw;
    closers.push(() => gatewayClosed ?? gateway.close(0));
    const mcp = await createMcp({ config, accounts: store, limiter: gw.limiter, upstream: gw.upstream, queue: gw.queue, bodyBudget: gw.bodyBudget, fetchBudget: gw.fetchBudget, usage, logger: logger.child({ surface: 'mcp' }) });
    closers.push(() => mcp.app.close());
    const consoleApp = await buildConsole({ config, store, logger: logger.child({ surface: 'console' }) });
    closers.push(() => consoleApp.close());

    await listenSurface('gateway', gw.app, config.host, config.ports.gateway);
    await listenSurface('MCP endpoint', mcp.app, config.host, config.ports.mcp);
    await listenSurface('console', consoleApp, config.host, config.ports.console);
    if (config.ports.metrics > 0) {
      const metrics = await startMetricsServer(gw.metrics, config.ports.metrics, config.metricsHost);
      closers.push(() => new Promise((r) => metrics.close(r)));
    }
  } catch (err) {
    logger.fatal({ err }, 'start-up failed; stopping');
    await closeAll();
    throw err;
  }
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
        // The gateway drains first (in-flight requests may still need the model server).
        gatewayClosed = gw.close(config.capacity.drainTimeoutMs).catch((err: unknown) => logger.error({ err }, 'gateway close'));
        await gatewayClosed;
        await closeAll();
        resolveExit(0);
      })();
    };
    onFatal = (code) => {
      if (stopping) return;
      stopping = true;
      logger.fatal({ code }, 'the model-server child cannot run; stopping');
      void closeAll().then(() => resolveExit(code));
    };
    if (fatalCode !== null) onFatal(fatalCode);
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
