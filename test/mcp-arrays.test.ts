/**
 * MCP tool arguments: every array is held to the REST limits before it is parsed, and a bad
 * embedding is refused at its first bad value (issue 24, item 2: zod parsed every element and
 * recorded one issue per bad one; 7.6 MiB of bad targets took 3.2 s and 1.54 GB). Counted, not
 * timed: the element reads of a refused argument go through a Proxy.
 */
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config/index.js';
import { createMcp } from '../src/mcp/main.js';
import { TOOLS, type ToolName } from '../src/mcp/tools.js';
import { createLogger } from '../src/logging/logger.js';
import { ServiceError } from '../src/errors/index.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const LIMITS = { maxTargets: 1000, maxSources: 10, maxBatchImages: 16 };
/** A tool's arguments as the endpoint checks them: the arrays and embeddings first, then the schema. */
const parseArguments = (tool: ToolName, args: Record<string, unknown>, limits: typeof LIMITS): unknown => TOOLS[tool].parse(args, limits);
const E = Array.from({ length: 128 }, (_, i) => Math.sin(i));

/** `rows` behind Proxies that count every element read, of the list and of each row. */
function countedRows(rows: unknown[][]): { value: unknown[]; reads: () => number } {
  let reads = 0;
  const wrap = <T extends object>(a: T): T =>
    new Proxy(a, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  return { value: wrap(rows.map((r) => wrap(r))), reads: () => reads };
}

function refusal(f: () => unknown): ServiceError {
  try {
    f();
  } catch (err) {
    if (err instanceof ServiceError) return err;
    throw err;
  }
  throw new Error('not refused');
}

t.test('a refused argument is read up to its first bad value, whatever follows', async (t) => {
  // 1,000 targets of 128 strings: zod read all 128,000 and made an issue for each.
  const bad = countedRows(Array.from({ length: 1000 }, () => Array.from({ length: 128 }, () => 'x')));
  let e = refusal(() => parseArguments('compare_inputs', { source: { embedding: E }, targets: bad.value }, LIMITS));
  t.equal(e.code, 'invalid_embedding');
  t.match(e.detail, /targets\[0\]\[0\]/);
  t.ok(bad.reads() <= 2, `bad targets: ${bad.reads()} element reads`);

  // One bad value at the end of the last of 1,000 good rows: every value before it is read, once.
  const rows = Array.from({ length: 1000 }, () => [...E]);
  rows[999]![127] = Number.NaN;
  const late = countedRows(rows);
  e = refusal(() => parseArguments('compare_inputs', { source: { embedding: E }, targets: late.value }, LIMITS));
  t.match(e.detail, /targets\[999\]\[127\]/);
  t.ok(late.reads() <= 1000 + 1000 * 128, `a late bad value: ${late.reads()} element reads, one pass`);

  // Over the limit: refused from the length alone.
  const many = countedRows(Array.from({ length: 1001 }, () => ['x']));
  e = refusal(() => parseArguments('compare_inputs', { source: { embedding: E }, targets: many.value }, LIMITS));
  t.equal(e.code, 'too_many_targets');
  t.equal(many.reads(), 0, 'no element of an over-long list is read');

  const sources = countedRows(Array.from({ length: 11 }, () => ['x']));
  e = refusal(() => parseArguments('compare_inputs', { source: sources.value, targets: [E] }, LIMITS));
  t.equal(e.code, 'too_many_targets');
  t.equal(sources.reads(), 0);

  const images = countedRows(Array.from({ length: 17 }, () => ['x']));
  e = refusal(() => parseArguments('represent_face', { img: images.value }, LIMITS));
  t.equal(e.code, 'request_too_large');
  t.equal(images.reads(), 0);

  const long = countedRows([Array.from({ length: 65537 }, () => 'x')]);
  e = refusal(() => parseArguments('verify_faces', { img1: long.value[0], img2: E }, LIMITS));
  t.equal(e.code, 'embedding_dimension_mismatch');
  t.equal(long.reads(), 1, 'only the row itself is read');
});

t.test('valid arguments still parse, and the listed schema still says what an embedding is', async (t) => {
  const args = parseArguments('compare_inputs', { source: [{ embedding: E }, { img: 'aGVsbG8=' }], targets: [E, E], top_k: 1 }, LIMITS) as { targets: number[][] };
  t.equal(args.targets.length, 2);
  t.same(parseArguments('verify_faces', { img1: E, img2: 'aGVsbG8=' }, LIMITS), { img1: E, img2: 'aGVsbG8=' });
});

t.test('over MCP: the REST limits and codes', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:9', FACECOMPUTE_MAX_TARGETS: '1000' });
  const accounts = new MemoryAccounts([{ key: 'mcp-key', accountId: 'a1', kind: 'mcp' }]);
  const mcp = await createMcp({ config, accounts, logger: createLogger('test', 'silent'), upstream: stubUpstream() });
  await mcp.app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => mcp.app.close());
  const client = new Client({ name: 'mcp-arrays', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(mcp.app.server.address() as AddressInfo).port}/mcp`), { requestInit: { headers: { Authorization: 'Bearer mcp-key' } } }));
  t.teardown(() => client.close());
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })).structuredContent as { error?: string; detail?: string };

  // 1,001 empty targets: zod answered embedding_dimension_mismatch for targets[0] after 1,001 issues.
  t.match(await call('compare_inputs', { source: { embedding: E }, targets: Array.from({ length: 1001 }, () => []) }), { error: 'too_many_targets', detail: /limit is 1000/ });
  t.match(await call('represent_face', { img: Array.from({ length: 17 }, () => 5) }), { error: 'request_too_large' });
  t.match(await call('compare_inputs', { source: { embedding: E }, targets: [E, [...E.slice(1), 'x']] }), { error: 'invalid_embedding', detail: /targets\[1\]\[127\]/ });

  const { tools } = await client.listTools();
  const compare = tools.find((x) => x.name === 'compare_inputs')!.inputSchema as unknown as { properties: { targets: { items: unknown } } };
  t.match(compare.properties.targets.items, { type: 'array', items: { type: 'number' }, minItems: 1, maxItems: 65536 });
});
