/**
 * A local npm registry on loopback serving one package: its packument (with the tarball's integrity, as
 * the real registry publishes it) and its tarball, so that the real npm carrier code (`npm pack`) runs
 * against it, never the internet. npm is pointed at it through its own configuration
 * (npm_config_registry), with a cache of its own and no retries.
 */
import { createServer, type Server } from 'node:http';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { create } from 'tar';

export interface TestNpmPackage {
  name: string;
  version: string;
  tarball: Buffer;
}

/** Builds an npm tarball: `package/package.json` and `files` under `package/`. */
export async function buildNpmPackage(name: string, version: string, files: Record<string, Buffer>): Promise<TestNpmPackage> {
  const dir = mkdtempSync(join(tmpdir(), 'fc-npm-'));
  const root = join(dir, 'package');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name, version }));
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), bytes);
  }
  const file = join(dir, `${name}-${version}.tgz`);
  await create({ gzip: true, file, cwd: dir, portable: true }, ['package']);
  return { name, version, tarball: readFileSync(file) };
}

export interface LocalNpmRegistry {
  url: string;
  requests: string[];
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

/**
 * `serve` replaces the tarball's bytes (a tampered mirror); `integrityOf` says which bytes the packument
 * vouches for (by default what is served, as a mirror that rewrote both would).
 */
export async function serveNpmRegistry(p: TestNpmPackage, opts: { serve?: Buffer; integrityOf?: Buffer } = {}): Promise<LocalNpmRegistry> {
  const requests: string[] = [];
  const body = opts.serve ?? p.tarball;
  const vouched = opts.integrityOf ?? body;
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const path = decodeURIComponent((req.url ?? '').split('?')[0] ?? '');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const tarPath = `/${p.name}/-/${p.name}-${p.version}.tgz`;
    if (path === `/${p.name}`) {
      const dist = { tarball: `${base}${tarPath}`, integrity: `sha512-${createHash('sha512').update(vouched).digest('base64')}`, shasum: createHash('sha1').update(vouched).digest('hex') };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ name: p.name, 'dist-tags': { latest: p.version }, versions: { [p.version]: { name: p.name, version: p.version, dist } } }));
      return;
    }
    if (path === tarPath) {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return { url, requests, env: npmEnvFor(url), close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** npm's environment for tests: `registry` only, a fresh cache, no retries, no notifier. */
export function npmEnvFor(registry: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith('npm_config_')) env[k] = v;
  return {
    ...env,
    npm_config_registry: registry,
    npm_config_cache: mkdtempSync(join(tmpdir(), 'fc-npm-cache-')),
    npm_config_userconfig: '/dev/null',
    npm_config_fetch_retries: '0',
    npm_config_fetch_timeout: '10000',
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
}
