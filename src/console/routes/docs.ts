/** Agent-readable documents: /llms.txt, /skill.md and the repository's OpenAPI document. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { readFile } from 'node:fs/promises';
import { ServiceError } from '../../errors/index.js';
import { llmsTxt, skillMd, type DocUrls } from '../agent-docs.js';
import type { FreeCallLimits } from '../../accounts/index.js';
import { withServer } from '../../http/openapi.js';

export interface DocsOptions {
  freeCalls: FreeCallLimits;
  publicBaseUrl: string;
  publicMcpUrl: string;
  openapiPath: string;
}

export default async function docsRoutes(app: FastifyInstance, opts: DocsOptions): Promise<void> {
  // The console has no configured public URL of its own; the address the caller used is the one
  // that works for them.
  const urls = (req: FastifyRequest): DocUrls => ({ console: `${req.protocol}://${req.host}`, base: opts.publicBaseUrl.replace(/\/+$/, ''), mcp: opts.publicMcpUrl });

  app.get('/llms.txt', async (req, reply) => reply.type('text/plain; charset=utf-8').send(llmsTxt(urls(req), opts.freeCalls)));
  app.get('/skill.md', async (req, reply) => reply.type('text/markdown; charset=utf-8').send(skillMd(urls(req), opts.freeCalls)));

  app.get('/openapi.json', async (_req, reply) => {
    let text: string;
    try {
      text = await readFile(opts.openapiPath, 'utf8');
    } catch (err) {
      throw new ServiceError('not_found', 'the OpenAPI document is not installed on this server', { cause: err });
    }
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      throw new ServiceError('internal_error', 'the installed OpenAPI document is not valid JSON', { cause: err });
    }
    // `servers` is this deployment's gateway, so that a client (or a fuzzer) generated from the
    // document calls the right address: FACECOMPUTE_PUBLIC_BASE_URL, else HOST:GATEWAY_PORT.
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(withServer(doc, opts.publicBaseUrl), null, 2) + '\n');
  });
}
