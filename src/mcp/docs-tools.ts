/**
 * The documentation on the MCP endpoint: the `search_docs` tool (ranked passages, each with the page
 * and section it comes from) and every docs page as a resource (resources/list, resources/read). The
 * pages are the ones the console serves (src/docs-index/), read and indexed once when the endpoint is
 * built, with this deployment's addresses filled in.
 *
 * Docs calls are free: they need an MCP key (as every /mcp request) and count against the account's
 * rate limit like any tool call (the search is CPU work), but never reserve a free call — their work
 * ignores ComputeContext.reserve, so the metering (src/service/lifecycle/metering.ts) settles them `not_charged`. They are recorded
 * on the Usage page as free requests (route `search_docs`), so that an account sees every call its
 * keys made; resources/list and resources/read, like tools/list, are protocol reads and are neither
 * metered nor recorded.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { loadDocPages, type DocPage } from '../docs-index/pages.js';
import { createDocsSearch, type DocsSearch } from '../docs-index/search.js';
import { pageForAgents, type DocUrls } from '../docs-index/for-agents.js';
import { argumentsError, compileArguments, type ValidateFunction } from './validate.js';

/** The most passages one search returns. */
export const MAX_DOC_RESULTS = 20;

/**
 * The docs tools' inputs as JSON Schema, validated by src/mcp/validate.ts (Ajv, the gateway's options)
 * as the compute tools' are, so a bad argument gets the same invalid_request details.
 */
export const DOCS_TOOL_INPUTS = {
  search_docs: {
    type: 'object',
    additionalProperties: false,
    required: ['query'],
    properties: {
      query: {
        type: 'string',
        minLength: 1,
        maxLength: 500,
        pattern: '\\S',
        description: 'What you want to know, in words or as an error code, e.g. "what does queue_full mean" or "which threshold for 1:N search".',
      },
      limit: { type: 'integer', minimum: 1, maximum: MAX_DOC_RESULTS, description: `How many passages to return, best first (1-${MAX_DOC_RESULTS}, default 5).` },
    },
  },
} as const;

interface SearchArguments {
  query: string;
  limit?: number;
}

export type DocsToolName = keyof typeof DOCS_TOOL_INPUTS;

export const DOCS_TOOL_DESCRIPTIONS: Record<DocsToolName, string> = {
  search_docs:
    "Search this service's documentation (API, errors, limits, thresholds, accounts, MCP, migration from DeepFace) and get the best-matching passages, ranked, each with its page, section and URL. Free: it does not consume a call. The whole pages are also MCP resources (resources/list, resources/read).",
};

const passage = {
  type: 'object',
  required: ['page', 'page_title', 'section', 'anchor', 'url', 'score', 'text', 'truncated'],
  additionalProperties: false,
  properties: {
    page: { type: 'string', description: 'The page file, e.g. errors.md; its resource URI is facecompute://docs/<page>.' },
    page_title: { type: 'string' },
    section: { type: 'string', description: 'The heading the passage sits under (with the entry, for one row of a reference table).' },
    anchor: { type: 'string', description: "The heading's anchor on the page ('' for the page's start)." },
    url: { type: 'string', description: 'The section on the console: <console>/docs/<page>#<anchor>.' },
    score: { type: 'number', description: 'Relevance (BM25+), higher first; comparable within one answer only.' },
    text: { type: 'string', description: "The section's Markdown, cut at about 1,500 characters." },
    truncated: { type: 'boolean', description: 'Whether text was cut; read the whole page as a resource.' },
  },
} as const;

export const DOCS_TOOL_OUTPUTS: Record<DocsToolName, { type: 'object'; [k: string]: unknown }> = {
  search_docs: {
    type: 'object',
    required: ['query', 'results'],
    additionalProperties: false,
    properties: { query: { type: 'string' }, results: { type: 'array', items: passage, description: 'Best first; empty when nothing matches.' } },
  },
};

export const DOCS_RESOURCE_PREFIX = 'facecompute://docs/';

export function isDocsTool(name: string): name is DocsToolName {
  return Object.prototype.hasOwnProperty.call(DOCS_TOOL_INPUTS, name);
}

export interface DocsCorpus {
  readonly pages: readonly DocPage[];
  /** Runs a docs tool: its arguments checked (invalid_request), its result as structuredContent. */
  call(name: DocsToolName, args: unknown): Record<string, unknown>;
  summarize(name: DocsToolName, result: Record<string, unknown>): string;
  listResources(): Array<{ uri: string; name: string; title: string; description: string; mimeType: string }>;
  readResource(uri: string): { contents: Array<{ uri: string; mimeType: string; text: string }> };
}

/** Reads docs/ and builds the search index: once, when the endpoint is built. */
export function createDocsCorpus(docsDir: string, urls: DocUrls): DocsCorpus {
  const pages = loadDocPages(docsDir);
  const index: DocsSearch = createDocsSearch(pages);
  const byName = new Map(pages.map((p) => [p.name, p]));
  let validate: ValidateFunction<SearchArguments> | undefined;
  const pageUrl = (name: string) => (name === 'README.md' ? `${urls.console}/docs/` : `${urls.console}/docs/${name}`);
  const listed = pages.map((p) => ({ uri: `${DOCS_RESOURCE_PREFIX}${p.name}`, name: p.name, title: p.title, description: `${p.title} (${pageUrl(p.name)})`, mimeType: 'text/markdown' }));
  const rendered = new Map<string, string>();
  return {
    pages,
    call(name, args) {
      validate ??= compileArguments<SearchArguments>(DOCS_TOOL_INPUTS[name]);
      if (!validate(args)) throw argumentsError(validate.errors);
      const query = args.query.trim();
      const limit = args.limit;
      const results = index.search(query, limit ?? 5).map((p) => ({
        ...p,
        url: `${pageUrl(p.page)}${p.anchor ? `#${p.anchor}` : ''}`,
        text: pageForAgents(p.text, urls),
      }));
      return { query, results };
    },
    summarize(_name, result) {
      const results = result['results'] as Array<{ page: string; section: string }>;
      if (results.length === 0) return 'No passage of the documentation matches.';
      return `${results.length} passage(s), best first: ${results.map((r) => `${r.page} § ${r.section}`).join('; ')}.`;
    },
    // The list and each page's agent text are built once and served from memory: a batch of 50
    // resources/list or resources/read costs 50 lookups, not 50 renderings of the docs.
    listResources() {
      return listed;
    },
    readResource(uri) {
      const page = uri.startsWith(DOCS_RESOURCE_PREFIX) ? byName.get(uri.slice(DOCS_RESOURCE_PREFIX.length)) : undefined;
      // MCP's "resource not found" code (specification, server/resources: error handling).
      if (!page) throw new McpError(-32002 as ErrorCode, `Resource not found: ${uri.slice(0, 200)}`, { uri: uri.slice(0, 200) });
      let text = rendered.get(page.name);
      if (text === undefined) rendered.set(page.name, (text = pageForAgents(page.markdown, urls)));
      return { contents: [{ uri, mimeType: 'text/markdown', text }] };
    },
  };
}

/** The docs tools as tools/list shows them: input and output schemas. */
export const LISTED_DOCS_TOOLS = (Object.keys(DOCS_TOOL_INPUTS) as DocsToolName[]).map((name) => ({
  name,
  description: DOCS_TOOL_DESCRIPTIONS[name],
  inputSchema: DOCS_TOOL_INPUTS[name] as unknown as { type: 'object'; [k: string]: unknown },
  outputSchema: DOCS_TOOL_OUTPUTS[name],
  annotations: { readOnlyHint: true, openWorldHint: false },
}));
