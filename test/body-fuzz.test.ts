/**
 * A bounded fuzz of the gateway's body parsing (issue 15, item 17), run in CI in a few seconds:
 * fast-check generates JSON and multipart bodies, well-formed, near-valid and broken (truncated,
 * bytes flipped, boundaries mangled, non-finite numbers, unknown fields, wrong types), and posts
 * each to /verify, /represent and /compare through Fastify's inject (the whole pipeline: hooks,
 * content-type parsers, multipart, schemas, the compute service; the model server is a stub).
 * Every answer must be a success or the contract's `{error, detail}` with a known code and its
 * status, never a 5xx. A failure prints the seed and the shrunk body to replay it.
 *   FUZZ_RUNS=5000 npx tap test/body-fuzz.test.ts      (longer run; the default keeps CI bounded)
 */
import t from 'tap';
import fc from 'fast-check';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { ERROR_STATUS, isErrorCode } from '../src/errors/index.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { makePng } from './helpers/images.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 250);
const PNG = makePng(16, 12, 5);
const ROUTES = ['/verify', '/represent', '/compare'] as const;
const FIELDS = ['img1', 'img2', 'img', 'source', 'targets', 'targets_b64', 'model_name', 'detector_backend', 'distance_metric', 'threshold', 'align', 'enforce_detection', 'expand_percentage', 'normalization', 'max_faces', 'l2_normalize', 'top_k', 'anti_spoofing'];

const area = { x: 0, y: 0, w: 16, h: 12, left_eye: null, right_eye: null, detector: 'opencv' };
const emb = (n: number) => Array.from({ length: n }, (_, i) => Math.sin(i + 1));
const upstream = stubUpstream({
  async verify(h) { return { verified: true, distance: 0.1, threshold: 0.4, confidence: 90, model: h.model_name, detector_backend: h.detector_backend, similarity_metric: h.distance_metric, facial_areas: { img1: area, img2: area }, time: 0.01 }; },
  async represent(h) { return { results: h.images.map(() => [{ embedding: emb(128), facial_area: area, face_confidence: 0.9 }]), model: h.model_name, detector_backend: h.detector_backend }; },
  async embed(h) { return { embedding: emb(128), facial_area: area, face_confidence: 0.9, model: h.model_name }; },
});

let gw: Gateway;
t.before(async () => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MAX_REQUEST_BYTES: String(256 << 10), FACECOMPUTE_MAX_IMAGE_BYTES: String(64 << 10), FACECOMPUTE_MAX_TARGETS: '50', FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1000' });
  gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream });
  await gw.app.ready();
});
t.teardown(() => gw?.close(10));

// ---- values ------------------------------------------------------------------------------------

const image = fc.oneof(
  fc.constant(PNG.toString('base64')),
  fc.constant(`data:image/png;base64,${PNG.toString('base64')}`),
  fc.string(),
  fc.base64String({ maxLength: 64 }),
  fc.constantFrom('file:x.png', 'https://example.com/a.png', 'data:text/html;base64,PGI+', '', 'data:image/png;base64,'),
);
const number = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, 1e39, -1e39, 5e-324, Number.MAX_VALUE));
const embedding = fc.oneof(
  fc.constant(emb(128)),
  fc.array(number, { maxLength: 140 }),
  fc.array(fc.oneof(number, fc.string(), fc.constant(null), fc.boolean()), { maxLength: 130 }),
);
const value = fc.oneof(image, embedding, number, fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 3 }), fc.record({ img: image }), fc.record({ embedding }), fc.array(embedding, { maxLength: 4 }));
const fieldName = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...FIELDS) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype') });
const body = fc.dictionary(fieldName, value, { maxKeys: 6 });

/** Text-level damage: what a broken client, a proxy or an attacker sends. */
function damage(text: string, how: { kind: number; at: number; bytes: string }): string {
  const at = text.length === 0 ? 0 : how.at % (text.length + 1);
  switch (how.kind) {
    case 0: return text.slice(0, at);
    case 1: return text.slice(0, at) + how.bytes + text.slice(at);
    case 2: return text.slice(0, at) + text.slice(at + 1 + (how.bytes.length % 8));
    case 3: return text.replace(/-?\d+(\.\d+)?(e[-+]?\d+)?/i, ['1e999', '-1e999', 'NaN', 'Infinity', '-Infinity'][how.at % 5]!);
    default: return text;
  }
}
const harm = fc.record({ kind: fc.nat(5), at: fc.nat(), bytes: fc.string({ maxLength: 8, unit: 'binary' }) });

// ---- multipart -------------------------------------------------------------------------------------

const part = fc.record({
  name: fieldName,
  file: fc.boolean(),
  content: fc.oneof(fc.constant(PNG), fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), value.map((v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v) ?? ''))),
  type: fc.constantFrom(undefined, 'image/png', 'application/octet-stream', 'application/json', 'text/plain'),
});

function multipart(boundary: string, parts: Array<{ name: string; file: boolean; content: Buffer; type: string | undefined }>): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name.replace(/["\r\n]/g, '_')}"${p.file ? '; filename="f.bin"' : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`), p.content, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

// ---- the property ------------------------------------------------------------------------------------

async function post(url: string, contentType: string | undefined, payload: string | Buffer): Promise<void> {
  const headers: Record<string, string> = { authorization: 'Bearer k' };
  if (contentType !== undefined) headers['content-type'] = contentType;
  const r = await gw.app.inject({ method: 'POST', url, headers, payload });
  if (r.statusCode === 200) {
    JSON.parse(r.body);
    return;
  }
  let j: { error?: unknown; detail?: unknown };
  try { j = JSON.parse(r.body); } catch { throw new Error(`${r.statusCode} with a body that is not JSON: ${r.body.slice(0, 200)}`); }
  if (r.statusCode >= 500) throw new Error(`${r.statusCode} ${r.body.slice(0, 300)}`);
  if (!isErrorCode(j.error) || typeof j.detail !== 'string' || Object.keys(j).length !== 2) throw new Error(`not {error, detail}: ${r.body.slice(0, 300)}`);
  if (ERROR_STATUS[j.error] !== r.statusCode) throw new Error(`${j.error} with status ${r.statusCode}`);
  if (!/^application\/json/.test(String(r.headers['content-type']))) throw new Error(`content-type ${String(r.headers['content-type'])}`);
}

const params = { numRuns: RUNS };

t.test('JSON bodies, intact and damaged', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), body, fc.option(harm, { freq: 2 }), async (route, b, h) => {
      const text = JSON.stringify(b);
      await post(route, 'application/json', h ? damage(text, h) : text);
    }),
    params,
  );
  t.pass(`${RUNS} JSON bodies`);
});

t.test('multipart bodies, intact and damaged, with odd content types', async (t) => {
  const boundary = fc.oneof(fc.constant('fcBoundary7'), fc.string({ minLength: 1, maxLength: 80 }).filter((s) => !/[\r\n";]/.test(s)));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), boundary, fc.array(part, { maxLength: 6 }), fc.option(harm, { freq: 2 }), fc.nat(4), async (route, bnd, parts, h, ctKind) => {
      const raw = multipart(bnd, parts);
      const payload = h ? Buffer.from(damage(raw.toString('latin1'), h), 'latin1') : raw;
      const ct = [`multipart/form-data; boundary=${bnd}`, `multipart/form-data; boundary="${bnd}"`, 'multipart/form-data', `multipart/form-data; boundary=${bnd}x`, `multipart/mixed; boundary=${bnd}`][ctKind];
      await post(route, ct, payload);
    }),
    params,
  );
  t.pass(`${RUNS} multipart bodies`);
});

t.test('arbitrary bytes under any content type', async (t) => {
  const ct = fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-16', 'multipart/form-data', 'text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded', '');
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ROUTES), ct, fc.uint8Array({ maxLength: 512 }), async (route, c, bytes) => {
      await post(route, c, Buffer.from(bytes));
    }),
    params,
  );
  t.pass(`${RUNS} byte strings`);
});
