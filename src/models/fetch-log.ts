/**
 * What the last `models fetch` of each weight file did, kept in the cache (fetch-log.json): which
 * source served it, or every source tried and why each failed. `models list` and the model server
 * read it, so that a missing model says why, not only that it is missing.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FetchAttempt } from './fetch-error.js';

export interface FetchRecord {
  at: string;
  ok: boolean;
  /** The source that served the file (`canonical`, `pypi:pkg==1.1`) when ok. */
  source?: string;
  /** The file it delivered and that file's sha256, when ok. */
  file?: string;
  sha256?: string;
  /** Every source tried and why it failed, when not ok. */
  attempts?: FetchAttempt[];
}

/** Keyed by the weight's canonical file name, which is unique in the manifest. */
export type FetchLog = Record<string, FetchRecord>;

const NAME = 'fetch-log.json';

export async function readFetchLog(cacheDir: string): Promise<FetchLog> {
  try {
    return JSON.parse(await readFile(join(cacheDir, NAME), 'utf8')) as FetchLog;
  } catch {
    return {};
  }
}

export async function recordFetch(cacheDir: string, weightFile: string, record: FetchRecord): Promise<void> {
  const log = await readFetchLog(cacheDir);
  log[weightFile] = record;
  await mkdir(cacheDir, { recursive: true });
  const tmp = join(cacheDir, `${NAME}.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify(log, null, 2));
  await rename(tmp, join(cacheDir, NAME));
}

/** One line: when the last fetch failed and why, per source. */
export function describeFailure(r: FetchRecord): string {
  const why = (r.attempts ?? []).map((a) => `${a.source}: ${a.message}`).join('; ');
  return `the last \`models fetch\` (${r.at}) failed: ${why || 'no source could be tried'}`;
}
