/**
 * The documentation on the MCP endpoint (docs/mcp.md "Documentation tools"), over real HTTP with the
 * SDK's client and with the MCP Inspector's CLI:
 * - tools/list gives every tool an input and an output schema; search_docs' answers match its schema;
 * - search_docs ranks the section that answers first ("what does queue_full mean" → the errors table's
 *   queue_full row; "which threshold for 1:N search" → choosing-a-threshold.md's 1:N search entry),
 *   with page, section and URL, from an index built when the endpoint is built;
 * - every docs page is a resource (resources/list), read back with this deployment's addresses;
 * - docs calls need an MCP key, are rate limited, and consume no free call (even with none left);
 *   each is recorded on the Usage page as a free (not_charged) request.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore, type AccountsStore } from '../src/accounts/index.js';
import { createMcp } from '../src/mcp/main.js';
import { createLogger } from '../src/logging/logger.js';
import { createMemoryLimiter } from '../src/service/limits/memory.js';
import type { UsageEvent } from '../src/accounts/usage/recorder.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { REPO_ROOT } from './helpers/shared.js';

const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), 'fc-mcp-docs-'));
// A docs folder of our own: the real pages plus one planted page, to show the index is built from the
// folder at start-up (and only then).
const docsDir = mkdtempSync(join(tmpdir(), 'fc-mcp-docs-pages-'));
cpSync(join(REPO_ROOT, 'docs'), docsDir, { recursive: true });
writeFileSync(join(docsDir, 'planted.md'), '# Planted page\n\n## Zanzibar quokkas\n\nThe quokka of Zanzibar is a planted word.\n');
const pageNames = readdirSync(docsDir).filter((n) => n.endsWith('.md')).sort();

const config = loadConfig({
  FACECOMPUTE_DATA_DIR: dataDir,
  FACECOMPUTE_LOG_LEVEL: 'silent',
  FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1',
  FACECOMPUTE_FREE_CALLS_ANONYMOUS: '2',
  FACECOMPUTE_PUBLIC_CONSOLE_URL: 'https://console.facecompute.example',
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
});
const CONSOLE = 'https://console.facecompute.example';
const RATE = 40;
let store: AccountsStore;
let url: string;
let closeMcp: () => Promise<void>;
const usage: UsageEvent[] = [];

async function account(): Promise<{ id: string; mcp: string; rest: string }> {
  const s = await store.signupAnonymous(`10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`);
  const mcp = await store.createKey(s.account.id, 'mcp', 'agent');
  const rest = await store.createKey(s.account.id, 'rest', 'rest');
  return { id: s.account.id, mcp: mcp.key, rest: rest.key };
}

async function client(key: string): Promise<Client> {
  const c = new Client({ name: 'facecompute-docs-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
}

interface Passage { page: string; page_title: string; section: string; anchor: string; url: string; score: number; text: string; truncated: boolean }

async function search(c: Client, query: string, limit?: number): Promise<Passage[]> {
  const r = await c.callTool({ name: 'search_docs', arguments: { query, ...(limit ? { limit } : {}) } });
  if (r.isError) throw new Error(JSON.stringify(r.structuredContent));
  return (r.structuredContent as { results: Passage[] }).results;
}

t.before(async () => {
  store = await createAccountsStore(config);
  const limiter = createMemoryLimiter({ requests: RATE, windowMs: 60_000, concurrent: 10 });
  const mcp = await createMcp({ config, accounts: store, limiter, upstream: stubUpstream(), logger: createLogger('test', 'silent'), usage: { record: (e) => usage.push(e) }, docsDir });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(mcp.app.server.address() as { port: number }).port}/mcp`;
  closeMcp = () => mcp.app.close();
  // Built once: a page written after start-up is not in the index.
  writeFileSync(join(docsDir, 'late.md'), '# Late page\n\nThe wombat of Madagascar arrived late.\n');
});

t.teardown(async () => {
  await closeMcp?.();
  await store?.close();
});

t.test('tools/list: every tool has an input and an output schema', async (t) => {
  const c = await client((await account()).mcp);
  t.teardown(() => c.close());
  const { tools } = await c.listTools();
  t.same(tools.map((x) => x.name).sort(), ['compare_inputs', 'get_capabilities', 'represent_face', 'search_docs', 'verify_faces']);
  for (const tool of tools) {
    t.equal(tool.inputSchema.type, 'object', `${tool.name} input`);
    t.equal(tool.outputSchema?.type, 'object', `${tool.name} output`);
    t.ok(Object.keys(tool.outputSchema?.properties ?? {}).length > 0, `${tool.name}: its output's properties`);
  }
  const docs = tools.find((x) => x.name === 'search_docs')!;
  t.same(docs.inputSchema.required, ['query']);
  t.match(docs.description, /Free: it does not consume a call/);
  const out = docs.outputSchema as unknown as { properties: { results: { items: { required: string[] } } } };
  t.same(out.properties.results.items.required, ['page', 'page_title', 'section', 'anchor', 'url', 'score', 'text', 'truncated']);
  const verify = tools.find((x) => x.name === 'verify_faces')!;
  t.same((verify.outputSchema as { required: string[] }).required.slice(0, 3), ['verified', 'distance', 'threshold'], "verify_faces' output is the REST answer's schema");
  t.notOk('$id' in (verify.outputSchema as object), 'listed without $id');
});

t.test('search_docs ranks the section that answers first, with its page, section and URL', async (t) => {
  const c = await client((await account()).mcp);
  t.teardown(() => c.close());
  await c.listTools(); // the SDK client then checks each answer against search_docs' outputSchema
  const queue = await search(c, 'what does queue_full mean');
  t.equal(queue[0]?.page, 'errors.md', JSON.stringify(queue.map((p) => `${p.page} § ${p.section}`)));
  t.equal(queue[0]?.section, 'Errors: queue_full');
  t.equal(queue[0]?.url, `${CONSOLE}/docs/errors.md#errors`);
  t.match(queue[0]?.text, /\| `queue_full` \| 503 \|/);
  t.equal(queue.length, 5, 'five passages by default');
  for (let i = 1; i < queue.length; i++) t.ok(queue[i - 1]!.score >= queue[i]!.score, 'best first');

  const threshold = await search(c, 'which threshold for 1:N search');
  t.equal(threshold[0]?.page, 'choosing-a-threshold.md', JSON.stringify(threshold.map((p) => `${p.page} § ${p.section}`)));
  t.equal(threshold[0]?.section, 'By use case: 1:N search');
  t.equal(threshold[0]?.anchor, 'by-use-case');
  t.equal(threshold[0]?.page_title, 'Choosing a threshold');

  const env = await search(c, 'FACECOMPUTE_USAGE_RETENTION_DAYS', 1);
  t.equal(env.length, 1, 'limit');
  t.same([env[0]?.page, env[0]?.section], ['configuration.md', 'Configuration: FACECOMPUTE_USAGE_RETENTION_DAYS']);

  const planted = await search(c, 'quokka Zanzibar');
  t.same([planted[0]?.page, planted[0]?.section, planted[0]?.url], ['planted.md', 'Zanzibar quokkas', `${CONSOLE}/docs/planted.md#zanzibar-quokkas`], 'the pages in the docs folder at start-up');
  t.same(await search(c, 'wombat Madagascar'), [], 'a page written after start-up is not indexed: built once');
  t.same(await search(c, 'xylophonist'), [], 'no match is an empty list');
  // Passages carry the deployment's addresses, not the local defaults.
  const quick = await search(c, 'quickstart GW gateway console', 10);
  const texts = quick.map((p) => p.text).join('\n');
  t.notOk(/localhost:808[02]|127\.0\.0\.1:8081/.test(texts), 'no local default address in passages');
});

t.test('bad arguments are invalid_request tool errors', async (t) => {
  const c = await client((await account()).mcp);
  t.teardown(() => c.close());
  for (const [args, re] of [[{}, /query/], [{ query: '   ' }, /query/], [{ query: 'x', limit: 21 }, /limit/], [{ query: 'x', verbose: true }, /verbose|unrecognized/i], [{ query: 'x'.repeat(501) }, /query/]] as const) {
    const r = await c.callTool({ name: 'search_docs', arguments: args });
    t.ok(r.isError, JSON.stringify(args).slice(0, 60));
    const e = r.structuredContent as { error: string; detail: string };
    t.equal(e.error, 'invalid_request');
    t.match(e.detail, re);
  }
});

t.test('every docs page is a resource, read back with the deployment\'s addresses', async (t) => {
  const c = await client((await account()).mcp);
  t.teardown(() => c.close());
  const { resources } = await c.listResources();
  t.same(resources.map((r) => r.name).sort(), pageNames, 'one per page of the docs folder at start-up');
  for (const r of resources) {
    t.equal(r.uri, `facecompute://docs/${r.name}`);
    t.equal(r.mimeType, 'text/markdown');
    t.ok(r.title && r.title.length > 0, `${r.name} has its title`);
  }
  t.equal(resources.find((r) => r.name === 'errors.md')?.title, 'Errors');
  const read = await c.readResource({ uri: 'facecompute://docs/quickstart.md' });
  const text = (read.contents[0] as { text: string }).text;
  t.match(text, /^# Quickstart/);
  t.match(text, 'GW=https://api.facecompute.example');
  t.notMatch(text, /localhost:8080/);
  t.equal(read.contents[0]?.mimeType, 'text/markdown');
  const errors = (await c.readResource({ uri: 'facecompute://docs/errors.md' })).contents[0] as { text: string };
  t.equal(errors.text.length > 5000, true, 'the whole page');
  for (const uri of ['facecompute://docs/nope.md', 'facecompute://docs/../package.json', 'file:///etc/passwd']) {
    await t.rejects(c.readResource({ uri }), { code: -32002 }, `${uri}: resource not found`);
  }
});

t.test('docs need an MCP key', async (t) => {
  const { rest } = await account();
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_docs', arguments: { query: 'queue_full' } } });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  for (const [auth, code] of [[undefined, 'missing_api_key'], [`Bearer ${rest}`, 'invalid_api_key'], ['Bearer fc_mcp_nope', 'invalid_api_key']] as const) {
    const res = await fetch(url, { method: 'POST', headers: { ...headers, ...(auth ? { authorization: auth } : {}) }, body });
    t.equal(res.status, 401, String(auth));
    t.equal(((await res.json()) as { error: string }).error, code);
  }
  const list = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/list', params: {} }) });
  t.equal(list.status, 401, 'resources/list too');
});

t.test('docs calls consume no free call, even with none left, and are recorded as free', async (t) => {
  const a = await account();
  const c = await client(a.mcp);
  t.teardown(() => c.close());
  const before = usage.length;
  for (let i = 0; i < 5; i++) await search(c, 'rate limit headers');
  await c.readResource({ uri: 'facecompute://docs/limits.md' });
  t.equal((await store.getAccount(a.id)).free_calls.used, 0, 'five searches and a read used no call');
  const mine = usage.slice(before).filter((e) => e.accountId === a.id);
  t.equal(mine.length, 5, 'each search recorded; the resource read is not a tool call');
  for (const e of mine) t.match(e, { surface: 'mcp', route: 'search_docs', status: 200, error: null, outcome: 'not_charged' });
  // No free calls left: compute is refused, docs still answer.
  await store.consume(a.id);
  await store.consume(a.id);
  t.equal((await store.getAccount(a.id)).free_calls.remaining, 0);
  const verify = await c.callTool({ name: 'compare_inputs', arguments: { source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.2)] } });
  t.equal((verify.structuredContent as { error?: string }).error, 'insufficient_credits', 'compute is refused');
  t.equal((await search(c, 'insufficient_credits'))[0]?.section, 'Errors: insufficient_credits', 'search_docs still answers');
  t.equal((await store.getAccount(a.id)).free_calls.used, 2, 'still only the two consumed by hand');
});

t.test('docs calls count against the rate limit', async (t) => {
  const c = await client((await account()).mcp);
  t.teardown(() => c.close());
  let limited: { error: string } | null = null;
  for (let i = 0; i < RATE + 1 && !limited; i++) {
    // Refused as a tool error, or, once the key's window is spent, from the headers (HTTP 429).
    const r = await c.callTool({ name: 'search_docs', arguments: { query: 'limits' } }).catch((err: Error) => ({ isError: true, structuredContent: { error: /rate_limited/.test(err.message) ? 'rate_limited' : err.message } }));
    if (r.isError) limited = r.structuredContent as { error: string };
  }
  t.equal(limited?.error, 'rate_limited', `refused within ${RATE + 1} calls`);
});

t.test('the MCP Inspector (CLI mode) lists the tools and calls search_docs', async (t) => {
  const { mcp } = await account();
  const build = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/inspector-cli/build');
  const inspect = async (...args: string[]) => {
    // Run from its build folder: the CLI tests for its own package.json relative to the working
    // directory ("../package.json") and then imports it relative to itself.
    const { stdout } = await run(process.execPath, [join(build, 'index.js'), url, '--transport', 'http', '--header', `Authorization: Bearer ${mcp}`, ...args], { timeout: 30_000, cwd: build });
    return JSON.parse(stdout) as Record<string, unknown>;
  };
  const listed = (await inspect('--method', 'tools/list')) as { tools: Array<{ name: string; outputSchema?: unknown }> };
  t.same(listed.tools.map((x) => x.name).sort(), ['compare_inputs', 'get_capabilities', 'represent_face', 'search_docs', 'verify_faces']);
  t.ok(listed.tools.every((x) => x.outputSchema), 'with output schemas');
  const called = (await inspect('--method', 'tools/call', '--tool-name', 'search_docs', '--tool-arg', 'query=what does queue_full mean')) as { structuredContent: { results: Passage[] }; isError?: boolean };
  t.notOk(called.isError);
  t.equal(called.structuredContent.results[0]?.page, 'errors.md');
  const resources = (await inspect('--method', 'resources/list')) as { resources: Array<{ uri: string }> };
  t.ok(resources.resources.some((r) => r.uri === 'facecompute://docs/errors.md'), 'and the resources');
  // For the reader: the page count this run saw.
  t.equal(resources.resources.length, pageNames.length);
});
