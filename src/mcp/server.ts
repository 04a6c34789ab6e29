/**
 * The MCP endpoint: Streamable HTTP in stateless mode (any replica answers any request), JSON
 * responses, MCP keys only. Each HTTP request gets a fresh McpServer bound to the caller's account,
 * as the SDK recommends for stateless servers.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, McpError, ReadResourceRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ServiceError, fromNative, isServiceError } from '../errors/index.js';
import { registerTransportGuards, transportOptions } from '../http/transport-guards.js';
import { declaresBody, registerRouteGuard } from '../http/route-guard.js';
import { bearerToken } from '../http/bearer.js';
import { registerContractHeaders, requestIdOptions } from '../http/contract-headers.js';
import { CLOSING_OPTIONS, registerClosingRefusal } from '../http/closing.js';
import type { Logger } from '../logging/logger.js';
import type { AccountsPort, AuthenticatedKey } from '../accounts/api.js';
import type { ComputeContext, ComputeService } from '../service/compute-service.js';
import type { Limiter } from '../service/limits/limiter.js';
import type { FetchBudget } from '../service/limits/fetch-budget.js';
import { strikeGuard, type StrikeSettings } from '../service/limits/strikes.js';
import { metered } from './metering.js';
import { useJsonBodyParser } from '../http/json-body.js';
import { TOOLS, isToolName, type PreparedCall, type ToolName } from './tools.js';
import type { ArrayLimits } from './bounded-arrays.js';
import { registerProbes, type ReadinessCheck } from '../http/probes.js';
import type { BodyBudget } from '../http/body-budget.js';
import { watchUploadRate, type UploadRate } from '../http/upload-rate.js';
import { countRequests, refuseOver } from '../service/limits/account-limits.js';
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

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's MCP key, authenticated from the headers before the body is read. */
    mcpKey?: AuthenticatedKey;
  }
  interface FastifyContextConfig {
    /** The route takes an MCP key, authenticated from the headers before the body is read. */
    mcpAuth?: boolean;
  }
}

const WWW_AUTHENTICATE = 'Bearer realm="facecompute-mcp", error="invalid_token"';

function toolError(err: unknown): { isError: true; content: Array<{ type: 'text'; text: string }>; structuredContent: { error: string; detail: string } } {
  const e = isServiceError(err) ? err : fromNative(err);
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.detail}` }], structuredContent: e.toBody() };
}

/**
 * The low-level SDK `Server`, not `McpServer`: McpServer validates tool arguments with zod itself and
 * turns a failure into free text, while a bad argument here must be a tool error with the REST codes,
 * checked by the REST schemas (src/mcp/validate.ts). tools/list and tools/call are answered from the
 * tool table (src/mcp/tools.ts): a new tool is an entry there.
 */
function buildMcpServer(deps: McpDeps, key: AuthenticatedKey, requestId: string): Server {
  const server = new Server({ name: 'facecompute', version: deps.version }, { capabilities: deps.docs ? { tools: {}, resources: {} } : { tools: {} } });
  /**
   * The usage record of one tool call (only of a listed tool: the route column never holds a name a
   * caller made up). Its status is the REST status of the same answer (200, or the error's), so that
   * the Usage page counts a refused MCP call as it counts a refused REST one.
   */
  const record = (tool: ToolName | DocsToolName, t0: number, err: ServiceError | null, outcome: UsageOutcome) => {
    deps.usage?.record({
      accountId: key.accountId,
      keyId: key.keyId,
      surface: 'mcp',
      route: tool,
      status: err ? err.status : 200,
      error: err ? err.code : null,
      outcome,
      durationMs: performance.now() - t0,
      requestId,
      at: Date.now(),
    });
  };
  /**
   * Every JSON-RPC request element counts one request against the account's window, as a REST request
   * does (a batch of 50 counts 50); `initialize`, `ping` and notifications do not.
   */
  const windowMs = deps.rateLimitWindowMs ?? 60_000;
  const count = async () => refuseOver(await countRequests(deps.limiter, key.accountId), windowMs);
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
      const ctx: ComputeContext = { requestId, authenticated: true, strikes: strikeGuard(deps.limiter, key.accountId, deps.strikes), ...(deps.fetchBudget ? { fetches: deps.fetchBudget.meter(key.accountId) } : {}) };
      // Docs tools are metered (the rate limit) but never reserve a call (src/mcp/docs-tools.ts).
      const result = (await (!isDocsTool(tool) && TOOLS[tool].free
        ? call(deps.compute, ctx)
        : metered(
            deps,
            key.accountId,
            (reserve) => call(deps.compute, { ...ctx, reserve }),
            (o) => {
              outcome = o;
            },
          ))) as Record<string, unknown>;
      record(tool, t0, null, outcome);
      return { content: [{ type: 'text' as const, text: isDocsTool(tool) ? deps.docs!.summarize(tool, result) : TOOLS[tool].summarize(result) }], structuredContent: result };
    } catch (err) {
      if (!isServiceError(err) || err.status >= 500) deps.logger.error({ err, requestId, tool }, 'mcp tool failed');
      const answer = toolError(err);
      record(tool, t0, fromNative(err), outcome);
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
      record(tool, t0, fromNative(err), 'not_charged');
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

  registerContractHeaders(app);
  useJsonBodyParser(app, { maxValues: deps.maxJsonValues });
  registerTransportGuards(app);
  registerClosingRefusal(app, 'MCP endpoint');

  const notFound = () => new ServiceError('not_found', 'the MCP endpoint is at /mcp');
  registerRouteGuard(app, { notFound });
  const send = (reply: FastifyReply, e: ServiceError) => reply.status(e.status).headers(e.headers).send(e.toBody());

  app.setErrorHandler((err, req, reply) => {
    const status = (err as { statusCode?: number }).statusCode;
    // An unknown route is not_found whatever its body (Fastify's 404 route still parses it).
    if (req.is404 && !isServiceError(err)) return send(reply, notFound());
    if (isServiceError(err)) return send(reply, err);
    if (status === 413) return send(reply, new ServiceError('request_too_large', `MCP requests are limited to ${deps.maxBodyBytes} bytes`));
    if (status !== undefined && status < 500) return send(reply, new ServiceError('invalid_request', 'malformed request'));
    req.log.error({ err }, 'mcp endpoint error');
    return send(reply, new ServiceError('internal_error', 'internal error'));
  });
  app.setNotFoundHandler((_req, reply) => send(reply, notFound()));

  // DNS-rebinding protection: a browser page may only call us from an allowed origin.
  app.addHook('onRequest', async (req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !deps.allowedOrigins.includes(origin)) {
      throw new ServiceError('origin_not_allowed', `origin ${origin} is not allowed to call the MCP endpoint`);
    }
  });

  async function authenticate(req: FastifyRequest): Promise<AuthenticatedKey> {
    const secret = bearerToken(req);
    if (!secret) throw new ServiceError('missing_api_key', 'send your MCP key as Authorization: Bearer <MCP_KEY>', { headers: { 'www-authenticate': 'Bearer realm="facecompute-mcp"' } });
    try {
      return await deps.accounts.authenticate(secret, 'mcp');
    } catch (err) {
      if (isServiceError(err) && err.code === 'invalid_api_key') {
        throw new ServiceError('invalid_api_key', err.detail, { headers: { 'www-authenticate': WWW_AUTHENTICATE } });
      }
      throw err;
    }
  }

  // Authentication from the headers alone, before any body is read: an anonymous or badly keyed
  // request to /mcp is refused without its body being received, buffered or parsed (issue 24: one
  // anonymous 25 MiB body of invalid JSON was parsed, and diagnosed, before the key was looked at).
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.config.mcpAuth !== true) return;
    req.mcpKey = await authenticate(req);
    // A key whose window is spent is refused from the headers, its body unread: past the window
    // every element of a batch would be refused anyway, after the body was parsed and answered.
    // A limiter that cannot answer is not decided here: each element's count fails closed for it.
    const w = await deps.limiter.hit(req.mcpKey.accountId, 0).catch(() => null);
    if (w !== null && w.remaining <= 0) {
      const seconds = Math.max(1, Math.ceil(w.resetMs / 1000));
      throw new ServiceError('rate_limited', `rate limit of ${w.limit} requests per ${Math.ceil((deps.rateLimitWindowMs ?? 60_000) / 1000)} s exceeded; retry in ${seconds} s`, {
        headers: { 'retry-after': String(seconds), ...(declaresBody(req) ? { connection: 'close' } : {}) },
      });
    }
    deps.bodyBudget.hold(req, reply, deps.maxBodyBytes, req.mcpKey.accountId);
    if (deps.uploadRate) watchUploadRate(req, reply, deps.uploadRate);
  });

  // Probes (Kubernetes): the MCP endpoint cannot authenticate or count a call without its database
  // and, when configured, Redis.
  const checks: ReadinessCheck[] = [];
  if (deps.accounts.ping) checks.push({ error: 'database_unavailable', run: () => deps.accounts.ping!() });
  if (deps.limiter.kind === 'redis') checks.push({ error: 'limiter_unavailable', run: () => deps.limiter.ping() });
  registerProbes(app, deps.version, checks);

  app.post('/mcp', { config: { mcpAuth: true } }, async (req, reply) => {
    const server = buildMcpServer(deps, req.mcpKey!, req.id);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.raw.on('close', () => {
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
