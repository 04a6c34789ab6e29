/**
 * Reproducible installs: a fresh `bash scripts/bootstrap.sh` installs exactly what the repository
 * pins and writes none of it back (its `git status` stays clean).
 *
 * - npm: the install step is `npm ci`, which installs the lock as it is and never rewrites it, and the
 *   lock is complete enough for `npm ci` to accept it: every dependency of every locked package,
 *   optional platform binaries included, has its own entry. A lock written by `npm install` over an
 *   existing node_modules lacks the other platforms' optional packages (npm/cli#4828); `npm ci` then
 *   stops with "Missing: @napi-rs/lzma-android-arm-eabi@1.5.3 from lock file", and the old
 *   `npm install` step rewrote the lock on every fresh bootstrap (+987/-169 lines).
 * - Python: the requirements installed at build time pin every package to one version and its wheel
 *   hashes, and every pip that installs them passes --require-hashes.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

interface LockEntry {
  version?: string;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const read = (p: string) => readFileSync(join(REPO_ROOT, p), 'utf8');

/** Where Node (and npm) find `name` from the package installed at `from`: its own node_modules, then each parent's. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | null {
  let dir = from;
  for (;;) {
    const candidate = dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (candidate in packages) return candidate;
    if (dir === '') return null;
    const cut = dir.lastIndexOf('/node_modules/');
    dir = cut < 0 ? '' : dir.slice(0, cut);
  }
}

/** What `npm ci` would report missing: every (package, dependency) the lock cannot resolve. */
export function missingFromLock(lock: { packages: Record<string, LockEntry> }): string[] {
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (entry.link) continue;
    const wanted = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...(path === '' ? entry.devDependencies : {}),
      ...Object.fromEntries(Object.entries(entry.peerDependencies ?? {}).filter(([n]) => !entry.peerDependenciesMeta?.[n]?.optional)),
    };
    for (const name of Object.keys(wanted)) {
      if (resolveIn(lock.packages, path, name) === null) missing.push(`${name} (wanted by ${path || 'the root'})`);
    }
  }
  return missing;
}

t.test('package-lock.json is complete: npm ci accepts it on any platform', async (t) => {
  const lock = JSON.parse(read('package-lock.json')) as { lockfileVersion: number; packages: Record<string, LockEntry> };
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  t.equal(lock.lockfileVersion, 3, 'lockfile v3');
  t.same(lock.packages['']?.dependencies, pkg.dependencies, 'the lock was written for these dependencies');
  t.same(lock.packages['']?.devDependencies, pkg.devDependencies, 'and these dev dependencies');
  const missing = missingFromLock(lock);
  t.same(missing.slice(0, 20), [], `every dependency has a lock entry (${missing.length} missing)`);
  // Other platforms' binaries are there (npm skips them at install time by their os/cpu fields).
  for (const name of ['@esbuild/darwin-arm64', '@napi-rs/lzma-darwin-arm64', '@napi-rs/lzma-win32-x64-msvc']) {
    t.ok(`node_modules/${name}` in lock.packages, `${name} is locked`);
  }
  // The check can fail: the lock as an `npm install` over an existing node_modules left it.
  const pruned = { packages: Object.fromEntries(Object.entries(lock.packages).filter(([p]) => !/lzma-(android|darwin|freebsd|win32)/.test(p))) };
  t.match(missingFromLock(pruned), [/^@napi-rs\/lzma-android-arm-eabi \(wanted by node_modules\/@napi-rs\/lzma\)$/], 'a lock without the other platforms\' lzma binaries is refused');
});

t.test('the npm install step is npm ci, which never rewrites the lock', async (t) => {
  const build = read('scripts/container/build-app.sh');
  const compile = build.slice(build.indexOf('  compile)'), build.indexOf('  assemble)'));
  t.match(compile, /^\s+npm ci --no-audit --no-fund$/m, 'build-app.sh compile runs npm ci');
  t.notMatch(compile.replace(/^\s*#.*$/gm, ''), /npm install/, 'and no npm install');
  t.notMatch(read('scripts/bootstrap.sh').replace(/^\s*#.*$/gm, ''), /\bnpm (install|i)\b(?! --prefix| -g )/, 'bootstrap.sh runs no npm install of the project (a global install of Node itself, -g, is not one)');
});

t.test('build-time Python requirements are hash-pinned and installed with --require-hashes', async (t) => {
  for (const file of ['models/converters/requirements.txt', 'deploy/requirements-lint.txt']) {
    // Logical lines: a requirement continues over backslash-newlines.
    const lines = read(file).replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
    t.ok(lines.length > 0, `${file}: has requirements`);
    for (const line of lines) {
      t.match(line, /^[A-Za-z0-9_.-]+==[0-9][^\s]*(\s+--hash=sha256:[0-9a-f]{64})+$/, `${file}: ${line.split(' ')[0]} is one version with its wheel hashes`);
    }
    const installers = [read('scripts/bootstrap.sh'), read('scripts/container/fetch-models.sh')].flatMap((s) => s.split('\n')).filter((l) => l.includes(`-r ${file}`));
    t.ok(installers.length > 0, `${file}: installed by bootstrap.sh or fetch-models.sh`);
    for (const l of installers) t.match(l, /pip install .*--require-hashes .*-r /, `${file}: installed with --require-hashes`);
  }
});
