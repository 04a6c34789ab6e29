/**
 * The MCP endpoint: Streamable HTTP in stateless mode (any replica answers any request), JSON
 * responses, MCP keys only. Each HTTP request gets a fresh McpServer bound to the caller's account,
 * as the SDK recommends for stateless servers.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, McpError, ReadResourceRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ServiceError, isServiceError } from '../errors/index.js';
import { registerTransportGuards, transportOptions } from '../http/transport-guards.js';
import { registerRouteGuard } from '../http/route-guard.js';
import { registerContractHeaders, requestIdOptions } from '../http/contract-headers.js';
import { registerErrorHandling, toServiceError } from '../http/error-handler.js';
import { onClose, requestCleanup } from '../service/lifecycle/cleanup.js';
import { keyedDoor } from '../service/lifecycle/door.js';
import { MCP_KEYS } from '../service/lifecycle/authenticate.js';
import { Metering } from '../service/lifecycle/metering.js';
import { recordUsage } from '../service/lifecycle/usage.js';
import { CLOSING_OPTIONS, registerClosingRefusal } from '../http/closing.js';
import type { Logger } from '../logging/logger.js';
import type { AccountsPort, AuthenticatedKey } from '../accounts/api.js';
import type { ComputeService } from '../service/compute-service.js';
import type { Limiter } from '../service/limits/limiter.js';
import type { FetchBudget } from '../service/limits/fetch-budget.js';
import type { StrikeSettings } from '../service/limits/strikes.js';
import { useJsonBodyParser } from '../http/json-body.js';
import { TOOLS, isToolName, type PreparedCall, type ToolName } from './tools.js';
import type { ArrayLimits } from './bounded-arrays.js';
import { registerProbes, type ReadinessCheck } from '../http/probes.js';
import type { BodyBudget } from '../http/body-budget.js';
import type { UploadRate } from '../http/upload-rate.js';
import type { UsageSink } from '../accounts/usage/recorder.js';
import type { UsageOutcome } from '../accounts/schema.js';
import { LISTED_DOCS_TOOLS, isDocsTool, type DocsCorpus, type DocsToolName } from './docs-tools.js';
import { TOOL_OUTPUTS } from './output-schemas.js';

export interface McpDeps {
  logger: Logger;
  accounts: AccountsPort;
  limiter: Limiter;
  /** Compute with the MCP image policy (HTTPS only, no local files). */
  compute: ComputeService;
  /** The per-account budget of remote fetches (src/service/limits/fetch-budget.ts); none when absent. */
  fetchBudget?: FetchBudget | null;
  maxBodyBytes: number;
  /** Values one JSON body may hold (FACECOMPUTE_MAX_JSON_VALUES, src/http/json-body.ts). */
  maxJsonValues: number;
  /** The REST limits tool arguments' arrays are held to before they are parsed. */
  arrayLimits: ArrayLimits;
  /** Requests lost with their model server an account may have (FACECOMPUTE_STRIKE_*). */
  strikes: StrikeSettings;
  /** Request bodies held at once in this process (src/http/body-budget.ts). */
  bodyBudget: BodyBudget;
  /** Longest time a client may take to send a whole request (FACECOMPUTE_REQUEST_RECEIVE_TIMEOUT_MS). */
  requestReceiveTimeoutMs: number;
  /** Browser origins allowed to call; requests without Origin (agents, CLIs) are allowed. */
  allowedOrigins: string[];
  version: string;
  /** Where each tool call's usage goes once answered (src/accounts/usage/recorder.ts). */
  usage?: UsageSink;
  /** The window the shared limiter counts in (FACECOMPUTE_RATE_LIMIT_WINDOW_MS), for its refusals' detail. */
  rateLimitWindowMs?: number;
  /** The minimum upload rate (src/http/upload-rate.ts); off when not given. */
  uploadRate?: UploadRate;
  /** The docs tools and resources (src/mcp/docs-tools.ts); without it, neither is offered. */
  docs?: DocsCorpus;
}

/** A tool call's failure in MCP's envelope (a tool error), mapped by the one table. */
function toolError(err: unknown): { isError: true; content: Array<{ type: 'text'; text: string }>; structuredContent: { error: string; detail: string } } {
  const e = asServiceError(err);
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.detail}` }], structuredContent: e.toBody() };
}

/**
 * The low-level SDK `Server`, not `McpServer`: McpServer validates tool arguments with zod itself and
 * turns a failure into free text, while a bad argument here must be a tool error with the REST codes,
 * checked by the REST schemas (src/mcp/validate.ts). tools/list and tools/call are answered from the
 * tool table (src/mcp/tools.ts): a new tool is an entry there.
 */
const asServiceError = (err: unknown): ServiceError => toServiceError(err as Parameters<typeof toServiceError>[0]);

function buildMcpServer(deps: McpDeps, metering: Metering, key: AuthenticatedKey, requestId: string): Server {
  const server = new Server({ name: 'facecompute', version: deps.version }, { capabilities: deps.docs ? { tools: {}, resources: {} } : { tools: {} } });
  /** The usage record of one tool call (only of a listed tool: the route column never holds a name a caller made up). */
  const record = (tool: ToolName | DocsToolName, t0: number, err: ServiceError | null, outcome: UsageOutcome) =>
    recordUsage(deps.usage, { surface: 'mcp', auth: key, route: tool, status: err ? err.status : 200, error: err ? err.code : null, outcome, t0, requestId });
  /**
   * Every JSON-RPC request element counts one request against the account's window, as a REST request
   * does (a batch of 50 counts 50); `initialize`, `ping` and notifications do not.
   */
  const count = () => metering.countOrRefuse(key.accountId);
  /** The same for the methods answered as JSON-RPC errors (lists, resource reads). */
  const counted = async <T>(answer: () => T): Promise<T> => {
    try {
      await count();
    } catch (err) {
      if (!isServiceError(err)) throw err;
      throw new McpError(RATE_LIMITED_RPC as ErrorCode, `${err.code}: ${err.detail}`, { ...err.toBody(), retry_after: Number(err.headers['retry-after'] ?? 1) });
    }
    return answer();
  };
  const run = async (tool: ToolName | DocsToolName, t0: number, call: PreparedCall) => {
    // Refused before metering (the rate limit): nothing was charged.
    let outcome: UsageOutcome = 'not_charged';
    try {
      await count();
      // The REST compute routes' metering (src/service/lifecycle/metering.ts), per tool call: a
      // free tool takes no slot and reserves nothing; docs tools never reserve (docs-tools.ts).
      const result = (await (!isDocsTool(tool) && TOOLS[tool].free
        ? call(deps.compute, metering.context(key, requestId))
        : metering.run(
            key.accountId,
            (m) => call(deps.compute, metering.context(key, requestId, m)),
            (o) => {
              outcome = o;
            },
          ))) as Record<string, unknown>;
      record(tool, t0, null, outcome);
      return { content: [{ type: 'text' as const, text: isDocsTool(tool) ? deps.docs!.summarize(tool, result) : TOOLS[tool].summarize(result) }], structuredContent: result };
    } catch (err) {
      if (!isServiceError(err) || err.status >= 500) deps.logger.error({ err, requestId, tool }, 'mcp tool failed');
      const answer = toolError(err);
      record(tool, t0, asServiceError(err), outcome);
      return answer;
    }
  };
  server.setRequestHandler(ListToolsRequestSchema, () => counted(() => ({ tools: deps.docs ? [...LISTED_TOOLS, ...LISTED_DOCS_TOOLS] : LISTED_TOOLS })));
  if (deps.docs) {
    const docs = deps.docs;
    server.setRequestHandler(ListResourcesRequestSchema, () => counted(() => ({ resources: docs.listResources() })));
    server.setRequestHandler(ReadResourceRequestSchema, (request) => counted(() => docs.readResource(request.params.uri)));
  }
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = request.params.name;
    if (deps.docs && isDocsTool(tool)) {
      const docs = deps.docs;
      return run(tool, performance.now(), async () => docs.call(tool, request.params.arguments ?? {}));
    }
    if (!isToolName(tool)) return counted(() => {
      throw new McpError(ErrorCode.InvalidParams, `Tool ${tool} not found`);
    });
    const t0 = performance.now();
    let call: PreparedCall;
    try {
      call = TOOLS[tool].prepare(request.params.arguments ?? {}, deps.arrayLimits);
    } catch (err) {
      // A call refused on its arguments still counts against the window.
      await count().catch(() => undefined);
      record(tool, t0, asServiceError(err), 'not_charged');
      return toolError(err);
    }
    return run(tool, t0, call);
  });
  return server;
}

/** The JSON-RPC error code of a rate-limited list or read (the implementation-defined server range). */
const RATE_LIMITED_RPC = -32029;

/** tools/list's answer, the same for every caller: built once. */
const LISTED_TOOLS = (Object.keys(TOOLS) as ToolName[]).map((name) => ({ name, description: TOOLS[name].description, inputSchema: TOOLS[name].inputSchema, outputSchema: TOOL_OUTPUTS[name] }));

export async function buildMcp(deps: McpDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: deps.maxBodyBytes,
    ...requestIdOptions(),
    ...CLOSING_OPTIONS,
    ...transportOptions(deps.requestReceiveTimeoutMs),
  });
  // First: every later hook may register what its request gives back on close.
  await app.register(requestCleanup);

  registerContractHeaders(app);
  useJsonBodyParser(app, { maxValues: deps.maxJsonValues });
  registerTransportGuards(app);
  registerClosingRefusal(app, 'MCP endpoint');

  const notFound = () => new ServiceError('not_found', 'the MCP endpoint is at /mcp');
  registerRouteGuard(app, { notFound });
  // The one table and handler of every surface (src/http/error-handler.ts); MCP names its body limit.
  registerErrorHandling(app, { notFound, tooLargeDetail: `MCP requests are limited to ${deps.maxBodyBytes} bytes` });

  // DNS-rebinding protection: a browser page may only call us from an allowed origin.
  app.addHook('onRequest', async (req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !deps.allowedOrigins.includes(origin)) {
      throw new ServiceError('origin_not_allowed', `origin ${origin} is not allowed to call the MCP endpoint`);
    }
  });

  // The keyed door (src/service/lifecycle/door.ts) with MCP's key policy, from the headers alone,
  // before any body is read: an anonymous or badly keyed request to /mcp is refused without its body
  // being received, buffered or parsed; a key whose window is spent too. Each JSON-RPC element counts
  // and each tool call takes its slot as it runs (buildMcpServer).
  const metering = new Metering({ accounts: deps.accounts, limiter: deps.limiter, windowMs: deps.rateLimitWindowMs ?? 60_000, strikes: deps.strikes, fetchBudget: deps.fetchBudget ?? null });
  await app.register(keyedDoor, {
    accounts: deps.accounts,
    metering,
    bodyBudget: deps.bodyBudget,
    policy: MCP_KEYS,
    meter: 'call',
    bodyLimitOf: () => deps.maxBodyBytes,
    refuseDeclaredOver: false,
    ...(deps.uploadRate ? { uploadRate: deps.uploadRate } : {}),
  });

  // Probes (Kubernetes): the MCP endpoint cannot authenticate or count a call without its database
  // and, when configured, Redis.
  const checks: ReadinessCheck[] = [];
  if (deps.accounts.ping) checks.push({ error: 'database_unavailable', run: () => deps.accounts.ping!() });
  if (deps.limiter.kind === 'redis') checks.push({ error: 'limiter_unavailable', run: () => deps.limiter.ping() });
  registerProbes(app, deps.version, checks);

  app.post('/mcp', { config: { keyed: true } }, async (req, reply) => {
    const server = buildMcpServer(deps, metering, req.auth!, req.id);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    onClose(req, () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    reply.hijack();
    await transport.handleRequest(req.raw, reply.raw, req.body);
  });
  // Stateless: no server-initiated streams and no sessions to delete.
  const notAllowed = async (_req: FastifyRequest, reply: FastifyReply) => {
    return reply.status(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this endpoint is stateless; use POST.' }, id: null });
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
  return app;
}
