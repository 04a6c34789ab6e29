/**
 * /compare with binary targets compared while they arrive (the streaming path: source, model_name
 * and distance_metric before the `targets` part) against the contiguous path (anything else) and
 * JSON targets: the same answers to the byte, the same errors, each request's path proved by the
 * gateway's counter (facecompute_gateway_compare_binary_targets_total), and a client that goes away
 * mid-part leaves no native state behind. In-process gateway on a loopback socket, fake upstream.
 * About 3 s.
 */
import t from 'tap';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config/index.js';
import { buildGateway, type Gateway } from '../src/gateway/app.js';
import { createLogger } from '../src/logging/logger.js';
import { TargetStream } from '../src/native/compare-stream.js';
import { MemoryAccounts } from './helpers/memory-accounts.js';
import { seededMatrix } from './helpers/vectors.js';
import { stubUpstream } from './helpers/stub-upstream.js';

const DIMS = 128;
const MAX_TARGETS = 2000;
const B = 'stream-test-boundary';

const upstream = stubUpstream();

let gw: Gateway;
let port = 0;
t.before(async () => {
  const config = loadConfig({ FACECOMPUTE_LOG_LEVEL: 'silent', FACECOMPUTE_MAX_TARGETS: String(MAX_TARGETS), FACECOMPUTE_MAX_COMPARE_BYTES: String(4 << 20), FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_RATE_LIMIT_CONCURRENT: '1000' });
  gw = await buildGateway({ config, accounts: new MemoryAccounts([{ key: 'k', accountId: 'a', kind: 'rest' }]), logger: createLogger('test', 'silent'), upstream });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  port = (gw.app.server.address() as AddressInfo).port;
});
t.teardown(() => gw?.close(10));

const matrix = (n: number, seed: number) => seededMatrix(n, DIMS, seed);
const bytesOf = (f: Float32Array) => Buffer.from(f.buffer, f.byteOffset, f.byteLength);
const row = (m: Float32Array, i: number) => Array.from(m.subarray(i * DIMS, (i + 1) * DIMS));

type Part = [name: string, value: string | Buffer];
/** A multipart body with the parts in the given order; a Buffer is the binary targets part. */
function body(parts: Part[]): Buffer {
  const out: Buffer[] = [];
  for (const [name, value] of parts) {
    const head = typeof value === 'string' ? `Content-Disposition: form-data; name="${name}"` : `Content-Disposition: form-data; name="${name}"; filename="t.f32"\r\nContent-Type: application/octet-stream`;
    out.push(Buffer.from(`--${B}\r\n${head}\r\n\r\n`), Buffer.from(value), Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${B}--\r\n`));
  return Buffer.concat(out);
}

/** Posts the body in pieces of `piece` bytes (so the gateway reads it in several chunks). */
function post(raw: Buffer, piece = 48 * 1024): Promise<{ status: number; text: string; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/compare', method: 'POST', headers: { authorization: 'Bearer k', 'content-type': `multipart/form-data; boundary=${B}`, 'content-length': String(raw.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, json });
      });
    });
    req.on('error', reject);
    let at = 0;
    const next = () => {
      if (at >= raw.length) return void req.end();
      const end = Math.min(raw.length, at + piece);
      const chunk = raw.subarray(at, end);
      at = end;
      if (req.write(chunk)) setImmediate(next);
      else req.once('drain', next);
    };
    next();
  });
}

async function counted(): Promise<{ streamed: number; contiguous: number }> {
  const m = await gw.metrics.compareTargets.get();
  const of = (path: string) => m.values.find((v) => v.labels['path'] === path)?.value ?? 0;
  return { streamed: of('streamed'), contiguous: of('contiguous') };
}

/** Posts and says which path read the targets. */
async function postCounted(raw: Buffer): Promise<{ status: number; text: string; json: any; path: string }> {
  const before = await counted();
  const r = await post(raw);
  const after = await counted();
  const path = after.streamed > before.streamed ? 'streamed' : after.contiguous > before.contiguous ? 'contiguous' : 'none';
  return { ...r, path };
}

/** The answer without its `time` field, which differs run to run. */
const stable = (text: string) => text.replace(/"time":[0-9.e+-]+/, '"time":0');

const targets = matrix(1500, 7);
const targetBytes = bytesOf(targets);

t.test('the streaming path answers exactly what the contiguous path and JSON targets answer', async (t) => {
  const one = JSON.stringify({ embedding: row(targets, 42) });
  const two = JSON.stringify([{ embedding: row(targets, 42) }, { embedding: row(targets, 1111) }]);
  for (const metric of ['cosine', 'euclidean', 'euclidean_l2', 'angular']) {
    for (const source of [one, two]) {
      for (const topK of ['10', undefined]) {
        const fields: Part[] = [['source', source], ['model_name', 'Dlib'], ['distance_metric', metric], ...(topK ? [['top_k', topK] as Part] : [])];
        const what = `${metric}, ${source === one ? 'one source' : 'two sources'}, top_k ${topK ?? 'none'}`;
        const streamed = await postCounted(body([...fields, ['targets', targetBytes]]));
        t.equal(streamed.status, 200, `${what}: ${streamed.text.slice(0, 200)}`);
        t.equal(streamed.path, 'streamed', `${what}: fields first take the streaming path`);
        // The same fields after the targets part: kept in one buffer, then compared.
        const contiguous = await postCounted(body([['targets', targetBytes], ...fields]));
        t.equal(contiguous.path, 'contiguous', `${what}: fields after the targets take the contiguous path`);
        t.equal(stable(streamed.text), stable(contiguous.text), `${what}: identical answers`);
        const lifted = (await gw.metrics.compareJsonLifted.get()).values[0]?.value ?? 0;
        const json = await gw.app.inject({ method: 'POST', url: '/compare', headers: { authorization: 'Bearer k' }, payload: { source: JSON.parse(source), targets: Array.from({ length: 1500 }, (_, i) => row(targets, i)), model_name: 'Dlib', distance_metric: metric, ...(topK ? { top_k: Number(topK) } : {}) } });
        t.equal(stable(streamed.text), stable(json.body), `${what}: identical to JSON targets`);
        t.equal((await gw.metrics.compareJsonLifted.get()).values[0]?.value, lifted + 1, `${what}: the JSON targets were read natively`);
      }
    }
  }
  const first = (await post(body([['source', one], ['model_name', 'Dlib'], ['distance_metric', 'cosine'], ['top_k', '3'], ['targets', targetBytes]]))).json;
  t.equal(first.results[0].index, 42, 'the source finds itself first');
});

t.test('top_k after the targets part still streams (every distance kept until then)', async (t) => {
  const fields: Part[] = [['source', JSON.stringify({ embedding: row(targets, 5) })], ['model_name', 'Facenet'], ['distance_metric', 'angular']];
  const late = await postCounted(body([...fields, ['targets', targetBytes], ['top_k', '7'], ['threshold', '0.3']]));
  t.equal(late.path, 'streamed');
  const early = await postCounted(body([...fields, ['top_k', '7'], ['threshold', '0.3'], ['targets', targetBytes]]));
  t.equal(early.path, 'streamed');
  t.equal(late.json.results.length, 7);
  t.equal(stable(late.text), stable(early.text));
});

t.test('what the streaming path leaves to the contiguous one', async (t) => {
  const src = JSON.stringify({ embedding: row(targets, 9) });
  const cases: Array<[string, Part[]]> = [
    ['no distance_metric (a later part could set it)', [['source', src], ['model_name', 'Dlib'], ['top_k', '5']]],
    ['no model_name (a later part could change the row length)', [['source', src], ['distance_metric', 'cosine'], ['top_k', '5']]],
    ['four sources (the matrix product is faster)', [['source', JSON.stringify([0, 1, 2, 3].map((i) => ({ embedding: row(targets, i) })))], ['model_name', 'Dlib'], ['distance_metric', 'cosine'], ['top_k', '5']]],
    ['a source of the wrong length (its error comes later)', [['source', JSON.stringify({ embedding: [1, 2, 3] })], ['model_name', 'Dlib'], ['distance_metric', 'cosine']]],
    ['an unknown metric', [['source', src], ['model_name', 'Dlib'], ['distance_metric', 'manhattan']]],
  ];
  for (const [what, fields] of cases) {
    const r = await postCounted(body([...fields, ['targets', targetBytes]]));
    t.equal(r.path, 'contiguous', what);
    const reordered = await post(body([['targets', targetBytes], ...fields]));
    t.equal(r.status, reordered.status, `${what}: status ${r.status}`);
    t.equal(stable(r.text), stable(reordered.text), `${what}: same answer in either order`);
  }
});

t.test('bad targets on the streaming path: the contiguous path\'s errors, word for word', async (t) => {
  const fields: Part[] = [['source', JSON.stringify({ embedding: row(targets, 1) })], ['model_name', 'Dlib'], ['distance_metric', 'cosine'], ['top_k', '5']];
  const nan = new Float32Array(targets.slice(0, 1000 * DIMS));
  // Row 7 of the third 64 KiB chunk of the part (128 rows of 512 bytes each), and a later one.
  nan[(2 * 128 + 7) * DIMS + 3] = Number.NaN;
  nan[900 * DIMS] = Number.POSITIVE_INFINITY;
  const cases: Array<[string, Buffer, number, RegExp]> = [
    ['a truncated last row', targetBytes.subarray(0, 10 * DIMS * 4 + 100), 400, /10 whole rows .* expected 5120 or 5632 bytes/],
    ['NaN in row 7 of chunk 3', bytesOf(nan), 400, /vector 263 .* position 3/],
    ['more rows than the limit', bytesOf(matrix(MAX_TARGETS + 1, 3)), 413, new RegExp(`limit is ${MAX_TARGETS}`)],
    ['no rows at all', Buffer.alloc(0), 400, /hold no vectors/],
  ];
  for (const [what, bytes, status, detail] of cases) {
    const streamed = await postCounted(body([...fields, ['targets', bytes]]));
    t.equal(streamed.path, 'streamed', what);
    t.equal(streamed.status, status, `${what}: ${streamed.text.slice(0, 200)}`);
    t.match(streamed.json?.detail, detail, what);
    const contiguous = await postCounted(body([['targets', bytes], ...fields]));
    t.equal(contiguous.path, 'contiguous', what);
    t.equal(streamed.text, contiguous.text, `${what}: the same error`);
  }
  // Two targets parts: refused on either path, as busboy's reader refuses them on the other routes.
  for (const order of ['streamed', 'contiguous']) {
    const parts: Part[] = order === 'streamed' ? [...fields, ['targets', targetBytes], ['targets', targetBytes]] : [['targets', targetBytes], ['targets', targetBytes], ...fields];
    const twice = await post(body(parts));
    t.equal(twice.status, 400, `${order}: ${twice.text.slice(0, 200)}`);
    t.match(twice.json?.detail, /given more than once/);
  }
  t.equal(TargetStream.live, 0, 'every stream freed');
});

t.test('a client that goes away mid-part leaves nothing behind; the next request is answered', async (t) => {
  const raw = body([['source', JSON.stringify({ embedding: row(targets, 2) })], ['model_name', 'Dlib'], ['distance_metric', 'euclidean'], ['targets', targetBytes]]);
  const before = await counted();
  await new Promise<void>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/compare', method: 'POST', headers: { authorization: 'Bearer k', 'content-type': `multipart/form-data; boundary=${B}`, 'content-length': String(raw.length) } });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(raw.subarray(0, raw.length >> 1), () => setTimeout(() => req.destroy(), 50));
  });
  // The gateway notices the closed socket on its next read.
  for (let i = 0; i < 100 && TargetStream.live > 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(TargetStream.live, 0, 'the aborted stream was closed');
  t.same(await counted(), before, 'an aborted part is not counted as read');
  const next = await postCounted(raw);
  t.equal(next.status, 200);
  t.equal(next.path, 'streamed');
  t.equal(TargetStream.live, 0);
});
