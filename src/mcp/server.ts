/**
 * The MCP endpoint: Streamable HTTP in stateless mode (any replica answers any request), JSON
 * responses, MCP keys only. Each HTTP request gets a fresh McpServer bound to the caller's account,
 * as the SDK recommends for stateless servers.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ServiceError, fromNative, isServiceError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { AccountsPort, AuthenticatedKey } from '../accounts/ports.js';
import type { ComputeService } from '../gateway/compute/service.js';
import type { Limiter } from '../gateway/limits/limiter.js';
import { metered } from './metering.js';
import { TOOL_DESCRIPTIONS, compareInput, representInput, summarize, verifyInput, type ToolName } from './tools.js';
import { comparePlain } from '../gateway/compute/compare-result.js';

export interface McpDeps {
  logger: Logger;
  accounts: AccountsPort;
  limiter: Limiter;
  /** Compute with the MCP image policy (HTTPS only, no local files). */
  compute: ComputeService;
  maxBodyBytes: number;
  /** Browser origins allowed to call; requests without Origin (agents, CLIs) are allowed. */
  allowedOrigins: string[];
  version: string;
}

const WWW_AUTHENTICATE = 'Bearer realm="facecompute-mcp", error="invalid_token"';

function bearer(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? (m[1] as string) : null;
}

function toolError(err: unknown): { isError: true; content: Array<{ type: 'text'; text: string }>; structuredContent: { error: string; detail: string } } {
  const e = isServiceError(err) ? err : fromNative(err);
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.detail}` }], structuredContent: e.toBody() };
}

function buildMcpServer(deps: McpDeps, key: AuthenticatedKey, requestId: string): McpServer {
  const server = new McpServer({ name: 'facecompute', version: deps.version });
  const ctx = { requestId, authenticated: true };
  const run = async (tool: ToolName, work: () => Promise<unknown>) => {
    try {
      const result = (await (tool === 'get_capabilities' ? work() : metered(deps, key.accountId, work))) as Record<string, unknown>;
      return { content: [{ type: 'text' as const, text: summarize(tool, result) }], structuredContent: result };
    } catch (err) {
      if (!isServiceError(err) || err.status >= 500) deps.logger.error({ err, requestId, tool }, 'mcp tool failed');
      return toolError(err);
    }
  };
  server.registerTool('get_capabilities', { description: TOOL_DESCRIPTIONS.get_capabilities, inputSchema: {} }, () =>
    run('get_capabilities', () => deps.compute.capabilities({ requestId })),
  );
  server.registerTool('verify_faces', { description: TOOL_DESCRIPTIONS.verify_faces, inputSchema: verifyInput }, (args) =>
    run('verify_faces', () => deps.compute.verify(args as never, ctx)),
  );
  server.registerTool('represent_face', { description: TOOL_DESCRIPTIONS.represent_face, inputSchema: representInput }, (args) =>
    run('represent_face', () => deps.compute.represent(args as never, ctx)),
  );
  server.registerTool('compare_inputs', { description: TOOL_DESCRIPTIONS.compare_inputs, inputSchema: compareInput }, (args) =>
    run('compare_inputs', async () => comparePlain(await deps.compute.compare(args as never, ctx))),
  );
  return server;
}

export async function buildMcp(deps: McpDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    bodyLimit: deps.maxBodyBytes,
    genReqId: () => randomUUID(),
  });

  const send = (reply: FastifyReply, e: ServiceError) => reply.status(e.status).headers(e.headers).send(e.toBody());

  app.setErrorHandler((err, req, reply) => {
    const status = (err as { statusCode?: number }).statusCode;
    if (isServiceError(err)) return send(reply, err);
    if (status === 413) return send(reply, new ServiceError('request_too_large', `MCP requests are limited to ${deps.maxBodyBytes} bytes`));
    if (status !== undefined && status < 500) return send(reply, new ServiceError('invalid_request', 'malformed request'));
    req.log.error({ err }, 'mcp endpoint error');
    return send(reply, new ServiceError('internal_error', 'internal error'));
  });
  app.setNotFoundHandler((_req, reply) => send(reply, new ServiceError('not_found', 'the MCP endpoint is at /mcp')));

  // DNS-rebinding protection: a browser page may only call us from an allowed origin.
  app.addHook('onRequest', async (req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !deps.allowedOrigins.includes(origin)) {
      throw new ServiceError('origin_not_allowed', `origin ${origin} is not allowed to call the MCP endpoint`);
    }
  });

  async function authenticate(req: FastifyRequest): Promise<AuthenticatedKey> {
    const secret = bearer(req);
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

  app.post('/mcp', async (req, reply) => {
    const key = await authenticate(req);
    const server = buildMcpServer(deps, key, req.id);
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
  const notAllowed = async (req: FastifyRequest, reply: FastifyReply) => {
    await authenticate(req);
    return reply.status(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this endpoint is stateless; use POST.' }, id: null });
  };
  app.get('/mcp', notAllowed);
  app.delete('/mcp', notAllowed);
  return app;
}
