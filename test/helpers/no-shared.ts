/**
 * A service as a user's machine has it: models from the registries only (.first-run/cache/facecompute,
 * which `bash scripts/bootstrap.sh test` fills in its install step by running `bootstrap.sh serve` with
 * no mirror, scripts/first-run.sh), and ../shared out of sight. The process runs in a private mount namespace where the shared directories (../shared, and
 * SHARED_DATA_DIR / FACECOMPUTE_WEIGHTS_DIR when they point elsewhere) are empty read-only tmpfs
 * mounts: whatever it tried to read there would not be found, so a service that starts and answers
 * did not need them.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT, SHARED_DATA_DIR, SHARED_WEIGHTS_DIR } from './shared.js';
import type { FetchLog } from '../../src/models/fetch-log.js';

/** scripts/first-run.sh's working directory: its record (result.json), logs and the user's cache. */
export const FIRST_RUN_DIR = resolve(REPO_ROOT, '.first-run');
/** The models cache `bootstrap.sh serve` filled there from the registries, at the default location. */
export const REGISTRY_CACHE = resolve(FIRST_RUN_DIR, 'cache', 'facecompute');

/** The fetch log of the registry cache, or an error that says how to make it. */
export function registryFetchLog(): FetchLog {
  const path = join(REGISTRY_CACHE, 'fetch-log.json');
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: \`bash scripts/bootstrap.sh test\` fills ${REGISTRY_CACHE} in its install step, from the registries with no mirror (by hand: bash scripts/first-run.sh)`);
  }
  return JSON.parse(readFileSync(path, 'utf8')) as FetchLog;
}

/** The real paths of every shared directory a process could read. */
export function sharedDirs(): string[] {
  const dirs = [...new Set([resolve(REPO_ROOT, '..', 'shared'), SHARED_DATA_DIR, SHARED_WEIGHTS_DIR].filter((d) => existsSync(d)).map((d) => realpathSync(d)))].sort();
  // A directory inside one already hidden is hidden with it (and could not be mounted on).
  return dirs.filter((d, i) => !dirs.slice(0, i).some((p) => d.startsWith(`${p}/`)));
}

/** Whether this machine lets a test make a private mount namespace (root, unshare). */
export function canHideShared(): boolean {
  return spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0;
}

/** Spawns `command args` with every shared directory hidden behind an empty read-only tmpfs. */
export function spawnWithoutShared(command: string, args: string[], opts: SpawnOptions): ChildProcess {
  // Any mount that fails stops the process before the command runs: nothing starts with ../shared visible.
  const script = 'set -e; for d in "${@:1:$HIDE_COUNT}"; do mount -t tmpfs -o ro,size=4k,mode=555 none "$d"; done; shift "$HIDE_COUNT"; exec "$@"';
  const dirs = sharedDirs();
  return spawn('unshare', ['--mount', '--propagation', 'private', '--', 'bash', '-c', script, 'hide-shared', ...dirs, command, ...args], {
    ...opts,
    env: { ...opts.env, HIDE_COUNT: String(dirs.length) },
  });
}
