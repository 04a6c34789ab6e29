/** Agent-readable documents: /llms.txt, /llms-full.txt, /skill.md and the repository's OpenAPI document. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { readFile } from 'node:fs/promises';
import { ServiceError } from '../../errors/index.js';
import { llmsFullTxt, llmsTxt, skillMd, type DocUrls } from '../agent-docs.js';
import { loadDocPages } from '../../docs-index/pages.js';
import type { FreeCallLimits } from '../../accounts/index.js';
import { withServer } from '../../http/openapi.js';
import skillsRoutes from './skills.js';

export interface DocsOptions {
  freeCalls: FreeCallLimits;
  publicBaseUrl: string;
  publicMcpUrl: string;
  openapiPath: string;
  /** The docs/ pages /llms-full.txt concatenates. */
  docsDir: string;
}

export default async function docsRoutes(app: FastifyInstance, opts: DocsOptions): Promise<void> {
  // The console has no configured public URL of its own; the address the caller used is the one
  // that works for them.
  const urls = (req: FastifyRequest): DocUrls => ({ console: `${req.protocol}://${req.host}`, base: opts.publicBaseUrl.replace(/\/+$/, ''), mcp: opts.publicMcpUrl });

  app.get('/llms.txt', async (req, reply) => reply.type('text/plain; charset=utf-8').send(llmsTxt(urls(req), opts.freeCalls)));
  await app.register(skillsRoutes, { freeCalls: opts.freeCalls, urls });

  // Read once: the pages are the installed docs, not user input.
  const pages = loadDocPages(opts.docsDir);
  app.get('/llms-full.txt', async (req, reply) => reply.type('text/plain; charset=utf-8').send(llmsFullTxt(urls(req), opts.freeCalls, pages)));
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
