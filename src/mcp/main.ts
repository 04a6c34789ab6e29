/**
 * `facecompute mcp`: the MCP endpoint alone. It shares the accounts store and the per-account
 * limiter (Redis when configured) with the gateway, and reaches the model servers itself.
 */
import type { Config } from '../config/index.js';
import { assertStartupConfig, loadConfig } from '../config/index.js';
import { createLogger, type Logger } from '../logging/logger.js';
import { createAccountsStore } from '../accounts/index.js';
import type { AccountsPort } from '../accounts/api.js';
import { PACKAGE_VERSION } from '../package-root.js';
import { createComputeStack } from '../service/configured.js';
import type { ComputeQueue } from '../service/queue.js';
import type { Limiter } from '../service/limits/limiter.js';
import type { Upstream } from '../model-client/client.js';
import type { RemoteFetchOptions } from '../service/inputs/remote-fetch.js';
import { buildMcp } from './server.js';
import { BodyBudget } from '../http/body-budget.js';
import type { FetchBudget } from '../service/limits/fetch-budget.js';
import { listenSurface } from '../http/listen.js';
import { createUsageRecorder, type UsageRecorder, type UsageSink } from '../accounts/usage/recorder.js';
import { createDocsCorpus } from './docs-tools.js';
import { resolve } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.js';

export interface McpRunOptions {
  config?: Config;
  logger?: Logger;
  accounts?: AccountsPort;
  limiter?: Limiter;
  upstream?: Upstream;
  queue?: ComputeQueue;
  remoteFetch?: Partial<RemoteFetchOptions>;
  /** Shared with the gateway when both run in one process (`facecompute serve`). */
  bodyBudget?: BodyBudget;
  /** The per-account budget of remote fetches; `serve` shares the gateway's. */
  fetchBudget?: FetchBudget | null;
  /** Where tool calls' usage goes; null records none. Unset: a recorder on the store opened here, if any. */
  usage?: UsageSink | null;
  /** The docs pages search_docs and the resources serve; defaults to docs/ at the package root. */
  docsDir?: string;
}

/**
 * The MCP image policy: remote URLs follow FACECOMPUTE_REMOTE_IMAGES as on REST (off: none, on MCP
 * as well), must be HTTPS and pass the same SSRF checks as the gateway's; strict mode
 * (FACECOMPUTE_MCP_STRICT_URLS) narrows `public` to the exact origins of FACECOMPUTE_REMOTE_ORIGINS;
 * never local files.
 */
export function mcpInputPolicy(cfg: Config): { remoteImages: 'off' | 'allowlist' | 'public'; localImagesRoot: '' } {
  const remote = cfg.inputs.remoteImages;
  return { remoteImages: remote === 'public' && cfg.mcp.strictUrls ? 'allowlist' : remote, localImagesRoot: '' };
}

export async function createMcp(opts: McpRunOptions = {}) {
  const config = opts.config ?? loadConfig();
  assertStartupConfig(config, 'mcp');
  const logger = opts.logger ?? createLogger('mcp', config.logLevel);
  const store = opts.accounts ? null : await createAccountsStore(config);
  const accounts = opts.accounts ?? store!;
  const recorder: UsageRecorder | null = opts.usage === undefined && store ? createUsageRecorder(store, { ...config.usage, log: logger }) : null;
  const usage = opts.usage ?? recorder;
  // The compute stack REST sits on too (src/service/configured.ts); `serve` passes the gateway's
  // limiter, queue and upstream, so both surfaces count against one budget.
  const { compute, limiter, upstream, fetchBudget } = await createComputeStack(config, {
    limiter: opts.limiter,
    fetchBudget: opts.fetchBudget ?? undefined,
    queue: opts.queue,
    upstream: opts.upstream,
    inputPolicy: mcpInputPolicy(config),
    remoteFetch: { httpsOnly: true, ...opts.remoteFetch },
    logger: logger.child({ component: 'upstream' }),
  });
  const app = await buildMcp({
    logger,
    accounts,
    limiter,
    compute,
    fetchBudget,
    maxBodyBytes: config.mcp.maxBodyBytes,
    maxJsonValues: config.limits.maxJsonValues,
    strikes: { limit: config.capacity.strikeLimit, windowMs: config.capacity.strikeWindowMs },
    bodyBudget: opts.bodyBudget ?? new BodyBudget(config.capacity.maxInflightBodyBytes, config.capacity.maxInflightBodyBytesPerAccount),
    arrayLimits: { maxTargets: config.limits.maxTargets, maxSources: config.limits.maxSources, maxBatchImages: config.limits.maxBatchImages },
    requestReceiveTimeoutMs: config.capacity.requestReceiveTimeoutMs,
    rateLimitWindowMs: config.capacity.rateLimitWindowMs,
    uploadRate: { minBytesPerS: config.capacity.minUploadBytesPerS, graceMs: config.capacity.uploadGraceMs },
    allowedOrigins: config.mcp.allowedOrigins,
    version: PACKAGE_VERSION,
    ...(usage ? { usage } : {}),
    docs: createDocsCorpus(opts.docsDir ?? resolve(PACKAGE_ROOT, 'docs'), {
      console: config.accounts.publicConsoleUrl.replace(/\/+$/, ''),
      base: config.accounts.publicBaseUrl.replace(/\/+$/, ''),
      mcp: config.accounts.publicMcpUrl,
    }),
  });
  return { app, accounts, limiter, upstream, config, logger, recorder };
}

export async function run(_args: string[]): Promise<number> {
  const mcp = await createMcp();
  try {
    await listenSurface('MCP endpoint', mcp.app, mcp.config.host, mcp.config.ports.mcp);
  } catch (err) {
    mcp.logger.fatal({ err }, 'start-up failed; stopping');
    await mcp.app.close().catch(() => undefined);
    await mcp.recorder?.close();
    await mcp.accounts.close().catch(() => undefined);
    await mcp.limiter.close().catch(() => undefined);
    await mcp.upstream.close().catch(() => undefined);
    throw err;
  }
  mcp.logger.info({ host: mcp.config.host, port: mcp.config.ports.mcp, path: '/mcp' }, 'MCP endpoint listening');
  await new Promise<void>((done) => {
    process.once('SIGTERM', () => done());
    process.once('SIGINT', () => done());
  });
  await mcp.app.close();
  await mcp.recorder?.close();
  await mcp.accounts.close();
  await mcp.limiter.close();
  return 0;
}
