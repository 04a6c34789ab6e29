/**
 * End-to-end tests of the REST gateway: real processes (the gateway via test/helpers/gateway-entry.ts,
 * which runs src/gateway/main.ts, and the fake model server), real sockets, loopback only.
 */
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { DEEPFACE_THRESHOLDS, deepfaceConfidence, type DeepFaceMetric } from './helpers/deepface.js';
import { REPO_ROOT } from './helpers/shared.js';
import { distance } from '../src/deepface/distance.js';
import { startFakeModelServer, startGateway, setFault, type Proc } from './helpers/procs.js';
import { makeBombPng, makePng } from './helpers/images.js';
import { requireService } from './helpers/services.js';

const PNG = makePng(32, 24, 3);
const PNG2 = makePng(32, 24, 9);
const NOFACE = makePng(7, 7, 1);
const B64 = PNG.toString('base64');
const PUBLIC_IP = '93.184.216.34';
const KEYS = [
  { key: 'rest-key-1', accountId: 'acct-1', kind: 'rest' },
  { key: 'rest-key-2', accountId: 'acct-2', kind: 'rest' },
  { key: 'mcp-key-1', accountId: 'acct-1', kind: 'mcp' },
  { key: 'broke-key', accountId: 'acct-broke', kind: 'rest', credits: 0 },
  { key: 'disabled-key', accountId: 'acct-off', kind: 'rest', disabled: true },
];

let ms: Proc;
let gw: Proc;
let base = '';
let imgServer: Server;
const localRoot = mkdtempSync(join(tmpdir(), 'fc-local-'));
writeFileSync(join(localRoot, 'face.png'), PNG);

const blob = (b: Buffer) => new Blob([new Uint8Array(b)]);

interface Res { status: number; headers: Headers; json: any; text: string; ms: number }

async function req(method: string, path: string, body?: unknown, opts: { key?: string | null; headers?: Record<string, string>; raw?: BodyInit; base?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key !== null) headers['authorization'] = `Bearer ${opts.key ?? 'rest-key-1'}`;
  let payload: BodyInit | undefined = opts.raw;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const t0 = performance.now();
  const r = await fetch((opts.base ?? base) + path, { method, headers, body: payload });
  const text = await r.text();
  let json: any;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, json, text, ms: performance.now() - t0 };
}

function isError(t: Tap.Test, r: Res, status: number, code: string, msg = code): void {
  t.equal(r.status, status, `${msg}: status`);
  t.equal(r.json?.error, code, `${msg}: code (${r.text.slice(0, 160)})`);
  t.type(r.json?.detail, 'string');
  t.same(Object.keys(r.json ?? {}).sort(), ['detail', 'error'], `${msg}: only error and detail`);
  t.match(r.headers.get('content-type') ?? '', /application\/json/);
  t.equal(r.headers.get('x-api-version'), 'v1');
  t.notMatch(r.json?.detail ?? '', /Traceback|\/srv\/|\/etc\/|at .*\.ts:\d+|node_modules/, `${msg}: no leak`);
}

declare global { namespace Tap { type Test = import('tap').Test } }

const stats = async (port: number) => (await (await fetch(`http://127.0.0.1:${port}/__stats`)).json()) as { compute: number; held: number; requestIds: string[] };

/** Polls `check` until it holds; at most 500 polls, 20 ms apart (a count, so no timing is asserted). */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gave up waiting for ${what} after 500 polls`);
}

t.before(async () => {
  imgServer = createServer((rq, rs) => {
    if (rq.url === '/face.png') { rs.writeHead(200, { 'content-type': 'image/png' }); rs.end(PNG); }
    else { rs.writeHead(404); rs.end(); }
  });
  await new Promise<void>((r) => imgServer.listen(0, '127.0.0.1', r));
  const imgPort = (imgServer.address() as AddressInfo).port;
  ms = await startFakeModelServer();
  gw = await startGateway({
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`,
    FACECOMPUTE_UPSTREAM_TIMEOUT_MS: '1500',
    FACECOMPUTE_MAX_UPSTREAM_RESPONSE_BYTES: String(1 << 20),
    FACECOMPUTE_MAX_REQUEST_BYTES: String(3 << 20),
    FACECOMPUTE_MAX_IMAGE_BYTES: String(1 << 20),
    FACECOMPUTE_MAX_TARGETS: '1000',
    // The tests below send a few hundred requests from one account; the rate limit has its own test.
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '10000',
    FACECOMPUTE_REMOTE_IMAGES: 'public',
    FACECOMPUTE_LOCAL_IMAGES_ROOT: localRoot,
    TEST_KEYS: JSON.stringify(KEYS),
    TEST_DNS: JSON.stringify({ 'images.example.com': [PUBLIC_IP], 'private.example.com': ['10.1.2.3'] }),
    TEST_DIAL: JSON.stringify({ [`${PUBLIC_IP}:80`]: imgPort }),
  });
  base = `http://127.0.0.1:${gw.port}`;
});

t.teardown(() => {
  gw?.kill('SIGKILL');
  ms?.kill('SIGKILL');
  imgServer?.close();
});

t.test('public routes, headers, 404s', async (t) => {
  const h = await req('GET', '/health', undefined, { key: null });
  t.equal(h.status, 200);
  t.same(h.json, { status: 'ok', version: h.json.version });
  t.equal(h.headers.get('x-api-version'), 'v1');
  t.match(h.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
  const id = '0b9c4a9e-2f7d-4a3c-9a41-3b1f2e8d7c6a';
  const e = await req('GET', '/health', undefined, { key: null, headers: { 'x-request-id': id } });
  t.equal(e.headers.get('x-request-id'), id, 'UUID echoed');
  const n = await req('GET', '/health', undefined, { key: null, headers: { 'x-request-id': 'not-a-uuid; drop table' } });
  t.not(n.headers.get('x-request-id'), 'not-a-uuid; drop table', 'non-UUID replaced');
  const rd = await req('GET', '/readiness', undefined, { key: null });
  t.equal(rd.status, 200);
  t.equal(rd.json.status, 'ready');
  const c = await req('GET', '/capabilities', undefined, { key: null });
  t.equal(c.status, 200);
  for (const f of ['allowed_models', 'default_model', 'allowed_detectors', 'default_detector']) t.ok(f in c.json, f);
  t.equal(c.json.limits.max_image_bytes, 1 << 20);
  t.equal(c.json.limits.max_targets, 1000);
  t.ok(c.json.limits.max_image_pixels > 0 && c.json.limits.max_request_bytes > 0 && c.json.limits.queue_capacity >= 0);
  t.same(c.json.input_modes, ['upload', 'base64', 'data_uri', 'url', 'file']);
  t.equal(c.json.version, 'v1');
  // The calibration field passes the response schema whole: what the model server served, as it served it.
  const served = ((await (await fetch(`http://127.0.0.1:${ms.port}/internal/capabilities`)).json()) as { calibration: any }).calibration;
  const file = JSON.parse(readFileSync(`${REPO_ROOT}/models/calibration/lfw-devtrain.json`, 'utf8'));
  t.equal(served.models.Facenet.opencv.cosine.far_1e_3.threshold, file.models.Facenet.opencv.cosine.far_1e_3.threshold, 'the fake serves the committed calibration');
  t.same(c.json.calibration, served, '/capabilities.calibration');
  for (const [m, p] of [['GET', '/nope'], ['GET', '/openapi.json'], ['GET', '/v1/verify']] as const) {
    isError(t, await req(m, p, undefined, { key: null }), 404, 'not_found', `${m} ${p}`);
  }
  // A path that exists under other methods: 405 with Allow (src/http/route-guard.ts).
  for (const [m, p, allow] of [['GET', '/verify', 'POST'], ['POST', '/health', 'GET'], ['DELETE', '/compare', 'POST'], ['OPTIONS', '/verify', 'POST'], ['HEAD', '/health', 'GET']] as const) {
    const r = await req(m, p, undefined, { key: null });
    if (m === 'HEAD') t.equal(r.status, 405, 'HEAD 405');
    else isError(t, r, 405, 'method_not_allowed', `${m} ${p}`);
    t.equal(r.headers.get('allow'), allow, `${m} ${p}: Allow`);
  }
});

t.test('auth', async (t) => {
  const body = { img1: B64, img2: B64 };
  const m = await req('POST', '/verify', body, { key: null });
  isError(t, m, 401, 'missing_api_key');
  t.equal(m.headers.get('www-authenticate'), 'Bearer');
  isError(t, await req('POST', '/verify', body, { key: 'nope' }), 401, 'invalid_api_key');
  isError(t, await req('POST', '/verify', body, { key: 'mcp-key-1' }), 401, 'invalid_api_key', 'MCP key on REST');
  isError(t, await req('POST', '/verify', body, { key: null, headers: { authorization: 'Basic abc' } }), 401, 'invalid_api_key', 'wrong scheme');
  const x = await req('POST', '/verify', body, { key: null, headers: { 'x-api-key': 'rest-key-1' } });
  t.equal(x.status, 200, 'x-api-key works');
  isError(t, await req('POST', '/verify', body, { key: 'disabled-key' }), 403, 'account_inactive');
  isError(t, await req('POST', '/verify', body, { key: 'broke-key' }), 402, 'insufficient_credits');
});

t.test('request validation', async (t) => {
  const ok = { img1: B64, img2: B64 };
  const u = await req('POST', '/verify', { ...ok, colour: 'red' });
  isError(t, u, 400, 'invalid_request');
  t.match(u.json.detail, /colour/);
  const w = await req('POST', '/verify', { ...ok, model_name: 5 });
  isError(t, w, 400, 'invalid_request');
  t.match(w.json.detail, /model_name/);
  const b = await req('POST', '/verify', { ...ok, align: 'yes' });
  isError(t, b, 400, 'invalid_request');
  t.match(b.json.detail, /align/);
  const miss = await req('POST', '/verify', { img1: B64 });
  t.match(miss.json.detail, /img2/);
  const nested = await req('POST', '/compare', { source: { img: B64, extra: 1 }, targets: [] });
  t.match(nested.json.detail, /source\.extra/);
  const ex = await req('POST', '/verify', { ...ok, expand_percentage: 101 });
  t.match(ex.json.detail, /expand_percentage/);
  for (const v of ['false', '0', 0, false]) t.equal((await req('POST', '/verify', { ...ok, enforce_detection: v, align: v })).status, 200, `boolean ${JSON.stringify(v)} accepted`);
  isError(t, await req('POST', '/verify', undefined, { raw: '{"img1": ', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request', 'malformed JSON');
  isError(t, await req('POST', '/verify', undefined, { raw: 'img1=x', headers: { 'content-type': 'text/plain' } }), 400, 'invalid_request', 'content type');
  isError(t, await req('POST', '/verify', undefined, { raw: '{"__proto__": {"x": 1}, "img1": "a", "img2": "b"}', headers: { 'content-type': 'application/json' } }), 400, 'invalid_request', 'proto');
  isError(t, await req('POST', '/verify', { ...ok, anti_spoofing: true }), 400, 'unsupported_option');
  t.equal((await req('POST', '/verify', { ...ok, anti_spoofing: false })).status, 200);
  const mn = await req('POST', '/verify', { ...ok, model_name: 'VGG-Face' });
  isError(t, mn, 400, 'model_not_allowed');
  t.match(mn.json.detail, /Facenet/);
  const dn = await req('POST', '/represent', { img: B64, detector_backend: 'centerface' });
  isError(t, dn, 400, 'detector_not_allowed');
  t.match(dn.json.detail, /opencv/);
  isError(t, await req('POST', '/verify', { img1: 'bm90IGFuIGltYWdl', img2: B64 }), 400, 'invalid_image');
  isError(t, await req('POST', '/verify', { img1: 'data:text/html;base64,PGh0bWw+', img2: B64 }), 400, 'invalid_image');
  isError(t, await req('POST', '/verify', { img1: [1, 2, 3], img2: B64 }), 400, 'embedding_dimension_mismatch');
  isError(t, await req('POST', '/verify', { img1: Array(128).fill(0.1), img2: Array(512).fill(0.1) }), 400, 'embedding_dimension_mismatch');
  isError(t, await req('POST', '/verify', { img1: Array(128).fill(1e39), img2: Array(128).fill(0.1) }), 400, 'invalid_embedding', 'float32 overflow');
  const nan = Buffer.alloc(128 * 4);
  nan.writeFloatLE(NaN, 8);
  isError(t, await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) }, targets_b64: nan.toString('base64') }), 400, 'invalid_embedding', 'NaN in targets_b64');
  isError(t, await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) }, targets_b64: Buffer.alloc(100 * 4).toString('base64') }), 400, 'embedding_dimension_mismatch');
  isError(t, await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) } }), 400, 'invalid_request', 'no targets');
  isError(t, await req('POST', '/represent', { img: NOFACE.toString('base64') }), 422, 'no_face_detected');
});

t.test('limits', async (t) => {
  const big = Buffer.concat([PNG, Buffer.alloc((1 << 20) + 10)]).toString('base64');
  isError(t, await req('POST', '/represent', { img: big }), 413, 'image_too_large');
  const huge = 'A'.repeat(3 << 20);
  isError(t, await req('POST', '/represent', { img: huge }), 413, 'request_too_large');
  // Refused by the gateway from the header: the model server never sees it (the gateway itself never
  // decodes pixels). How fast belongs in a bench, never in a timed test.
  const computeBefore = (await stats(ms.port)).compute;
  const bomb = await req('POST', '/represent', { img: makeBombPng().toString('base64') });
  t.equal((await stats(ms.port)).compute, computeBefore, 'the bomb never reached the model server');
  isError(t, bomb, 413, 'too_many_pixels', 'decompression bomb');
  const targets = Array.from({ length: 1001 }, () => Array(128).fill(0.5));
  isError(t, await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) }, targets }), 413, 'too_many_targets');
  const b64 = Buffer.alloc(1001 * 128 * 4).toString('base64');
  isError(t, await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) }, targets_b64: b64 }), 413, 'too_many_targets', 'b64 targets');
  // multipart file over the image limit
  const fd = new FormData();
  fd.append('img', blob(Buffer.concat([PNG, Buffer.alloc((1 << 20) + 10)])), 'a.png');
  isError(t, await req('POST', '/represent', undefined, { raw: fd }), 413, 'image_too_large', 'multipart file');
});

t.test('input modes give identical embeddings', async (t) => {
  const emb = async (r: Res) => { t.equal(r.status, 200, r.text.slice(0, 200)); return r.json.results[0].embedding as number[]; };
  const viaB64 = await emb(await req('POST', '/represent', { img: B64 }));
  const viaUri = await emb(await req('POST', '/represent', { img: `data:image/png;base64,${B64}` }));
  const fd = new FormData();
  fd.append('img', blob(PNG), 'face.png');
  const viaUpload = await emb(await req('POST', '/represent', undefined, { raw: fd }));
  const viaUrl = await emb(await req('POST', '/represent', { img: 'http://images.example.com/face.png' }));
  const viaFile = await emb(await req('POST', '/represent', { img: 'file:face.png' }));
  t.same(viaUri, viaB64);
  t.same(viaUpload, viaB64);
  t.same(viaUrl, viaB64);
  t.same(viaFile, viaB64);
  const other = await emb(await req('POST', '/represent', { img: PNG2.toString('base64') }));
  t.notSame(other, viaB64);
  // multipart verify with two files and a bad boolean
  const v = new FormData();
  v.append('img1', blob(PNG), 'a.png');
  v.append('img2', blob(PNG2), 'b.png');
  v.append('enforce_detection', '0');
  v.append('threshold', '0.5');
  const vr = await req('POST', '/verify', undefined, { raw: v });
  t.equal(vr.status, 200, vr.text);
  t.equal(vr.json.threshold, 0.5);
  const bad = new FormData();
  bad.append('img1', blob(PNG), 'a.png');
  bad.append('img2', blob(PNG), 'b.png');
  bad.append('align', 'no');
  const br = await req('POST', '/verify', undefined, { raw: bad });
  isError(t, br, 400, 'invalid_request', 'multipart bad boolean');
  t.match(br.json.detail, /align/);
  const unk = new FormData();
  unk.append('img', blob(PNG), 'a.png');
  unk.append('foo', 'bar');
  t.match((await req('POST', '/represent', undefined, { raw: unk })).json.detail, /foo/);
  // compare with an uploaded source
  const c = new FormData();
  c.append('source', blob(PNG), 'a.png');
  c.append('targets', JSON.stringify([viaB64, other]));
  const cr = await req('POST', '/compare', undefined, { raw: c });
  t.equal(cr.status, 200, cr.text);
  t.equal(cr.json.results[0].distance, 0);
});

t.test('multipart: a part typed as an image is a file even without a filename (RFC 7578; found by the OpenAPI fuzz)', async (t) => {
  const boundary = 'fcBoundary7578';
  const part = (headers: string, body: Buffer | string) => Buffer.concat([Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`), Buffer.isBuffer(body) ? body : Buffer.from(body), Buffer.from('\r\n')]);
  const send = (path: string, parts: Buffer[]) =>
    req('POST', path, undefined, { raw: new Uint8Array(Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)])), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  const viaB64 = await req('POST', '/represent', { img: B64 });
  t.equal(viaB64.status, 200, viaB64.text);
  // Before: busboy read the part as UTF-8 text, so the PNG was corrupted into 'not a supported image input'.
  const noName = await send('/represent', [part('Content-Disposition: form-data; name="img"\r\nContent-Type: image/png', PNG)]);
  t.equal(noName.status, 200, noName.text);
  t.same(noName.json.results[0].embedding, viaB64.json.results[0].embedding, 'the same bytes reach the model as base64 in JSON');
  // Text parts stay text, typed or not: an explicit text/plain, and a JSON source typed application/json.
  const text = await send('/represent', [part('Content-Disposition: form-data; name="img"\r\nContent-Type: text/plain', B64)]);
  t.equal(text.status, 200, text.text);
  const json = await send('/compare', [
    part('Content-Disposition: form-data; name="source"\r\nContent-Type: application/json', JSON.stringify({ embedding: Array(128).fill(0.1) })),
    part('Content-Disposition: form-data; name="targets"', JSON.stringify([Array(128).fill(0.1), Array(128).fill(-0.1)])),
  ]);
  t.equal(json.status, 200, json.text);
  t.equal(json.json.results.length, 2);
  const badJson = await send('/compare', [part('Content-Disposition: form-data; name="source"\r\nContent-Type: application/json', '{"embedding": [1,')]);
  isError(t, badJson, 400, 'invalid_request', 'a part typed application/json that is not JSON');
  t.match(badJson.json.detail, /application\/json/);
});

t.test('remote URL and local file refusals', async (t) => {
  isError(t, await req('POST', '/represent', { img: 'http://127.0.0.1:1/x.png' }), 400, 'url_not_allowed');
  isError(t, await req('POST', '/represent', { img: 'http://private.example.com/face.png' }), 400, 'url_not_allowed');
  isError(t, await req('POST', '/represent', { img: 'http://169.254.169.254/latest/meta-data/' }), 400, 'url_not_allowed');
  isError(t, await req('POST', '/represent', { img: 'http://images.example.com/missing.png' }), 422, 'url_fetch_failed');
  isError(t, await req('POST', '/represent', { img: 'file:../../etc/passwd' }), 400, 'url_not_allowed', 'path traversal');
  isError(t, await req('POST', '/represent', { img: 'file:///etc/passwd' }), 400, 'url_not_allowed', 'absolute path outside root');
});

t.test('semantics: represent batch, vector-only verify and compare never hit the model server', async (t) => {
  const batch = await req('POST', '/represent', { img: [B64, PNG2.toString('base64')] });
  t.equal(batch.status, 200);
  t.equal(batch.json.results.length, 2);
  t.ok(Array.isArray(batch.json.results[0]), 'list per image');
  const single = await req('POST', '/represent', { img: B64, model_name: 'Facenet512' });
  t.equal(single.json.results[0].embedding.length, 512);
  t.equal(single.json.model, 'Facenet512');
  const before = (await (await fetch(`http://127.0.0.1:${ms.port}/__stats`)).json()) as { compute: number; requestIds: string[] };
  const a = Array.from({ length: 128 }, (_, i) => Math.sin(i));
  const b = Array.from({ length: 128 }, (_, i) => Math.sin(i) + 0.05 * Math.cos(3 * i));
  const v = await req('POST', '/verify', { img1: a, img2: b, distance_metric: 'euclidean_l2' });
  t.equal(v.status, 200);
  t.equal(v.json.similarity_metric, 'euclidean_l2');
  t.equal(v.json.threshold, 0.8);
  t.equal(v.json.verified, v.json.distance <= 0.8);
  t.same(v.json.facial_areas.img1, { x: null, y: null, w: null, h: null, left_eye: null, right_eye: null });
  const targets = Array.from({ length: 50 }, (_, k) => Array.from({ length: 128 }, (_, i) => Math.sin(i + k * 0.1)));
  const cj = await req('POST', '/compare', { source: { embedding: a }, targets, top_k: 5 });
  t.equal(cj.status, 200);
  t.equal(cj.json.results.length, 5);
  t.equal(cj.json.results[0].index, 0, 'nearest first');
  t.equal(cj.json.dims, 128);
  t.equal(cj.json.source, null);
  const f32 = new Float32Array(targets.flat());
  const cb = await req('POST', '/compare', { source: { embedding: a }, targets_b64: Buffer.from(f32.buffer).toString('base64'), top_k: 5 });
  t.same(cb.json.results, cj.json.results, 'targets_b64 = targets');
  const after = (await (await fetch(`http://127.0.0.1:${ms.port}/__stats`)).json()) as { compute: number };
  t.equal(after.compute, before.compute, 'no model-server hop');
  const id = '1b9c4a9e-2f7d-4a3c-9a41-3b1f2e8d7c6b';
  await req('POST', '/represent', { img: B64 }, { headers: { 'x-request-id': id } });
  const s2 = (await (await fetch(`http://127.0.0.1:${ms.port}/__stats`)).json()) as { requestIds: string[] };
  t.ok(s2.requestIds.includes(id), 'x-request-id forwarded upstream');
});

t.test('detector_fallback reaches the model server from JSON and multipart, on every image route', async (t) => {
  // The fake model server's convention: a 9-pixel-wide image has a face only the fallback finds.
  const FALLBACK_ONLY = makePng(9, 9, 5);
  const b64 = FALLBACK_ONLY.toString('base64');
  const target = [Array.from({ length: 128 }, (_, i) => Math.cos(i))];
  const areaOf = {
    represent: (j: any) => j.results[0].facial_area,
    verify: (j: any) => j.facial_areas.img1,
    compare: (j: any) => j.source.facial_area,
  };
  const json = (route: 'represent' | 'verify' | 'compare', extra: Record<string, unknown>) =>
    route === 'represent' ? { img: b64, ...extra } : route === 'verify' ? { img1: b64, img2: B64, ...extra } : { source: { img: b64 }, targets: target, ...extra };
  const form = (route: 'represent' | 'verify' | 'compare', extra: Record<string, string>) => {
    const fd = new FormData();
    if (route === 'represent') fd.append('img', blob(FALLBACK_ONLY), 'a.png');
    if (route === 'verify') {
      fd.append('img1', blob(FALLBACK_ONLY), 'a.png');
      fd.append('img2', blob(PNG), 'b.png');
    }
    if (route === 'compare') {
      fd.append('source', blob(FALLBACK_ONLY), 'a.png');
      fd.append('targets', JSON.stringify(target));
    }
    for (const [k, v] of Object.entries(extra)) fd.append(k, v);
    return fd;
  };
  for (const route of ['represent', 'verify', 'compare'] as const) {
    const dflt = await req('POST', `/${route}`, json(route, {}));
    t.equal(dflt.status, 200, `${route} default: ${dflt.text.slice(0, 200)}`);
    t.equal(areaOf[route](dflt.json).detector, 'retinaface', `${route}: the fallback runs by default`);
    const on = await req('POST', `/${route}`, undefined, { raw: form(route, { detector_fallback: 'true' }) });
    t.equal(areaOf[route](on.json).detector, 'retinaface', `${route}: multipart true`);

    const off = await req('POST', `/${route}`, json(route, { detector_fallback: false }));
    isError(t, off, 422, 'no_face_detected', `${route} JSON false`);
    const offForm = await req('POST', `/${route}`, undefined, { raw: form(route, { detector_fallback: '0' }) });
    isError(t, offForm, 422, 'no_face_detected', `${route} multipart 0`);
    const whole = await req('POST', `/${route}`, json(route, { detector_fallback: 'false', enforce_detection: false }));
    t.equal(whole.status, 200, whole.text.slice(0, 200));
    t.match(areaOf[route](whole.json), { x: 0, y: 0, w: 8, h: 8, detector: 'opencv' }, `${route}: the whole image, as DeepFace`);
    const wholeForm = await req('POST', `/${route}`, undefined, { raw: form(route, { detector_fallback: 'false', enforce_detection: 'false' }) });
    t.same(areaOf[route](wholeForm.json), areaOf[route](whole.json), `${route}: multipart = JSON`);
  }
  const bad = await req('POST', '/represent', { img: b64, detector_fallback: 'maybe' });
  isError(t, bad, 400, 'invalid_request', 'detector_fallback not a boolean');
  t.match(bad.json.detail, /detector_fallback.*boolean/);
  const badForm = await req('POST', '/represent', undefined, { raw: form('represent', { detector_fallback: 'yes' }) });
  isError(t, badForm, 400, 'invalid_request', 'multipart detector_fallback not a boolean');
  t.match(badForm.json.detail, /detector_fallback/);
});

t.test('boolean options reach the model server in every form: align, l2_normalize, enforce_detection', async (t) => {
  // The fake model server's conventions: align=false embeds other bytes, l2_normalize scales to unit
  // length, enforce_detection=false answers a 7-pixel-wide image (no face) with the whole image.
  // (test/e2e-rest.test.ts shows what each option changes on the real model server.)
  const FALSE = [false, 'false', '0', 0];
  const TRUE = [true, 'true', '1', 1];
  const json = (extra: Record<string, unknown>, img = B64) => req('POST', '/represent', { img, ...extra });
  const form = (extra: Record<string, string>, img = PNG) => {
    const fd = new FormData();
    fd.append('img', blob(img), 'a.png');
    for (const [k, v] of Object.entries(extra)) fd.append(k, v);
    return req('POST', '/represent', undefined, { raw: fd });
  };
  const emb = (r: Res): number[] => {
    t.equal(r.status, 200, r.text.slice(0, 200));
    return r.json?.results?.[0]?.embedding ?? [];
  };
  const dflt = emb(await json({}));
  const unaligned = emb(await json({ align: false }));
  t.notSame(unaligned, dflt, 'align=false changes the embedding');
  for (const v of TRUE) t.same(emb(await json({ align: v })), dflt, `align ${JSON.stringify(v)}: aligned`);
  for (const v of FALSE) t.same(emb(await json({ align: v })), unaligned, `align ${JSON.stringify(v)}: not aligned`);
  for (const v of ['true', '1']) t.same(emb(await form({ align: v })), dflt, `multipart align ${v}: aligned`);
  for (const v of ['false', '0']) t.same(emb(await form({ align: v })), unaligned, `multipart align ${v}: not aligned`);
  const v1 = await req('POST', '/verify', { img1: B64, img2: dflt, align: 'false' });
  t.equal(v1.status, 200, v1.text.slice(0, 200));
  t.ok(v1.json.distance > 0, 'verify forwards align too: the unaligned face is not the aligned embedding');

  const norm = (e: number[]) => Math.hypot(...e);
  t.ok(norm(dflt) > 2, `the default embedding is not normalised (norm ${norm(dflt)})`);
  const unit = dflt.map((x) => x / norm(dflt));
  const close = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => Math.abs(x - b[i]!) < 1e-12);
  for (const v of TRUE) t.ok(close(emb(await json({ l2_normalize: v })), unit), `l2_normalize ${JSON.stringify(v)}: the unit vector`);
  for (const v of FALSE) t.same(emb(await json({ l2_normalize: v })), dflt, `l2_normalize ${JSON.stringify(v)}: the raw embedding`);
  t.ok(close(emb(await form({ l2_normalize: '1' })), unit), 'multipart l2_normalize 1: the unit vector');
  t.same(emb(await form({ l2_normalize: 'false' })), dflt, 'multipart l2_normalize false: the raw embedding');

  const noFace = NOFACE.toString('base64');
  isError(t, await json({}, noFace), 422, 'no_face_detected', 'enforce_detection by default');
  for (const v of TRUE) isError(t, await json({ enforce_detection: v }, noFace), 422, 'no_face_detected', `enforce_detection ${JSON.stringify(v)}`);
  for (const v of FALSE) {
    const r = await json({ enforce_detection: v }, noFace);
    t.equal(r.status, 200, `enforce_detection ${JSON.stringify(v)}: ${r.text.slice(0, 200)}`);
    t.match(r.json?.results?.[0], { face_confidence: 0, facial_area: { x: 0, y: 0, w: 6, h: 6 } }, `enforce_detection ${JSON.stringify(v)}: the whole image`);
  }
  isError(t, await form({ enforce_detection: 'true' }, NOFACE), 422, 'no_face_detected', 'multipart enforce_detection true');
  t.equal((await form({ enforce_detection: '0' }, NOFACE)).status, 200, 'multipart enforce_detection 0: the whole image');
});

t.test("DeepFace's thresholds and confidence, stated as literals, and the metric asked, for every model the model server serves", async (t) => {
  for (const model_name of ['Facenet', 'Facenet512', 'SFace']) {
    const rep = await req('POST', '/represent', { img: PNG2.toString('base64'), model_name });
    t.equal(rep.status, 200, rep.text.slice(0, 200));
    const other: number[] = rep.json.results[0].embedding;
    const own: number[] = (await req('POST', '/represent', { img: B64, model_name })).json.results[0].embedding;
    for (const metric of ['cosine', 'euclidean', 'euclidean_l2', 'angular'] as DeepFaceMetric[]) {
      const label = `${model_name}/${metric}`;
      const threshold = DEEPFACE_THRESHOLDS[model_name]![metric];
      // An image against an embedding: decided by the model server.
      const v = await req('POST', '/verify', { img1: B64, img2: other, model_name, distance_metric: metric });
      t.equal(v.status, 200, `${label}: ${v.text.slice(0, 200)}`);
      t.equal(v.json.similarity_metric, metric, `${label}: the metric asked`);
      t.ok(Math.abs(v.json.distance - distance(own, other, metric)) <= 1e-6, `${label}: the distance of the metric asked (${v.json.distance})`);
      t.equal(v.json.threshold, threshold, `${label}: DeepFace's threshold`);
      t.equal(v.json.confidence, deepfaceConfidence(v.json.distance, model_name, metric, v.json.distance <= threshold), `${label}: DeepFace's confidence`);
      // Two embeddings: decided by the gateway, with its own tables.
      const g = await req('POST', '/verify', { img1: own, img2: other, model_name, distance_metric: metric });
      t.equal(g.json.threshold, threshold, `${label}: the gateway's threshold`);
      t.equal(g.json.distance, v.json.distance, `${label}: the gateway's distance`);
      t.equal(g.json.confidence, v.json.confidence, `${label}: the gateway's confidence`);
    }
  }
});

t.test('upstream faults', async (t) => {
  const body = { img1: B64, img2: B64 };
  const accountsUrl = `http://127.0.0.1:${gw.extra['ACCOUNTS']}`;
  const usedBefore = ((await (await fetch(accountsUrl)).json()) as { used: Record<string, number> }).used['acct-2'] ?? 0;
  await setFault(ms.port, 'die');
  // The frame reached the model server, which died with it: lost, not resent, kept charged (issue 24).
  isError(t, await req('POST', '/verify', body, { key: 'rest-key-2' }), 502, 'upstream_lost', 'killed mid-request');
  await setFault(ms.port, 'stall');
  const st = await req('POST', '/verify', body, { key: 'rest-key-2' });
  isError(t, st, 504, 'upstream_timeout', 'stalled');
  // A lower bound cannot flake: the answer waited for the 1.5 s upstream timeout (the stalled model
  // server never answers, so nothing else could end it); an upper bound would measure the machine.
  t.ok(st.ms >= 1400, `cut by the upstream timeout (${st.ms.toFixed(0)} ms)`);
  await setFault(ms.port, 'oversize');
  isError(t, await req('POST', '/verify', body, { key: 'rest-key-2' }), 502, 'upstream_response_too_large');
  await setFault(ms.port, '5xx');
  isError(t, await req('POST', '/verify', body, { key: 'rest-key-2' }), 502, 'upstream_failed', '5xx, no leak');
  await setFault(ms.port, 'garbage');
  isError(t, await req('POST', '/verify', body, { key: 'rest-key-2' }), 502, 'upstream_failed', 'garbage');
  await setFault(ms.port, 'warming');
  const w = await req('POST', '/verify', body, { key: 'rest-key-2' });
  isError(t, w, 503, 'service_warming');
  t.ok(w.headers.get('retry-after'));
  const rd = await req('GET', '/readiness', undefined, { key: null });
  t.equal(rd.status, 503);
  t.equal(rd.json.status, 'warming');
  t.ok(rd.headers.get('retry-after'));
  await setFault(ms.port, 'none');
  t.equal((await req('POST', '/verify', body, { key: 'rest-key-2' })).status, 200);
  await new Promise((r) => setTimeout(r, 100));
  const acc = (await (await fetch(accountsUrl)).json()) as { used: Record<string, number>; refunds: string[] };
  t.equal(acc.used['acct-2'] ?? 0, usedBefore + 2, 'every 5xx but upstream_lost refunded: the lost request and the success are charged');
  t.equal(acc.refunds.filter((a) => a === 'acct-2').length, 5);
});

t.test('rate limiting: 429 with headers', async (t) => {
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_RATE_LIMIT_REQUESTS: '3', FACECOMPUTE_RATE_LIMIT_WINDOW_MS: '30000', TEST_KEYS: JSON.stringify(KEYS) });
  t.teardown(() => g.kill('SIGKILL'));
  const b = `http://127.0.0.1:${g.port}`;
  const body = { img1: Array(128).fill(0.1), img2: Array(128).fill(0.2) };
  for (let i = 0; i < 3; i++) {
    const r = await req('POST', '/verify', body, { base: b });
    t.equal(r.status, 200);
    t.equal(r.headers.get('ratelimit-limit'), '3');
    t.equal(r.headers.get('ratelimit-remaining'), String(2 - i));
    t.match(r.headers.get('ratelimit-policy'), /"default";q=3;w=30/);
    t.match(r.headers.get('ratelimit'), new RegExp(`"default";r=${2 - i};t=\\d+`));
  }
  const r = await req('POST', '/verify', body, { base: b });
  isError(t, r, 429, 'rate_limited');
  t.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After');
  t.equal(r.headers.get('ratelimit-remaining'), '0');
  t.ok(r.headers.get('ratelimit-reset'));
  t.equal((await req('POST', '/verify', body, { base: b, key: 'rest-key-2' })).status, 200, 'per account');
});

t.test('queue: queue_full and queue_timeout under concurrent load', async (t) => {
  const slow = await startFakeModelServer();
  t.teardown(() => slow.kill('SIGKILL'));
  await setFault(slow.port, 'none', 700);
  const g = await startGateway({
    FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${slow.port}`,
    FACECOMPUTE_UPSTREAM_CONCURRENCY: '1', FACECOMPUTE_QUEUE_CAPACITY: '2', FACECOMPUTE_QUEUE_TIMEOUT_MS: '1000',
    // The bound on waiters and the timeout, the safety nets under either policy. Deadline admission
    // (the default) would shed the second waiter with queue_full as soon as the first answer shows
    // that it cannot start in time (test/admission-gateway.test.ts), instead of letting it time out.
    FACECOMPUTE_QUEUE_ADMISSION: 'capacity',
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '100', TEST_KEYS: JSON.stringify(KEYS),
  });
  t.teardown(() => g.kill('SIGKILL'));
  const b = `http://127.0.0.1:${g.port}`;
  await req('GET', '/capabilities', undefined, { base: b, key: null });
  const rs = await Promise.all(Array.from({ length: 8 }, () => req('POST', '/represent', { img: B64 }, { base: b })));
  const codes = rs.map((r) => r.json?.error ?? r.status);
  t.ok(codes.includes(200), `some succeed: ${codes}`);
  t.ok(codes.includes('queue_full'), 'queue_full');
  t.ok(codes.includes('queue_timeout'), 'queue_timeout');
  // One assertion each over all the 503s, however many there were: the test count stays the same.
  const refused = rs.filter((x) => x.status === 503);
  t.ok(refused.every((r) => r.headers.get('retry-after')), 'Retry-After on every 503');
  t.ok(refused.every((r) => Object.keys(r.json).sort().join() === 'detail,error'), 'every 503 is {error, detail}');
  // Refused before any upstream work: the model server computed exactly the successes, a count that
  // no load can change. (How fast a refusal is belongs in a bench, never in a timed test.)
  t.equal((await stats(slow.port)).compute, rs.filter((r) => r.status === 200).length, 'only the successes reached the model server');
});

t.test('draining on SIGTERM', async (t) => {
  const slow = await startFakeModelServer();
  t.teardown(() => slow.kill('SIGKILL'));
  // Event-driven, no sleeps: the in-flight request is held at the model server until released.
  await setFault(slow.port, 'hold');
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${slow.port}`, FACECOMPUTE_DRAIN_TIMEOUT_MS: '60000', TEST_KEYS: JSON.stringify(KEYS) });
  t.teardown(() => g.kill('SIGKILL'));
  const b = `http://127.0.0.1:${g.port}`;
  await req('GET', '/capabilities', undefined, { base: b, key: null });
  const inflight = req('POST', '/represent', { img: B64 }, { base: b });
  await until('the request to be at the model server', async () => (await stats(slow.port)).held === 1);
  g.kill('SIGTERM');
  await until('the gateway to drain', async () => (await req('GET', '/readiness', undefined, { base: b, key: null })).json?.error === 'gateway_draining');
  // The listener stays open while a request is in flight (the gateway closes it once they are done),
  // so a new request is answered, never refused: any fetch error here is a failure.
  const late = await req('POST', '/represent', { img: B64 }, { base: b });
  isError(t, late, 503, 'gateway_draining');
  t.match(late.json.detail, /draining/);
  t.equal(late.headers.get('connection'), 'close');
  t.ok(late.headers.get('retry-after'));
  const health = await req('GET', '/health', undefined, { base: b, key: null });
  t.equal(health.status, 200, '/health keeps answering while draining');
  await fetch(`http://127.0.0.1:${slow.port}/__release`, { method: 'POST' });
  const r = await inflight;
  t.equal(r.status, 200, 'in-flight request finished');
  t.equal(await g.exited, 0, 'exit 0');
});

t.test('readiness with Redis configured but down', async (t) => {
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_REDIS_URL: 'redis://127.0.0.1:1', TEST_KEYS: JSON.stringify(KEYS) });
  t.teardown(() => g.kill('SIGKILL'));
  const r = await req('GET', '/readiness', undefined, { base: `http://127.0.0.1:${g.port}`, key: null });
  t.equal(r.status, 503);
  t.equal(r.json.status, 'error');
  t.equal(r.json.error, 'limiter_unavailable');
  t.ok(r.headers.get('retry-after'));
});

t.test('readiness with the model server down', async (t) => {
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: 'http://127.0.0.1:1', TEST_KEYS: JSON.stringify(KEYS) });
  t.teardown(() => g.kill('SIGKILL'));
  const b = `http://127.0.0.1:${g.port}`;
  const r = await req('GET', '/readiness', undefined, { base: b, key: null });
  t.equal(r.status, 503);
  t.equal(r.json.error, 'model_server_unreachable');
  isError(t, await req('POST', '/represent', { img: B64 }, { base: b }), 502, 'upstream_failed');
  const v = await req('POST', '/compare', { source: { embedding: Array(128).fill(0.1) }, targets: [Array(128).fill(0.1)] }, { base: b });
  t.equal(v.status, 200, 'vector-only compare works without a model server');
});

t.test('Redis limiter: readiness and shared 429 across two gateways', async (t) => {
  const url = await requireService(t, 'Redis');
  if (!url) return;
  const key = `redis-key-${Date.now()}`;
  const keys = JSON.stringify([{ key, accountId: `acct-redis-${Date.now()}`, kind: 'rest' }]);
  const env = { FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_REDIS_URL: url, FACECOMPUTE_RATE_LIMIT_REQUESTS: '4', TEST_KEYS: keys };
  const [g1, g2] = await Promise.all([startGateway(env), startGateway(env)]);
  t.teardown(() => { g1.kill('SIGKILL'); g2.kill('SIGKILL'); });
  const r = await req('GET', '/readiness', undefined, { base: `http://127.0.0.1:${g1.port}`, key: null });
  t.equal(r.status, 200);
  const body = { img1: Array(128).fill(0.1), img2: Array(128).fill(0.2) };
  const codes: number[] = [];
  for (let i = 0; i < 6; i++) codes.push((await req('POST', '/verify', body, { key, base: `http://127.0.0.1:${(i % 2 ? g2 : g1).port}` })).status);
  t.same(codes, [200, 200, 200, 200, 429, 429], 'the window is shared by both replicas');
});

t.test('metrics on the admin listener', async (t) => {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const g = await startGateway({ FACECOMPUTE_MODEL_SERVER_URLS: `http://127.0.0.1:${ms.port}`, FACECOMPUTE_METRICS_PORT: String(port), TEST_KEYS: JSON.stringify(KEYS) });
  t.teardown(() => g.kill('SIGKILL'));
  await req('GET', '/health', undefined, { base: `http://127.0.0.1:${g.port}`, key: null });
  await req('POST', '/verify', {}, { base: `http://127.0.0.1:${g.port}` });
  const m = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  t.match(m, /facecompute_gateway_requests_total\{route="\/health",code="200"\} 1/);
  t.match(m, /facecompute_gateway_requests_total\{route="\/verify",code="400"\} 1/);
  t.match(m, /facecompute_gateway_request_duration_seconds_bucket/);
  t.match(m, /facecompute_gateway_queue_depth/);
  t.match(m, /facecompute_gateway_upstream_errors_total/);
  t.match(m, /facecompute_gateway_limiter_rejections_total/);
  const pub = await req('GET', '/metrics', undefined, { base: `http://127.0.0.1:${g.port}`, key: null });
  t.equal(pub.status, 404, 'not on the public port');
  // this gateway has remote images off (the default) and no local images root
  const b = `http://127.0.0.1:${g.port}`;
  isError(t, await req('POST', '/verify', { img1: 'https://images.example.com/face.png', img2: Array(128).fill(0.1) }, { base: b }), 400, 'input_mode_disabled', 'URL mode off');
  isError(t, await req('POST', '/verify', { img1: 'file:face.png', img2: Array(128).fill(0.1) }, { base: b }), 400, 'input_mode_disabled', 'file mode off');
});
