/**
 * docs/development.md ("Commits and comments"): a comment says what and why; history (issue numbers, who found
 * what, when) belongs in commit bodies and the docs. Checked on every source file of src/ and of the
 * crates' src/ and tests/.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';

const HISTORY = /\bissues? #?\d+\b/i;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'target' || e.name === 'fuzz' ? [] : sources(p);
    return /\.(ts|rs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** `file:line` of every line that cites an issue by number. */
function citations(files: Array<{ name: string; text: string }>): string[] {
  return files.flatMap(({ name, text }) => text.split('\n').flatMap((line, i) => (HISTORY.test(line) ? [`${name}:${i + 1}`] : [])));
}

t.test('no comment in src/ or the crates cites an issue number', async (t) => {
  const files = [join(REPO_ROOT, 'src'), join(REPO_ROOT, 'crates')].flatMap(sources);
  t.ok(files.length > 100, `${files.length} source files`);
  t.same(citations(files.map((f) => ({ name: relative(REPO_ROOT, f), text: readFileSync(f, 'utf8') }))), []);
});

t.test('a planted citation is found (a check of the check)', async (t) => {
  t.same(citations([{ name: 'a.ts', text: '// fine\n * held the loop (issue 24).\n// Issue #7: x' }]), ['a.ts:2', 'a.ts:3']);
  t.same(citations([{ name: 'b.rs', text: '//! reissue 3 times; tissue 2' }]), []);
});
