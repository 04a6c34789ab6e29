/**
 * `models fetch` against a local HTTP server: the real download code, never the internet.
 */
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { fetchCanonical } from '../src/models/fetch.js';
import { resolveWeight, isResolved } from '../src/models/weights.js';
import type { WeightFile } from '../src/models/manifest.js';

const payload = randomBytes(300_000);
const sha = createHash('sha256').update(payload).digest('hex');

interface Behaviour {
  /** Bytes to send before dropping the connection (first N requests only). */
  truncateAt?: number;
  truncateTimes?: number;
  ignoreRange?: boolean;
  body?: Buffer;
}

async function serve(behaviour: Behaviour) {
  const ranges: Array<string | undefined> = [];
  let truncations = 0;
  const body = behaviour.body ?? payload;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    ranges.push(req.headers.range);
    let start = 0;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (m && !behaviour.ignoreRange) {
      start = Number(m[1]);
      if (start >= body.length) {
        res.writeHead(416).end();
        return;
      }
      res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
    } else {
      res.writeHead(200, { 'content-length': body.length });
    }
    const slice = body.subarray(start);
    if (behaviour.truncateAt !== undefined && truncations < (behaviour.truncateTimes ?? 1)) {
      truncations++;
      // Close the connection mid-body, as a flaky network does: a FIN after the bytes written, so the
      // client reads them all first (a reset a fixed 20 ms later could discard them unread on a loaded
      // machine, and the retry then had nothing to resume from).
      res.write(slice.subarray(0, behaviour.truncateAt), () => res.socket?.end());
      return;
    }
    res.end(slice);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/weights.bin`;
  return { url, ranges, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function weight(overrides: Partial<WeightFile> = {}): WeightFile {
  return { file: 'weights.bin', url: 'https://example.invalid/weights.bin', size: payload.length, sha256: sha, ...overrides };
}

t.test('a good file is downloaded, checked and placed in the cache', async (t) => {
  const srv = await serve({});
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  const progress: number[] = [];
  const path = await fetchCanonical(weight(), { cacheDir, url: srv.url, onProgress: (p) => progress.push(p.received) });
  t.same(readFileSync(path), payload);
  t.ok(progress.length > 0 && progress.at(-1) === payload.length, 'progress reaches the total');
  const resolved = await resolveWeight(weight(), { weightsDir: '', cacheDir });
  t.ok(isResolved(resolved) && resolved.source === 'cache', 'the cache now resolves it');
  t.same(readdirSync(join(cacheDir, 'downloads')), [], 'no partial file is left behind');
});

t.test('a wrong hash is refused and nothing is placed', async (t) => {
  const srv = await serve({});
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  const bad = weight({ sha256: 'f'.repeat(64) });
  await t.rejects(fetchCanonical(bad, { cacheDir, url: srv.url }), { name: 'FetchError', code: 'hash_mismatch' });
  t.notOk(existsSync(join(cacheDir, 'weights', 'weights.bin')), 'the bad file is not in the cache');
  const resolved = await resolveWeight(bad, { weightsDir: '', cacheDir });
  t.notOk(isResolved(resolved));
});

t.test('a truncated transfer is resumed with a Range request', async (t) => {
  const srv = await serve({ truncateAt: 100_000, truncateTimes: 2 });
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  const path = await fetchCanonical(weight(), { cacheDir, url: srv.url });
  t.same(readFileSync(path), payload);
  t.equal(srv.ranges[0], undefined, 'the first request asks for everything');
  t.match(srv.ranges[1] ?? '', /^bytes=\d+-$/, 'the retry resumes');
  t.ok(srv.ranges.length >= 3);
});

t.test('a partial file from an earlier run is resumed, not restarted', async (t) => {
  const srv = await serve({});
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  mkdirSync(join(cacheDir, 'downloads'), { recursive: true });
  writeFileSync(join(cacheDir, 'downloads', 'weights.bin.part'), payload.subarray(0, 123_456));
  const path = await fetchCanonical(weight(), { cacheDir, url: srv.url });
  t.same(readFileSync(path), payload);
  t.same(srv.ranges, ['bytes=123456-']);
});

t.test('a server that ignores Range restarts the download cleanly', async (t) => {
  const srv = await serve({ ignoreRange: true });
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  mkdirSync(join(cacheDir, 'downloads'), { recursive: true });
  writeFileSync(join(cacheDir, 'downloads', 'weights.bin.part'), payload.subarray(0, 5000));
  const path = await fetchCanonical(weight(), { cacheDir, url: srv.url });
  t.same(readFileSync(path), payload);
});

t.test('an HTTP error is reported, not retried forever', async (t) => {
  const server = createServer((_req, res) => res.writeHead(404).end('nope'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
  await t.rejects(fetchCanonical(weight(), { cacheDir, url }), { name: 'FetchError', code: 'http_error' });
});

t.test('a bz2 archive (dlib) is checked, decompressed and checked again', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-bz2-'));
  writeFileSync(join(dir, 'w.dat'), payload);
  execFileSync('bzip2', ['-k', join(dir, 'w.dat')]);
  const archive = readFileSync(join(dir, 'w.dat.bz2'));
  const srv = await serve({ body: archive, truncateAt: 1000, truncateTimes: 1 });
  t.teardown(srv.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-fetch-'));
  const w = weight({
    file: 'w.dat',
    compression: 'bz2',
    archive_size: archive.length,
    archive_sha256: createHash('sha256').update(archive).digest('hex'),
  });
  const path = await fetchCanonical(w, { cacheDir, url: srv.url });
  t.same(readFileSync(path), payload);
  const wrong = { ...w, file: 'w2.dat', sha256: '0'.repeat(64) };
  await t.rejects(fetchCanonical(wrong, { cacheDir, url: srv.url }), { name: 'FetchError', code: 'hash_mismatch' });
});

t.test('a local mirror file with the wrong content is never used', async (t) => {
  const weightsDir = mkdtempSync(join(tmpdir(), 'fc-mirror-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-cache-'));
  const tampered = Buffer.from(payload);
  tampered[10] = (tampered[10] ?? 0) ^ 0xff;
  writeFileSync(join(weightsDir, 'weights.bin'), tampered);
  const r = await resolveWeight(weight(), { weightsDir, cacheDir });
  t.notOk(isResolved(r));
  t.match(r, [{ reason: 'hash_mismatch' }]);
  writeFileSync(join(weightsDir, 'weights.bin'), payload);
  const ok = await resolveWeight(weight(), { weightsDir, cacheDir });
  t.ok(isResolved(ok) && ok.source === 'local');
});
