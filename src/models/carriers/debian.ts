/**
 * A Debian carrier's archive: `apt-get download package[=version]`, apt's own client, which fetches
 * from the machine's configured repositories (sources.list, or APT_CONFIG) and checks the .deb against
 * the repository's signed index before it is kept. Without a version in the manifest, the
 * distribution's own version is fetched: the member's sha256 (index.ts) is what identifies the file.
 * Needs apt's package lists (`apt-get update`); nothing is installed and root is not needed.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Carrier } from '../manifest.js';
import { carrierLabel } from '../sources.js';
import { FetchError } from '../fetch-error.js';
import { lastLines, runClient, type ClientResult } from './client.js';
import type { DownloadOptions } from './types.js';

function aptFailure(label: string, c: Carrier, r: ClientResult): FetchError {
  if (r.spawnError) return new FetchError('client_unavailable', `${label}: cannot run apt-get (${r.spawnError.message}): not a Debian or Ubuntu machine`);
  const err = `${r.stderr}\n${r.stdout}`;
  if (r.signal) return new FetchError('network_error', `${label}: apt-get did not finish (${r.signal})`);
  const why = lastLines(err, /^E:|^Err:|^W:/) || `apt-get exited with status ${r.status}`;
  if (/Hash Sum mismatch|unexpected size|Size mismatch/i.test(err)) return new FetchError('hash_mismatch', `${label}: apt refused the package: it does not match the repository's index: ${why}`);
  if (/Unable to locate package|has no installation candidate|Can't select candidate version|Version '.*' for '.*' was not found/.test(err)) {
    return new FetchError('not_found', `${label}: apt knows no ${c.version ? `${c.package} ${c.version}` : c.package} (run \`apt-get update\`, or this distribution lacks it): ${why}`);
  }
  if (/Could not resolve|Temporary failure resolving|Could not connect|Connection failed|Failed to fetch|Unable to connect|timed out/i.test(err)) return new FetchError('network_error', `${label}: the repository is unreachable: ${why}`);
  return new FetchError('client_failed', `${label}: ${why}`);
}

export async function downloadDebian(c: Carrier, dir: string, opts: DownloadOptions): Promise<string> {
  const label = carrierLabel(c);
  const archiveDir = join(dir, 'archive');
  await mkdir(archiveDir, { recursive: true });
  const spec = c.version === undefined ? c.package : `${c.package}=${c.version}`;
  const r = await runClient('apt-get', ['download', '-q', spec], { ...opts, cwd: archiveDir });
  if (r.status !== 0 || r.spawnError) throw aptFailure(label, c, r);
  const files = (await readdir(archiveDir)).filter((f) => f.endsWith('.deb'));
  if (files.length !== 1) throw new FetchError('client_failed', `${label}: apt-get reported success but left ${files.length} packages`);
  return join(archiveDir, files[0] as string);
}
