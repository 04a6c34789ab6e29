/**
 * A local Debian repository on loopback (a flat repository: one Packages index, the .deb files), so that
 * the real Debian carrier code (`apt-get download`, then dpkg-deb) runs against it, never the internet.
 * apt is pointed at it through its own configuration, exactly as an operator would point it at a
 * mirror: APT_CONFIG names a configuration file whose sources, lists and caches all live in a temporary
 * directory, so the machine's own apt state is neither read nor touched. `apt-get update` runs here,
 * in the test, against loopback only.
 */
import { createServer, type Server } from 'node:http';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sha256 } from './pypi-index.js';

export interface TestDeb {
  name: string;
  version: string;
  fileName: string;
  bytes: Buffer;
  /** Control fields, as dpkg-deb -f prints them. */
  control: string;
}

/** Builds `name_version_all.deb` with dpkg-deb holding `files` (paths relative to /). */
export function buildDeb(name: string, version: string, files: Record<string, Buffer>): TestDeb {
  const dir = mkdtempSync(join(tmpdir(), 'fc-deb-'));
  const root = join(dir, 'root');
  mkdirSync(join(root, 'DEBIAN'), { recursive: true });
  const control = `Package: ${name}\nVersion: ${version}\nArchitecture: all\nMaintainer: facecompute tests <tests@localhost>\nDescription: test carrier\n`;
  writeFileSync(join(root, 'DEBIAN', 'control'), control);
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), bytes);
  }
  const fileName = `${name}_${version}_all.deb`;
  const r = spawnSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', root, join(dir, fileName)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`dpkg-deb --build failed: ${r.stderr}`);
  return { name, version, fileName, bytes: readFileSync(join(dir, fileName)), control };
}

export interface AptRepoBehaviour {
  /** Serve these bytes for the package instead of the real ones. */
  serve?: Buffer;
  /** Have the index describe the served bytes (a tampered mirror that signs what it serves), not the built package. */
  indexServed?: boolean;
}

export interface LocalAptRepo {
  /** The clients' environment: APT_CONFIG pointing at this repository only. */
  env: NodeJS.ProcessEnv;
  requests: string[];
  close(): Promise<void>;
}

export async function serveAptRepo(debs: TestDeb[], behaviour: AptRepoBehaviour = {}): Promise<LocalAptRepo> {
  const requests: string[] = [];
  const bodyOf = (d: TestDeb) => behaviour.serve ?? d.bytes;
  const indexed = (d: TestDeb) => (behaviour.indexServed ? bodyOf(d) : d.bytes);
  const packages = debs.map((d) => `${d.control.trimEnd()}\nFilename: ./${d.fileName}\nSize: ${indexed(d).length}\nSHA256: ${sha256(indexed(d))}\n`).join('\n');
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    // A flat repository's files are asked for as ./NAME under the base URL.
    const path = ((req.url ?? '').split('?')[0] ?? '').replace(/^\/(\.\/)+/, '/');
    if (path === '/Packages') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(packages);
      return;
    }
    const deb = debs.find((d) => path === `/${d.fileName}`);
    if (deb) {
      res.writeHead(200, { 'content-type': 'application/vnd.debian.binary-package', 'content-length': bodyOf(deb).length }).end(bodyOf(deb));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const close = () => new Promise<void>((r) => server.close(() => r()));
  const env = aptEnvFor(`deb [trusted=yes] http://127.0.0.1:${port}/ ./`);
  // Asynchronously: the repository answers from this very process.
  const update = await promisify(execFile)('apt-get', ['update', '-q'], { env, encoding: 'utf8', timeout: 60_000 }).catch((err: { stdout?: string; stderr?: string }) => err);
  if (!/Reading package lists/.test(update.stdout ?? '') || /^(E|W): /m.test(`${update.stdout ?? ''}${update.stderr ?? ''}`)) {
    await close();
    throw new Error(`apt-get update against the local repository failed: ${update.stdout ?? ''}${update.stderr ?? ''}`);
  }
  return { env, requests, close };
}

/**
 * apt's environment for tests: a configuration of its own (APT_CONFIG) with `sourcesLine` as the only
 * source and every state and cache directory in a fresh temporary directory. An unreachable source
 * gives an apt with no package lists at all, as on a machine that never ran `apt-get update`.
 */
export function aptEnvFor(sourcesLine: string | null): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), 'fc-apt-'));
  for (const d of ['lists/partial', 'cache/archives/partial', 'parts', 'prefs']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'status'), '');
  writeFileSync(join(dir, 'sources.list'), sourcesLine ? `${sourcesLine}\n` : '');
  const conf = join(dir, 'apt.conf');
  writeFileSync(
    conf,
    [
      `Dir::Etc::SourceList "${dir}/sources.list";`,
      `Dir::Etc::SourceParts "${dir}/parts";`,
      `Dir::Etc::Preferences "${dir}/prefs/none";`,
      `Dir::Etc::PreferencesParts "${dir}/prefs";`,
      `Dir::State::Lists "${dir}/lists";`,
      `Dir::State::status "${dir}/status";`,
      `Dir::Cache "${dir}/cache";`,
      'APT::Sandbox::User "root";',
      'Acquire::Languages "none";',
      'Acquire::Retries "0";',
      'Acquire::http::Timeout "10";',
      '',
    ].join('\n'),
  );
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (k !== 'APT_CONFIG') env[k] = v;
  return { ...env, APT_CONFIG: conf };
}
