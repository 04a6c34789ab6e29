/**
 * The documentation, rendered: /docs/ (docs/README.md), /docs/<page>.md (every docs/*.md page as HTML,
 * with the console's navigation) and their images, and /docs/api, the REST API reference rendered from
 * /openapi.json by Swagger UI (swagger-ui-dist: no dependencies of its own, assets served from
 * node_modules by this route, never a CDN; it runs under the console's nonce CSP with one addition,
 * `connect-src 'self'`, to read /openapi.json). Pages are rendered once, at start-up.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ServiceError } from '../../errors/index.js';
import { SDK_PAGES, renderPage, type RenderedPage } from '../docs/markdown.js';
import { html, Html } from '../views/html.js';
import { layout, pageCsp } from '../views/layout.js';

export interface ReferenceOptions {
  /** The repository's docs/ directory. */
  docsDir: string;
}

const IMAGE_TYPES: Record<string, string> = { png: 'image/png', svg: 'image/svg+xml' };
/** Swagger UI's two files, served under /docs/api/assets/. */
const SWAGGER_ASSETS: Record<string, string> = { 'swagger-ui-bundle.js': 'text/javascript; charset=utf-8', 'swagger-ui.css': 'text/css; charset=utf-8' };

function swaggerDir(): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

/** Swagger UI's options: the console's own document, no calls to the API from the page (it is another origin), no online validator badge. */
const SWAGGER_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  validatorUrl: null,
  supportedSubmitMethods: [],
  displayOperationId: true
});`;

/** Narrow screens: Swagger UI's blocks wrap instead of widening the page. */
const SWAGGER_FIT = `#swagger-ui .swagger-ui .wrapper { padding: 0; max-width: none; }
#swagger-ui .swagger-ui .opblock .opblock-summary { flex-wrap: wrap; }
#swagger-ui .swagger-ui .opblock .opblock-summary-path { word-break: break-all; }
#swagger-ui .swagger-ui table, #swagger-ui .swagger-ui .highlight-code, #swagger-ui .swagger-ui .model-box { max-width: 100%; overflow-x: auto; display: block; }
#swagger-ui .swagger-ui .info { margin: 1rem 0; }
#swagger-ui .swagger-ui .scheme-container { padding: .5rem 0; box-shadow: none; }
#swagger-ui .swagger-ui .opblock-tag { flex-wrap: wrap; }
@media (max-width: 600px) { #swagger-ui .swagger-ui .opblock-tag small { flex-basis: 100%; padding: .25rem 0 0; } }
.api-intro { margin-bottom: 0; }`;

export default async function referenceRoutes(app: FastifyInstance, opts: ReferenceOptions): Promise<void> {
  const pages = new Map<string, RenderedPage>();
  const images = new Map<string, string>();
  const sdkPages = new Map<string, RenderedPage>();
  if (existsSync(opts.docsDir)) {
    for (const name of readdirSync(opts.docsDir)) {
      if (name.endsWith('.md')) pages.set(name, renderPage(readFileSync(join(opts.docsDir, name), 'utf8'), `docs/${name}`));
      const ext = name.split('.').pop() ?? '';
      if (ext in IMAGE_TYPES) images.set(name, join(opts.docsDir, name));
    }
    // The SDK pages: the client libraries' READMEs, beside docs/ in the repository and the runtime tree.
    for (const [language, path] of Object.entries(SDK_PAGES)) {
      const file = join(opts.docsDir, '..', path);
      if (existsSync(file)) sdkPages.set(language, renderPage(readFileSync(file, 'utf8'), path));
    }
    const imageDir = join(opts.docsDir, 'images');
    if (existsSync(imageDir)) for (const name of readdirSync(imageDir)) if ((name.split('.').pop() ?? '') in IMAGE_TYPES) images.set(`images/${name}`, join(imageDir, name));
  }

  function sendPage(reply: FastifyReply, signedIn: boolean, title: string, current: string, body: Html, extra: { head?: Html; scripts?: Html; fetches?: boolean } = {}) {
    const nonce = randomBytes(16).toString('base64');
    const withNonce = (h: Html | undefined) => (h ? new Html(h.value.replaceAll('NONCE', nonce)) : undefined);
    const head = withNonce(extra.head);
    const scripts = withNonce(extra.scripts);
    return reply
      .header('content-security-policy', pageCsp(nonce, { fetches: extra.fetches ?? false }))
      .type('text/html; charset=utf-8')
      .send(layout({ title, nonce, csrf: '', current, signedIn, body, ...(head ? { head } : {}), ...(scripts ? { scripts } : {}) }).value);
  }

  function markdownPage(name: string, from: Map<string, RenderedPage> = pages) {
    return async (req: FastifyRequest, reply: FastifyReply) => {
      const page = from.get(name);
      if (!page) throw new ServiceError('not_found', 'no such documentation page');
      const signedIn = (await app.optionalAccount(req)) !== null;
      return sendPage(reply, signedIn, page.title, '/docs/', html`<article class="doc">${new Html(page.html)}</article>`);
    };
  }

  app.get('/docs', async (_req, reply) => reply.redirect('/docs/', 301));
  app.get('/docs/', markdownPage('README.md'));
  for (const name of pages.keys()) if (name !== 'README.md') app.get(`/docs/${name}`, markdownPage(name));
  for (const language of sdkPages.keys()) app.get(`/docs/sdk/${language}`, markdownPage(language, sdkPages));

  for (const [path, file] of images) {
    const type = IMAGE_TYPES[path.split('.').pop() ?? '']!;
    app.get(`/docs/${path}`, async (_req, reply) =>
      reply.type(type).header('cache-control', 'public, max-age=3600').header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; sandbox").send(readFileSync(file)),
    );
  }

  app.get('/docs/api', async (req, reply) => {
    const signedIn = (await app.optionalAccount(req)) !== null;
    const body = html`<h1 class="api-intro">REST API reference</h1>
<p>Rendered from <a href="/openapi.json">/openapi.json</a>. The guide to it, with examples and what each field means, is <a href="/docs/api.md">the API page</a>; every error code is on <a href="/docs/errors.md">the errors page</a>.</p>
<div id="swagger-ui"></div>`;
    return sendPage(reply, signedIn, 'API reference', '/docs/api', body, {
      head: new Html(`<link rel="stylesheet" nonce="NONCE" href="/docs/api/assets/swagger-ui.css"><style nonce="NONCE">${SWAGGER_FIT}</style>`),
      scripts: new Html(`<script nonce="NONCE" src="/docs/api/assets/swagger-ui-bundle.js"></script><script nonce="NONCE">${SWAGGER_INIT}</script>`),
      fetches: true,
    });
  });

  const swagger = swaggerDir();
  for (const [file, type] of Object.entries(SWAGGER_ASSETS)) {
    const body = readFileSync(join(swagger, file));
    app.get(`/docs/api/assets/${file}`, async (_req, reply) => reply.type(type).header('cache-control', 'public, max-age=3600').send(body));
  }
}
