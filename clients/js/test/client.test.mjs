/**
 * The built client (dist/, what package.json exports) against a live facecompute service: every
 * operation with every input form, binary compare on the streaming path, typed errors, and retries
 * against a scripted stub. test/clients.test.ts (the repository's tap suite) starts `serve` and runs
 * this with FACECOMPUTE_URL, FACECOMPUTE_API_KEY, FC_TEST_IMAGES, FC_TEST_NO_FACE and
 * FC_TEST_METRICS_URL; a missing variable fails, never skips.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as fc from '@facecompute/client';

const { Client } = fc;

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run through test/clients.test.ts (npx tap test/clients.test.ts)`);
  return v;
}
const baseUrl = env('FACECOMPUTE_URL');
const apiKey = env('FACECOMPUTE_API_KEY');
const IMAGES = env('FC_TEST_IMAGES');
const NO_FACE = env('FC_TEST_NO_FACE');
const METRICS = env('FC_TEST_METRICS_URL');
const img = (n) => join(IMAGES, n);
const client = new Client({ baseUrl, apiKey });

/** A loopback server: DeepFace's images for URL inputs, or scripted answers for retry tests. */
async function serve(handler) {
  const server = createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

let files;
let ref;
before(async () => {
  files = await serve((req, res) => {
    try {
      const body = readFileSync(img(decodeURIComponent(req.url.slice(1))));
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  ref = {
    verify: await client.verify({ img1: img('img1.jpg'), img2: img('img2.jpg') }),
    embedding: (await client.represent({ img: img('img1.jpg') })).results[0].embedding,
  };
});
after(() => files.close());

const b64 = (p) => readFileSync(p).toString('base64');
const FORMS = {
  path: (p) => p,
  Buffer: (p) => readFileSync(p),
  Uint8Array: (p) => new Uint8Array(readFileSync(p)),
  ArrayBuffer: (p) => { const b = readFileSync(p); return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength); },
  Blob: (p) => new Blob([readFileSync(p)], { type: 'image/jpeg' }),
  'untyped Blob': (p) => new Blob([readFileSync(p)]),
  'data URI': (p) => `data:image/jpeg;base64,${b64(p)}`,
  'raw base64': (p) => b64(p),
  'URL string': (p) => `${files.url}/${p.split('/').pop()}`,
  'URL object': (p) => new URL(`${files.url}/${p.split('/').pop()}`),
};

test('capabilities', async () => {
  const caps = await client.capabilities();
  assert.equal(caps.default_model, 'Facenet');
  assert.ok(caps.allowed_models.includes('Dlib'));
  assert.equal(await client.capabilities(), caps, 'cached');
});

test('baseUrl and apiKey come from FACECOMPUTE_URL and FACECOMPUTE_API_KEY', async () => {
  const fromEnv = new Client();
  assert.equal(fromEnv.baseUrl, baseUrl);
  assert.equal((await fromEnv.represent({ img: img('img1.jpg') })).results.length, 1);
});

for (const [form, make] of Object.entries(FORMS)) {
  test(`verify and represent with a ${form}`, async () => {
    const v = await client.verify({ img1: make(img('img1.jpg')), img2: make(img('img2.jpg')) });
    assert.equal(v.verified, true);
    assert.ok(Math.abs(v.distance - ref.verify.distance) <= 1e-6, `${v.distance} vs ${ref.verify.distance}`);
    assert.deepEqual(v.facial_areas, ref.verify.facial_areas);
    const r = await client.represent({ img: make(img('img1.jpg')) });
    const e = r.results[0].embedding;
    assert.equal(e.length, 128);
    assert.ok(e.every((x, i) => Math.abs(x - ref.embedding[i]) <= 1e-6));
  });
}

test('verify with precomputed embeddings (arrays and Float32Array) and options', async () => {
  const e2 = (await client.represent({ img: img('img2.jpg') })).results[0].embedding;
  const v = await client.verify({ img1: ref.embedding, img2: e2 });
  assert.ok(Math.abs(v.distance - ref.verify.distance) <= 1e-6);
  assert.equal(v.facial_areas.img1.x, null);
  const mixed = await client.verify({ img1: Float64Array.from(ref.embedding), img2: img('img2.jpg') });
  assert.ok(Math.abs(mixed.distance - ref.verify.distance) <= 1e-6);
  const dlib = await client.verify({ img1: img('img1.jpg'), img2: img('img3.jpg'), model_name: 'Dlib', detector_backend: 'retinaface', distance_metric: 'euclidean_l2', threshold: 0.5 });
  assert.deepEqual([dlib.model, dlib.detector_backend, dlib.similarity_metric, dlib.threshold], ['Dlib', 'retinaface', 'euclidean_l2', 0.5]);
});

test('represent batches keep their order, also mixing parts', async () => {
  const r = await client.represent({ img: [img('img1.jpg'), readFileSync(img('couple.jpg')), `data:image/jpeg;base64,${b64(img('img3.jpg'))}`] });
  assert.deepEqual(r.results.map((faces) => faces.length), [1, 2, 1]);
  const one = await client.represent({ img: [img('img1.jpg')] });
  assert.ok(Array.isArray(one.results[0]), 'an array of one is still a batch');
  assert.equal((await client.represent({ img: img('couple.jpg'), max_faces: 1 })).results.length, 1);
  const unit = (await client.represent({ img: img('img1.jpg'), l2_normalize: true })).results[0].embedding;
  assert.ok(Math.abs(unit.reduce((s, x) => s + x * x, 0) - 1) < 1e-6);
});

async function paths() {
  const text = await (await fetch(`${METRICS}/metrics`)).text();
  const out = { streamed: 0, contiguous: 0 };
  for (const m of text.matchAll(/facecompute_gateway_compare_binary_targets_total\{path="(\w+)"\} (\S+)/g)) out[m[1]] = Number(m[2]);
  return out;
}

test('compare sends a Float32Array as the binary part, on the streaming path', async () => {
  const n = 5000;
  const targets = new Float32Array(n * 128);
  for (let i = 0; i < targets.length; i++) targets[i] = Math.sin(i * 0.37 + (i >> 7));
  targets.set(ref.embedding, 777 * 128);
  const before_ = await paths();
  const r = await client.compare({ source: ref.embedding, targets, top_k: 3 });
  const after_ = await paths();
  assert.equal(r.results[0].index, 777);
  assert.equal(r.results.length, 3);
  assert.equal(after_.streamed, before_.streamed + 1, 'source, model_name and distance_metric went before the targets part');
  assert.equal(after_.contiguous, before_.contiguous);
  const rows = Array.from({ length: 20 }, (_, i) => Array.from(targets.subarray((770 + i) * 128, (771 + i) * 128)));
  const want = (await client.compare({ source: ref.embedding, targets: targets.subarray(770 * 128, 790 * 128), top_k: 2 })).results;
  assert.deepEqual((await client.compare({ source: Float32Array.from(ref.embedding), targets: rows, top_k: 2 })).results, want);
  const bytes = new Uint8Array(targets.buffer, 770 * 128 * 4, 20 * 128 * 4);
  assert.deepEqual((await client.compare({ source: ref.embedding, targets: bytes, top_k: 2 })).results, want);
});

test('compare with an image source and with many sources', async () => {
  const e2 = (await client.represent({ img: img('img2.jpg') })).results[0].embedding;
  const targets = Float32Array.from([...e2, ...ref.embedding]);
  const r = await client.compare({ source: readFileSync(img('img1.jpg')), targets });
  assert.deepEqual(r.results.map((x) => x.index), [0, 1]);
  assert.ok(r.source.facial_area.w > 0);
  const many = await client.compare({ source: [ref.embedding, img('img2.jpg')], targets, top_k: 1 });
  assert.deepEqual(many.results.map((x) => x[0].index), [1, 0]);
});

test('errors are typed, with code, detail, status and x-request-id', async () => {
  const e = await client.represent({ img: NO_FACE, detector_fallback: false }).catch((x) => x);
  assert.ok(e instanceof fc.NoFaceDetectedError && e instanceof fc.UnprocessableEntityError && e instanceof fc.FacecomputeError);
  assert.equal(e.code, 'no_face_detected');
  assert.equal(e.status, 422);
  assert.match(e.detail, /Face could not be detected/);
  assert.match(e.requestId, /^[0-9a-f-]{36}$/);
  const mine = '0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3';
  const m = await client.verify({ img1: img('img1.jpg'), img2: img('img2.jpg'), model_name: 'VGG-Face' }, { requestId: mine }).catch((x) => x);
  assert.ok(m instanceof fc.BadRequestError);
  assert.deepEqual([m.code, m.status, m.requestId], ['model_not_allowed', 400, mine]);
  const inv = await client.represent({ img: img('invalid.jpg') }).catch((x) => x);
  assert.equal(inv.code, 'invalid_image');
  const bad = await new Client({ baseUrl, apiKey: 'fc_live_not_a_key' }).represent({ img: img('img1.jpg') }).catch((x) => x);
  assert.ok(bad instanceof fc.AuthenticationError);
  assert.equal(bad.code, 'invalid_api_key');
  const loose = await client.represent({ img: NO_FACE, enforce_detection: false, detector_fallback: false });
  assert.equal(loose.results[0].facial_area.x, 0);
  await assert.rejects(client.represent({ img: join(IMAGES, 'no-such.jpg') }), TypeError);
});

test("remoteImages: 'service' hands the URL to the service", async () => {
  const c = new Client({ baseUrl, apiKey, remoteImages: 'service' });
  const e = await c.represent({ img: `${files.url}/img1.jpg` }).catch((x) => x);
  assert.ok(e instanceof fc.BadRequestError);
  assert.equal(e.code, 'input_mode_disabled', 'this deployment has remote images off: the string reached the service');
});

/** A stub answering requests in order; records when each arrived. */
async function stub(answers) {
  const seen = [];
  const s = await serve((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(performance.now());
      const [status, headers, body] = answers.shift() ?? [500, {}, { error: 'internal_error', detail: 'stub ran out' }];
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    });
  });
  return { ...s, seen };
}
const OK = { results: [], model: 'Facenet', detector_backend: 'opencv' };
const err = (code, detail = 'x') => ({ error: code, detail });

test('retries honour Retry-After on 429', async () => {
  const s = await stub([[429, { 'retry-after': '1' }, err('rate_limited')], [200, {}, OK]]);
  const r = await new Client({ baseUrl: s.url, apiKey: 'k', backoff: 0.01 }).represent({ img: Buffer.from('img') });
  await s.close();
  assert.equal(r.model, 'Facenet');
  assert.equal(s.seen.length, 2);
  assert.ok(s.seen[1] - s.seen[0] >= 950, `waited ${s.seen[1] - s.seen[0]} ms, Retry-After said 1 s`);
});

test('retryable 503s are retried; other 503s and every other 4xx are not', async () => {
  const s = await stub([[503, {}, err('queue_full')], [503, { 'retry-after': '0' }, err('service_warming')], [200, {}, OK]]);
  await new Client({ baseUrl: s.url, apiKey: 'k', backoff: 0.02 }).represent({ img: Buffer.from('img') });
  await s.close();
  assert.equal(s.seen.length, 3);
  for (const [status, code, Cls] of [[400, 'invalid_request', fc.BadRequestError], [401, 'invalid_api_key', fc.AuthenticationError], [402, 'insufficient_credits', fc.InsufficientCreditsError], [403, 'account_inactive', fc.PermissionDeniedError], [404, 'not_found', fc.NotFoundError], [413, 'image_too_large', fc.PayloadTooLargeError], [422, 'url_fetch_failed', fc.UnprocessableEntityError], [503, 'other', fc.ServiceUnavailableError], [502, 'upstream_lost', fc.InternalServerError]]) {
    const t = await stub([[status, status === 503 ? {} : { 'retry-after': '0' }, err(code, 'nope')], [200, {}, OK]]);
    const e = await new Client({ baseUrl: t.url, apiKey: 'k', backoff: 0.01 }).represent({ img: Buffer.from('img') }).catch((x) => x);
    await t.close();
    assert.ok(e instanceof Cls, `${status} ${code}`);
    assert.deepEqual([e.status, e.code, e.detail], [status, code, 'nope']);
    assert.equal(t.seen.length, 1, `${status} ${code} is not retried`);
  }
});

test('500 internal_error, 502 upstream_failed and 504 upstream_timeout are retried with backoff (issue 39)', async () => {
  for (const [status, code] of [[500, 'internal_error'], [502, 'upstream_failed'], [504, 'upstream_timeout']]) {
    const s = await stub([[status, {}, err(code)], [status, {}, err(code)], [200, {}, OK]]);
    const r = await new Client({ baseUrl: s.url, apiKey: 'k', backoff: 0.1 }).represent({ img: Buffer.from('img') });
    await s.close();
    assert.equal(r.model, 'Facenet');
    assert.equal(s.seen.length, 3, `${status} ${code} retried twice`);
    assert.ok(s.seen[1] - s.seen[0] >= 45 && s.seen[2] - s.seen[1] >= 95, `equal-jitter backoff: at least half of 100 then 200 ms, got ${s.seen[1] - s.seen[0]}, ${s.seen[2] - s.seen[1]}`);
    const once = await stub([[status, {}, err(code)], [status, {}, err(code)], [200, {}, OK]]);
    const e = await new Client({ baseUrl: once.url, apiKey: 'k', backoff: 0.01 }).represent({ img: Buffer.from('img') }, { maxRetries: 0 }).catch((x) => x);
    await once.close();
    assert.equal(e.code, code, 'per-request maxRetries: 0');
    assert.equal(once.seen.length, 1);
  }
});

test('a timeout is an APITimeoutError, an abort an APIUserAbortError, even while waiting to retry (issue 39)', async () => {
  const slow = await serve((req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(OK)), 1500));
  const t0 = performance.now();
  const e = await new Client({ baseUrl: slow.url, apiKey: 'k', maxRetries: 0 }).capabilities({ timeout: 0.2 }).catch((x) => x);
  assert.ok(e instanceof fc.APITimeoutError && e instanceof fc.APIConnectionError, String(e));
  assert.equal(e.code, 'timeout');
  assert.ok(performance.now() - t0 < 1200, 'the per-request timeout, not the client\'s');
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 100);
  const a = await new Client({ baseUrl: slow.url, apiKey: 'k' }).capabilities({ signal: ctl.signal }).catch((x) => x);
  assert.ok(a instanceof fc.APIUserAbortError, String(a));
  await slow.close();
  const s = await stub([[429, { 'retry-after': '30' }, err('rate_limited')], [200, {}, OK]]);
  const waiting = new AbortController();
  setTimeout(() => waiting.abort(), 200);
  const t1 = performance.now();
  const w = await new Client({ baseUrl: s.url, apiKey: 'k' }).capabilities({ signal: waiting.signal }).catch((x) => x);
  await s.close();
  assert.ok(w instanceof fc.APIUserAbortError, String(w));
  assert.ok(performance.now() - t1 < 2000, 'the Retry-After wait was abandoned on abort');
  assert.equal(s.seen.length, 1);
});

test('gives up after maxRetries, and at once on a Retry-After over maxRetryWait', async () => {
  const s = await stub(Array(5).fill([429, { 'retry-after': '0' }, err('rate_limited')]));
  const e = await new Client({ baseUrl: s.url, apiKey: 'k', maxRetries: 2 }).capabilities().catch((x) => x);
  await s.close();
  assert.ok(e instanceof fc.RateLimitError);
  assert.equal(s.seen.length, 3);
  const l = await stub([[429, { 'retry-after': '3600' }, err('rate_limited')], [200, {}, OK]]);
  const t0 = performance.now();
  const e2 = await new Client({ baseUrl: l.url, apiKey: 'k', maxRetryWait: 10 }).capabilities().catch((x) => x);
  await l.close();
  assert.equal(e2.retryAfter, 3600);
  assert.equal(l.seen.length, 1);
  assert.ok(performance.now() - t0 < 2000);
});

test('a non-JSON error is still typed; a refused connection is an APIConnectionError', async () => {
  const s = await serve((req, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>'));
  const e = await new Client({ baseUrl: s.url }).capabilities().catch((x) => x);
  await s.close();
  assert.ok(e instanceof fc.InternalServerError);
  assert.equal(e.code, 'http_502');
  const c = await new Client({ baseUrl: 'http://127.0.0.1:9', maxRetries: 1, backoff: 0.01 }).capabilities().catch((x) => x);
  assert.ok(c instanceof fc.APIConnectionError);
});

test('what the README states: defaults, ESM, Node 20, no runtime dependencies', () => {
  const c = new Client({ baseUrl: 'http://127.0.0.1:9' });
  assert.deepEqual([c.policy.maxRetries, c.policy.backoff, c.policy.maxRetryWait], [3, 0.5, 60]);
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.engines.node, '>=20');
  assert.equal(pkg.dependencies, undefined);
});
