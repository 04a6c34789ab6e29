/**
 * A service as a user's machine has it: models from the registries only (.first-run/cache/facecompute,
 * which `bash scripts/bootstrap.sh test` fills in its install step by running `bootstrap.sh serve` with
 * no mirror, scripts/first-run.sh), and ../shared out of sight. The shared directories are ../shared,
 * and SHARED_DATA_DIR / FACECOMPUTE_WEIGHTS_DIR when they point elsewhere. Two ways, the first that
 * this machine allows:
 *   - `mount`: the process runs in a private mount namespace where each is an empty read-only tmpfs;
 *   - `fs-fence` (no `unshare --mount`, as in most containers): test/setup/hidden-dirs.mjs is preloaded
 *     into the process and its Node children, every `fs` call under them fails with ENOENT and is
 *     logged, and the test requires that log to stay empty (hiddenDirsReached).
 * Either way, whatever it tried to read there would not be found, so a service that starts and
 * answers did not need them.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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

/** How spawnWithoutShared hides the shared directories here (see the top of this file). */
export const HIDE_MODE: 'mount' | 'fs-fence' = canHideShared() ? 'mount' : 'fs-fence';

const FENCE = resolve(REPO_ROOT, 'test/setup/hidden-dirs.mjs');
/** Where the fs fence of this test process's children records what they reached for. */
const FENCE_LOG = join(mkdtempSync(join(tmpdir(), 'fc-hidden-dirs-')), 'reached.log');

/** The shared paths a child under the fs fence tried to use (always none under `mount`). */
export function hiddenDirsReached(): string[] {
  return existsSync(FENCE_LOG) ? readFileSync(FENCE_LOG, 'utf8').split('\n').filter(Boolean) : [];
}

/** Spawns `command args` with every shared directory hidden, the first way this machine allows. */
export function spawnWithoutShared(command: string, args: string[], opts: SpawnOptions): ChildProcess {
  const dirs = sharedDirs();
  if (HIDE_MODE === 'fs-fence') {
    const env = { ...(opts.env ?? process.env) };
    env['NODE_OPTIONS'] = `--import=${pathToFileURL(FENCE).href} ${env['NODE_OPTIONS'] ?? ''}`.trim();
    return spawn(command, args, { ...opts, env: { ...env, TEST_HIDDEN_DIRS: dirs.join(delimiter), TEST_HIDDEN_DIRS_LOG: FENCE_LOG } });
  }
  // Any mount that fails stops the process before the command runs: nothing starts with ../shared visible.
  const script = 'set -e; for d in "${@:1:$HIDE_COUNT}"; do mount -t tmpfs -o ro,size=4k,mode=555 none "$d"; done; shift "$HIDE_COUNT"; exec "$@"';
  return spawn('unshare', ['--mount', '--propagation', 'private', '--', 'bash', '-c', script, 'hide-shared', ...dirs, command, ...args], {
    ...opts,
    env: { ...opts.env, HIDE_COUNT: String(dirs.length) },
  });
}

/**
 * Proves, before a test relies on it, that a process spawned without shared sees none of it: under
 * `mount` each shared directory lists empty; under `fs-fence` reading each fails with ENOENT and the
 * fence logs it (the probe's entries are then cleared, so the log holds only what the service does).
 * Returns what was seen, for the test to assert.
 */
export async function probeHidden(): Promise<{ mode: typeof HIDE_MODE; dirs: string[]; seen: string; logged: string[] }> {
  const dirs = sharedDirs();
  const probe =
    HIDE_MODE === 'mount'
      ? spawnWithoutShared('bash', ['-c', 'for d; do ls -A "$d"; done', 'probe', ...dirs], { env: process.env })
      : spawnWithoutShared(process.execPath, ['-e', 'const fs = require("node:fs"); for (const d of process.argv.slice(1)) { try { console.log(fs.readdirSync(d).length ? "VISIBLE " + d : "EMPTY " + d); } catch (e) { console.log(e.code); } }', ...dirs], { env: process.env });
  let seen = '';
  probe.stdout?.on('data', (d: Buffer) => (seen += d.toString()));
  const code = await new Promise((r) => probe.once('exit', r));
  const logged = hiddenDirsReached();
  writeFileSync(FENCE_LOG, '');
  if (code !== 0) seen += `\n(probe exited ${String(code)})`;
  return { mode: HIDE_MODE, dirs, seen, logged };
}

/** What probeHidden must have seen: nothing listed under `mount`; ENOENT per directory, each logged, under `fs-fence`. */
export function expectedHidden(dirs: string[]): { seen: string; logged: number } {
  return HIDE_MODE === 'mount' ? { seen: '', logged: 0 } : { seen: dirs.map(() => 'ENOENT\n').join(''), logged: dirs.length };
}
