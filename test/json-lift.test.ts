/**
 * /compare's JSON `targets` read natively (src/http/json-body.ts, crates/facecompute-core/src/json/scan.rs):
 * the rows are taken out of a large body as float32 and JSON.parse reads only the rest (issue 24:
 * JSON.parse of 64 MiB of targets held the gateway's event loop for 0.9–2.9 s).
 *
 * A differential test: two Fastify apps with the gateway's JSON parser, its Ajv options, its error
 * mapping and /compare's body schema, one lifting `targets` and one not, answer the same bodies; the
 * handler resolves the targets as the compute service does (CompareTargets.resolve). Every answer,
 * refusal or rows, must be byte-identical. Then the value budget, and that the lifting really happens
 * (JSON.parse never sees the rows).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { AJV_OPTIONS, buildGateway } from '../src/gateway/app.js';
import { loadConfig } from '../src/config/index.js';
import { createLogger } from '../src/logging/logger.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { seededMatrix } from './helpers/vectors.js';
import { stubUpstream } from './helpers/stub-upstream.js';
import { registerErrorHandling } from '../src/http/error-handler.js';
import { NATIVE_CHECK_MIN_BYTES, useJsonBodyParser } from '../src/http/json-body.js';
import { scanJsonBody } from '../src/native/json.js';
import { CompareTargets } from '../src/service/compare-targets.js';
import * as S from '../src/vocabulary/schemas.js';

const DIMS = 4;
const MAX_TARGETS = 10;

declare module 'fastify' {
  interface FastifyRequest {
    liftedTargets?: CompareTargets;
  }
}

async function app(lift: boolean, maxValues = 1e9): Promise<FastifyInstance> {
  const a = Fastify({ bodyLimit: 64 << 20, ajv: { customOptions: AJV_OPTIONS } });
  registerErrorHandling(a);
  useJsonBodyParser(a, {
    maxValues,
    ...(lift
      ? {
          lift: {
            members: (req) => (req.routeOptions.url === '/compare' ? { rows: 'targets', text: 'targets_b64' } : undefined),
            take: (req, lifted) => {
              req.liftedTargets = new CompareTargets();
              if (lifted.rows) req.liftedTargets.adoptRows(lifted.rows);
              if (lifted.text) req.liftedTargets.adoptText(lifted.text, null);
            },
          },
        }
      : {}),
  });
  a.post('/compare', { schema: { body: S.compareBody } }, async (req) => {
    const r = await (req.liftedTargets ?? new CompareTargets()).resolve(req.body as never, DIMS, MAX_TARGETS);
    if (r.kind !== 'rows') throw new Error('not rows');
    return { count: r.count, rows: Buffer.from(r.rows.buffer, r.rows.byteOffset, r.rows.byteLength).toString('base64'), lifted: req.liftedTargets !== undefined };
  });
  await a.ready();
  return a;
}

/** `json` padded with trailing whitespace to the size read natively. */
function large(json: string): string {
  return json.length >= NATIVE_CHECK_MIN_BYTES ? json : json + ' '.repeat(NATIVE_CHECK_MIN_BYTES - json.length);
}

const row = (i: number) => `[${[0.1 * i, -1.5, 2e-3, i].join(', ')}]`;
const rows = (n: number) => `[${Array.from({ length: n }, (_, i) => row(i)).join(',')}]`;
const src = '"source": {"embedding": [1, 2, 3, 4]}';
/** Base64 of little-endian float32 `values`. */
const b64 = (...values: number[]) => Buffer.from(new Float32Array(values).buffer).toString('base64');
const b64rows = (n: number) => b64(...Array.from({ length: n * DIMS }, (_, i) => i * 0.25 - 3));

/** Bodies whose targets the native reader takes out, or leaves for the schema, or that fail elsewhere. */
const CASES: Record<string, string> = {
  'valid rows': `{${src}, "targets": ${rows(3)}}`,
  'targets first': `{"targets": ${rows(3)}, ${src}}`,
  'whitespace of every kind inside': `{${src}, "targets":\n\t[ [1 ,2,\r\n3, 4 ] ,[ 5,6,7,8]\t]\n}`,
  'numbers at the edges of float32 and double': `{${src}, "targets": [[-0, 1.0000000596046448, 3.4028235677973366e38, 123456789012345678901234567890], [1e-46, 4.9406564584124654e-324, 0.30000000000000004, -1E+2]]}`,
  'a row too short': `{${src}, "targets": [${row(0)}, [1, 2, 3]]}`,
  'a row too long': `{${src}, "targets": [${row(0)}, [1, 2, 3, 4, 5]]}`,
  'float32 overflow': `{${src}, "targets": [${row(0)}, [1, 2, 1e39, 4]]}`,
  'a row too short before an overflow': `{${src}, "targets": [[1, 2, 3], [1, 2, 1e39, 4]]}`,
  'double overflow (1e999)': `{${src}, "targets": [${row(0)}, [1, 2, 1e999, 4]]}`,
  'a string number': `{${src}, "targets": [[1, "2", 3, 4]]}`,
  'null in a row': `{${src}, "targets": [[1, null, 3, 4]]}`,
  'a nested row': `{${src}, "targets": [[1, [2], 3, 4]]}`,
  'an object in a row': `{${src}, "targets": [[1, {"a": 2}, 3, 4]]}`,
  '__proto__ inside targets': `{${src}, "targets": [[1, {"__proto__": {"x": 1}}, 3, 4]]}`,
  'constructor.prototype inside targets': `{${src}, "targets": [[1, {"constructor": {"prototype": 1}}, 3, 4]]}`,
  'empty targets': `{${src}, "targets": []}`,
  'an empty row': `{${src}, "targets": [${row(0)}, []]}`,
  'a row of 65,537 numbers': `{${src}, "targets": [[${Array(65_537).fill(0).join(',')}]]}`,
  'a flat array': `{${src}, "targets": [1, 2, 3, 4]}`,
  'a string': `{${src}, "targets": "AAAA"}`,
  'an object': `{${src}, "targets": {"0": [1, 2, 3, 4]}}`,
  'null': `{${src}, "targets": null}`,
  'two occurrences, both rows': `{${src}, "targets": ${rows(2)}, "targets": ${rows(3)}}`,
  'two occurrences, the last not rows': `{${src}, "targets": ${rows(2)}, "targets": "x"}`,
  'two occurrences, the first not rows': `{${src}, "targets": [[1, "x"]], "targets": ${rows(3)}}`,
  'an escaped key': `{${src}, "t\\u0061rgets": ${rows(3)}}`,
  'targets and targets_b64': `{${src}, "targets": ${rows(2)}, "targets_b64": "AACAPwAAAEAAAEBAAACAQA=="}`,
  'too many targets': `{${src}, "targets": ${rows(MAX_TARGETS + 1)}}`,
  'an unknown field after targets': `{${src}, "targets": ${rows(2)}, "junk": 1}`,
  'a bad top_k after targets': `{${src}, "targets": ${rows(2)}, "top_k": "x"}`,
  'a bad source before targets': `{"source": {"embedding": "x"}, "targets": ${rows(2)}}`,
  'no source': `{"targets": ${rows(2)}}`,
  '__proto__ at the top': `{${src}, "targets": ${rows(2)}, "__proto__": {"x": 1}}`,
  'targets only nested': `{"source": {"embedding": [1, 2, 3, 4], "targets": ${rows(2)}}}`,
  'a top-level array': `[{${src}, "targets": ${rows(2)}}]`,
  'targets_b64': `{${src}, "targets_b64": "${b64rows(3)}"}`,
  'targets_b64 first, unpadded': `{"targets_b64": "${b64rows(2).replace(/=+$/, '')}", ${src}}`,
  'targets_b64 with a bad character': `{${src}, "targets_b64": "${b64rows(2).slice(0, 20)}*${b64rows(2).slice(21)}"}`,
  'targets_b64 of a truncated row': `{${src}, "targets_b64": "${b64(1, 2, 3, 4, 5, 6)}"}`,
  'targets_b64 holding NaN': `{${src}, "targets_b64": "${b64(1, 2, 3, 4, 5, NaN, 7, 8)}"}`,
  'targets_b64 empty': `{${src}, "targets_b64": ""}`,
  'targets_b64 with an escape': `{${src}, "targets_b64": "\\u0041${b64rows(2).slice(1)}"}`,
  'targets_b64 with an escaped slash': `{${src}, "targets_b64": "${b64rows(2).replace('/', '\\/')}"}`,
  'targets_b64 with a non-ASCII character': `{${src}, "targets_b64": "${b64rows(2)}é"}`,
  'targets_b64 not a string': `{${src}, "targets_b64": 12}`,
  'targets_b64 twice': `{${src}, "targets_b64": "${b64rows(2)}", "targets_b64": "${b64rows(3)}"}`,
  'targets_b64 over the targets limit': `{${src}, "targets_b64": "${b64rows(MAX_TARGETS + 1)}"}`,
  'NaN in targets (not JSON)': `{${src}, "targets": [[1, NaN, 3, 4]]}`,
  'unterminated after targets': `{${src}, "targets": ${rows(2)}, "top_k": `,
};

t.test('lifted and parsed bodies get the same answer, byte for byte', async (t) => {
  const [lifting, plain] = await Promise.all([app(true), app(false)]);
  t.teardown(() => Promise.all([lifting.close(), plain.close()]));
  let liftedOk = 0;
  for (const [name, json] of Object.entries(CASES)) {
    const payload = large(json);
    const [a, b] = await Promise.all([lifting, plain].map((x) => x.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload })));
    const ja = a!.json() as Record<string, unknown>;
    const jb = b!.json() as Record<string, unknown>;
    if (a!.statusCode === 200) liftedOk += ja['lifted'] ? 1 : 0;
    delete ja['lifted'];
    delete jb['lifted'];
    t.same({ status: a!.statusCode, body: ja }, { status: b!.statusCode, body: jb }, name);
  }
  t.ok(liftedOk >= 5, `the lifting path answered ${liftedOk} of the bodies it accepted`);
});

/** A random body from the shapes above: rows of random lengths and numbers, sometimes one bad element. */
function randomBody(rand: () => number): string {
  const num = () => {
    const r = rand();
    if (r < 0.05) return '1e39';
    if (r < 0.07) return '1e999';
    if (r < 0.1) return '-0';
    if (r < 0.2) return String(Math.round((rand() - 0.5) * 1e6));
    if (r < 0.3) return (rand() * 1e-40).toExponential(5);
    return String((rand() - 0.5) * 10 ** Math.floor(rand() * 8 - 4));
  };
  const bad = ['"1"', 'null', 'true', '[1]', '{}', '{"__proto__": 1}'];
  const rowOf = () => {
    const n = rand() < 0.85 ? DIMS : Math.floor(rand() * 6);
    const xs = Array.from({ length: n }, () => (rand() < 0.02 ? bad[Math.floor(rand() * bad.length)]! : num()));
    return `[${xs.join(rand() < 0.5 ? ',' : ' , ')}]`;
  };
  const targets = `[${Array.from({ length: 1 + Math.floor(rand() * (MAX_TARGETS + 4)) }, rowOf).join(',\n')}]`;
  const members = [src, `"targets": ${targets}`];
  if (rand() < 0.2) members.push(`"targets": ${rand() < 0.5 ? targets : '"x"'}`);
  if (rand() < 0.15) members.push(`"top_k": ${rand() < 0.5 ? 2 : '"2"'}`);
  if (rand() < 0.1) members.push(`"targets_b64": "${rand() < 0.5 ? 'AAAA' : b64rows(1 + Math.floor(rand() * 3))}"`);
  if (rand() < 0.05) members.push('"junk": [1]');
  for (let i = members.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [members[i], members[j]] = [members[j]!, members[i]!];
  }
  return `{${members.join(', ')}}`;
}

t.test('400 random bodies: the same answers', async (t) => {
  const [lifting, plain] = await Promise.all([app(true), app(false)]);
  t.teardown(() => Promise.all([lifting.close(), plain.close()]));
  let seed = 24;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const seen = new Map<string, number>();
  let differ = 0;
  for (let i = 0; i < 400; i++) {
    const payload = large(randomBody(rand));
    const [a, b] = await Promise.all([lifting, plain].map((x) => x.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload })));
    const ja = a!.json() as Record<string, unknown>;
    const jb = b!.json() as Record<string, unknown>;
    delete ja['lifted'];
    delete jb['lifted'];
    const key = a!.statusCode === 200 ? '200' : String((ja as { error?: string }).error);
    seen.set(key, (seen.get(key) ?? 0) + 1);
    if (JSON.stringify([a!.statusCode, ja]) !== JSON.stringify([b!.statusCode, jb])) {
      differ++;
      t.same({ status: a!.statusCode, body: ja }, { status: b!.statusCode, body: jb }, `body ${i}: ${payload.slice(0, 300)}`);
    }
  }
  t.equal(differ, 0, 'no body answered differently');
  // The mix covers success and each kind of refusal, or the comparison above proves little.
  for (const k of ['200', 'invalid_embedding', 'embedding_dimension_mismatch', 'invalid_request', 'too_many_targets']) t.ok((seen.get(k) ?? 0) > 0, `answers of kind ${k}: ${seen.get(k) ?? 0}`);
});

t.test('JSON.parse never sees lifted rows', async (t) => {
  const a = await app(true);
  t.teardown(() => a.close());
  const body = large(`{${src}, "targets": ${rows(MAX_TARGETS)}}`);
  const parse = JSON.parse;
  const texts: number[] = [];
  JSON.parse = ((text: string, reviver?: (k: string, v: unknown) => unknown) => {
    texts.push(text.length);
    return parse(text, reviver);
  }) as typeof JSON.parse;
  try {
    const r = await a.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload: body });
    t.equal(r.statusCode, 200);
    t.equal(r.json().lifted, true, 'the rows came from the native reader');
    t.equal(r.json().count, MAX_TARGETS);
  } finally {
    JSON.parse = parse;
  }
  const rowsText = rows(MAX_TARGETS);
  t.ok(texts.length > 0 && texts.every((n) => n <= body.length - rowsText.length + 'null'.length), `JSON.parse read ${texts.join(', ')} characters; the body is ${body.length}, its targets ${rowsText.length}`);
});

t.test('the value budget: a body holding more values than it is refused before JSON.parse', async (t) => {
  const a = await app(true, 10_000);
  t.teardown(() => a.close());
  const many = `{${src}, "junk": [${Array(10_001).fill(1).join(',')}]}`;
  const r = await a.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload: large(many) });
  t.equal(r.statusCode, 413);
  t.equal(r.json().error, 'request_too_large');
  t.match(r.json().detail, /more than 10000 values/);
  const under = `{${src}, "junk": [${Array(9_000).fill(1).join(',')}]}`;
  const u = await a.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload: large(under) });
  t.equal(u.json().error, 'invalid_request', 'under the budget the schema speaks: junk is an unknown field');
  // Lifted rows do not count: 12 rows of 1,000 numbers is 12,013 values in JSON.parse's terms.
  const wide = `{"source": {"embedding": [${Array(1000).fill(1).join(',')}]}, "targets": [${Array(12).fill(`[${Array(1000).fill(0.5).join(',')}]`).join(',')}]}`;
  const w = await a.inject({ method: 'POST', url: '/compare', headers: { 'content-type': 'application/json' }, payload: large(wide) });
  t.equal(w.json().error, 'too_many_targets', 'read past the budget, to the targets limit (12 > 10)');
});

t.test('the gateway: a 9 MiB targets_b64 is decoded from the pooled body buffer, which goes back to the pool', async (t) => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MAX_TARGETS: '20000', FACECOMPUTE_MAX_COMPARE_BYTES: String(16 << 20), FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1000' });
  const gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream: stubUpstream() });
  t.teardown(() => gw.close(10));
  const dims = 128;
  const targets = seededMatrix(14_000, dims, 5);
  const bytes = Buffer.from(targets.buffer, targets.byteOffset, targets.byteLength);
  const source = { embedding: Array.from(targets.subarray(77 * dims, 78 * dims)) };
  const headers = { authorization: 'Bearer k', 'content-type': 'application/json' };
  const payload = JSON.stringify({ source, targets_b64: bytes.toString('base64'), model_name: 'Dlib', top_k: 3 });
  t.ok(payload.length > 9 << 20);
  const pooledBefore = gw.compute.bodyBuffers.pooled;
  const r = await gw.app.inject({ method: 'POST', url: '/compare', headers, payload });
  t.equal(r.statusCode, 200, r.body.slice(0, 200));
  t.equal(r.json().results[0].index, 77, 'the source finds itself');
  // The same floats as a binary part (the multipart path) give the same answer.
  const B = 'lift-boundary';
  const multipart = Buffer.concat([
    Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="source"\r\n\r\n${JSON.stringify(source)}\r\n--${B}\r\nContent-Disposition: form-data; name="model_name"\r\n\r\nDlib\r\n--${B}\r\nContent-Disposition: form-data; name="top_k"\r\n\r\n3\r\n`),
    Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="targets"; filename="t.f32"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${B}--\r\n`),
  ]);
  const bin = await gw.app.inject({ method: 'POST', url: '/compare', headers: { authorization: 'Bearer k', 'content-type': `multipart/form-data; boundary=${B}` }, payload: multipart });
  t.same(r.json().results, bin.json().results, 'identical to the binary part');
  // Refused after the lift (by the schema): the pooled buffer still goes back when the response closes.
  const refused = await gw.app.inject({ method: 'POST', url: '/compare', headers, payload: payload.replace('"top_k":3', '"top_k":"x"') });
  t.equal(refused.statusCode, 400);
  await new Promise((r) => setImmediate(r));
  t.equal(CompareTargets.held, 0, 'nothing held once the responses closed');
  t.ok(gw.compute.bodyBuffers.pooled > pooledBefore, `the body buffer went back to the pool (${pooledBefore} -> ${gw.compute.bodyBuffers.pooled})`);
});

t.test('targets rows past max_targets are read, not kept (many tiny rows)', async (t) => {
  // 2,000,000 rows of one number: before the cap, 8 MB of floats and 8 MB of row lengths were built
  // (a 64 MiB body: about +134 MB) before max_targets refused them.
  const body = Buffer.from(`{"source": {"embedding": [1]}, "targets": [${Array(2_000_000).fill('[0]').join(',')}]}`);
  const scan = await scanJsonBody(body, { rows: 'targets', maxRows: 1000 }, 1e6);
  t.equal(scan.lifted?.rowLengths.length, 1001, 'max_targets + 1 rows kept');
  t.equal(scan.lifted?.values.length, 1001);
  t.equal(scan.lifted?.rowsOver, true);
  t.equal(scan.values, 7, 'the rest is counted as usual: {, source, {, embedding, [, 1, targets');
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MAX_TARGETS: '1000' });
  const gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream: stubUpstream() });
  t.teardown(() => gw.close(10));
  const r = await gw.app.inject({ method: 'POST', url: '/compare', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, payload: body });
  t.equal(r.statusCode, 413);
  t.match(r.json(), { error: 'too_many_targets', detail: 'targets holds more than 1000 vectors; the limit is 1000' });
});

t.test('docs/security.md states the counts compared here', async (t) => {
  const page = readFileSync(resolve(REPO_ROOT, 'docs/security.md'), 'utf8');
  t.ok(page.includes(`compares both on ${Object.keys(CASES).length} hand-made bodies and 400 random ones`), 'the hostile-input section names this test\'s counts');
});
