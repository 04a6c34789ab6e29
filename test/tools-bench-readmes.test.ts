/**
 * tools/ and bench/ keep only what a script, a test or a doc runs, and each README says what is there:
 * every tracked file of either folder is named in its README's table, by its path or by a folder above
 * it (`lib/`). Results files (bench/results/) are quoted by docs/benchmarks.md instead.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

/** The files under `root` that its README names neither by path nor by an enclosing folder. */
function unlisted(readme: string, files: string[]): string[] {
  const named = new Set([...readme.matchAll(/`([^`\s]+)`/g)].map((m) => m[1]!));
  return files.filter((rel) => {
    if (rel === 'README.md' || rel.startsWith('results/')) return false;
    const parts = rel.split('/');
    return !named.has(rel) && !parts.slice(0, -1).some((_, i) => named.has(`${parts.slice(0, i + 1).join('/')}/`));
  });
}

/** Tracked files of a folder; a tarball without .git falls back to the files on disk. */
function filesOf(root: string): string[] {
  const dir = join(REPO_ROOT, root);
  if (existsSync(join(REPO_ROOT, '.git'))) {
    return execFileSync('git', ['ls-files', root], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => f.slice(root.length + 1));
  }
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [relative(dir, join(d, e.name))]));
  return walk(dir).filter((f) => !f.startsWith('native/') || f === 'native/index.d.ts');
}

for (const root of ['tools', 'bench']) {
  t.test(`${root}/README.md names every file of ${root}/`, async (t) => {
    const files = filesOf(root);
    t.ok(files.length > 10, `${files.length} files under ${root}/`);
    t.same(unlisted(readFileSync(join(REPO_ROOT, root, 'README.md'), 'utf8'), files), []);
  });
}

t.test('a planted file that no README row names is reported (a check of the check)', async (t) => {
  const readme = '| `lib/` | helpers |\n| `run.ts` | the runner |';
  t.same(unlisted(readme, ['run.ts', 'lib/a.ts', 'lib/deep/b.ts', 'results/x.json', 'README.md']), []);
  t.same(unlisted(readme, ['run.ts', 'stray/experiment.ts', 'libx/c.ts']), ['stray/experiment.ts', 'libx/c.ts']);
});
