/**
 * The documentation says only what is true of the repository: README.md, every docs/*.md page, the
 * client libraries' READMEs, and the /llms.txt and /skill.md the console serves.
 *
 * - every FACECOMPUTE_* variable named exists in src/config/spec.ts (or is a client library's or the
 *   test harness's, listed below);
 * - every "<status> <code>" names an error code of src/errors/codes.ts with that status;
 * - every relative link resolves, its #fragment to a heading of the target;
 * - every repository path named in `code` exists;
 * - every `facecompute <command> [<subcommand>] [--flag]` used is in the CLI's help;
 * - no page leans on a machine path, an issue number, a commit, or the contract outside the repository;
 * - the README is at most 200 lines, links every docs page, and its figures are the results files';
 * - docs/parity.md's "Written on" dates are the dates git records for its results files.
 * Each checker is also run on planted mistakes, so that it cannot pass by finding nothing.
 * (Shell blocks are run by test/doc-examples.test.ts.)
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { CLIENT_VARS, VARS } from '../src/config/spec.js';
import { ERROR_STATUS, isErrorCode } from '../src/errors/codes.js';
import { USAGE } from '../src/cli/usage.js';
import { slug } from '../src/console/docs/markdown.js';
import { llmsTxt, skillMd } from '../src/console/agent-docs.js';
import { REPO_ROOT } from './helpers/shared.js';

interface Doc {
  name: string;
  text: string;
}

const read = (rel: string) => readFileSync(join(REPO_ROOT, rel), 'utf8');
const pages = readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const files: Doc[] = ['README.md', ...pages, 'clients/python/README.md', 'clients/js/README.md'].map((name) => ({ name, text: read(name) }));
const urls = { console: 'http://localhost:8082', base: 'http://localhost:8080', mcp: 'http://localhost:8081/mcp' };
const calls = { anonymous: 10, account: 50, card: 100 };
const served: Doc[] = [
  { name: '/llms.txt', text: llmsTxt(urls, calls) },
  { name: '/skill.md', text: skillMd(urls, calls) },
];
const docs = [...files, ...served];

/** Variables that are not the service's: the client libraries' (spec.ts's CLIENT_VARS) and the test harness's. */
const NOT_SERVICE_VARS = new Set<string>(CLIENT_VARS.map((v) => v.name));
const isHarnessVar = (v: string) => v.startsWith('FACECOMPUTE_TEST_');
/** Symbolic `error` values of a 503 /readiness answer (src/gateway/app.ts, probes): not error codes. */
const READINESS_ERRORS = new Set(['limiter_unavailable', 'model_server_unavailable', 'model_server_unreachable', 'model_server_crashloop', 'runtime_warmup_failed', 'database_unavailable']);

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

export function unknownVariables(doc: Doc): string[] {
  const known = new Set<string>(VARS.map((v) => v.name));
  return [...doc.text.matchAll(/\bFACECOMPUTE_[A-Z0-9_]*[A-Z0-9]\b/g)]
    .filter((m) => !known.has(m[0]) && !NOT_SERVICE_VARS.has(m[0]) && !isHarnessVar(m[0]))
    .map((m) => `${doc.name}:${lineOf(doc.text, m.index)}: ${m[0]} is not in src/config/spec.ts`);
}

export function wrongCodes(doc: Doc): string[] {
  const out: string[] = [];
  // "400 invalid_request", "`413 too_many_targets`", "422 `no_face_detected`"
  for (const m of doc.text.matchAll(/\b([1-5]\d\d)`? +`?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b/g)) {
    const [, status, code] = m as unknown as [string, string, string];
    if (READINESS_ERRORS.has(code)) continue;
    if (!isErrorCode(code)) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${code} is not an error code`);
    else if (String(ERROR_STATUS[code]) !== status) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${code} is ${ERROR_STATUS[code]}, not ${status}`);
  }
  // Table rows of error codes: "| `code` | 4xx |"
  for (const m of doc.text.matchAll(/^\| `([a-z][a-z0-9_]+)`[^|\n]*\| ([1-5]\d\d) \|/gm)) {
    const [, code, status] = m as unknown as [string, string, string];
    if (!isErrorCode(code)) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${code} is not an error code`);
    else if (String(ERROR_STATUS[code]) !== status) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${code} is ${ERROR_STATUS[code]}, not ${status}`);
  }
  for (const m of doc.text.matchAll(/"error"\s*:\s*"([a-z_]+)"/g)) {
    if (!isErrorCode(m[1]) && !READINESS_ERRORS.has(m[1]!) && m[1] !== 'code') out.push(`${doc.name}:${lineOf(doc.text, m.index)}: "error": "${m[1]}" is not an error code`);
  }
  return out;
}

/** GitHub's anchors of a Markdown document's headings (duplicates numbered). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    const h = !fence && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The prose of a document: fenced blocks removed, so that code is not read as links. */
const prose = (text: string) => text.replace(/^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1\s*$/gm, '');

export function brokenLinks(doc: Doc, exists = (rel: string) => existsSync(join(REPO_ROOT, rel)), readRel = read): string[] {
  const out: string[] = [];
  const text = prose(doc.text);
  for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const href = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('/')) continue;
    const [path, fragment] = href.split('#') as [string, string | undefined];
    const target = path === '' ? doc.name : normalize(join(dirname(doc.name), path));
    const where = `${doc.name}:${lineOf(doc.text, doc.text.indexOf(m[0]))}`;
    if (target.startsWith('..')) {
      out.push(`${where}: ${href} points outside the repository`);
      continue;
    }
    if (!exists(target)) {
      out.push(`${where}: ${href} does not exist`);
      continue;
    }
    if (fragment && target.endsWith('.md') && !anchors(readRel(target)).has(fragment)) out.push(`${where}: ${href}: no heading #${fragment} in ${target}`);
  }
  return out;
}

const REPO_DIRS = ['src', 'test', 'tools', 'scripts', 'bench', 'crates', 'deploy', 'models', 'clients', 'examples', 'docs', 'bin'];

export function missingPaths(doc: Doc, exists = (rel: string) => existsSync(join(REPO_ROOT, rel))): string[] {
  const out: string[] = [];
  for (const m of doc.text.matchAll(/`([^`\n]+)`/g)) {
    // A path, maybe after a command (`node --import tsx tools/x.ts --flag`): each word that looks like one.
    for (const word of m[1]!.split(/\s+/)) {
      const w = word.replace(/^[("']+|[)"',;:.]+$/g, '');
      if (!REPO_DIRS.some((d) => w.startsWith(`${d}/`)) || /[*{}<>|$[\]…]/.test(w) || w.includes('...')) continue;
      if (!exists(w.replace(/\/$/, ''))) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${w} does not exist`);
    }
  }
  return out;
}

/** `facecompute <command> [<subcommand>] [--flag …]` in code: each command, subcommand and flag is in the CLI's help. */
export function unknownCommands(doc: Doc, usage = USAGE): string[] {
  const out: string[] = [];
  const commands = new Set([...usage.matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((m) => m[1]!));
  const code = [...doc.text.matchAll(/```[a-z]*\n([\s\S]*?)```|`([^`\n]+)`/g)].map((m) => ({ text: m[1] ?? m[2] ?? '', index: m.index }));
  for (const c of code) {
    for (const m of c.text.matchAll(/(?:^|[;&|(]\s*|\bnode\s+|\bexec\s+)(?:facecompute|bin\/facecompute\.js) ([a-z][a-z|-]*)((?: +(?:--[a-z-]+|<[^>]+>|\[[^\]]*\]|[\w./|-]+))*)/gm)) {
      const where = `${doc.name}:${lineOf(doc.text, c.index)}`;
      for (const cmd of m[1]!.split('|')) {
        if (!commands.has(cmd)) {
          out.push(`${where}: facecompute ${cmd} is not in the CLI's help`);
          continue;
        }
        if (cmd !== 'models' && cmd !== 'debug') continue;
        const rest = m[2]!.trim().split(/\s+/).filter(Boolean);
        const sub = rest[0];
        if (sub && /^[a-z][a-z|-]*$/.test(sub)) for (const s of sub.split('|')) if (!new RegExp(`\\b${s}\\b`).test(usage)) out.push(`${where}: facecompute ${cmd} ${s} is not in the CLI's help`);
        for (const flag of rest.filter((r) => r.startsWith('--'))) if (!usage.includes(flag)) out.push(`${where}: facecompute ${cmd} … ${flag} is not in the CLI's help`);
      }
    }
  }
  return out;
}

/** What a user document must not lean on: a machine's paths, issue numbers, commits, the contract outside the repository. */
export function notSelfContained(doc: Doc): string[] {
  const out: string[] = [];
  const rules: Array<[RegExp, string]> = [
    [/(?:^|[\s`("'])\/(?:work|home|Users|root)\//gm, 'a machine path'],
    [/\bissues?\s+#?\d+|\(#\d+\)|\bissue #\d+/gi, 'an issue number'],
    [/(?<![0-9a-f/_.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}(?:\+dirty)?(?![0-9a-f/_.-])/g, 'a commit'],
    [/\.\.\/shared\/docs|contract-v1\.md|deepface-reference\.md/g, 'a document outside the repository'],
  ];
  for (const [re, what] of rules) for (const m of doc.text.matchAll(re)) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${what}: ${m[0].trim()}`);
  return out;
}

t.test('the checkers find planted mistakes', async (t) => {
  const planted: Doc = {
    name: 'docs/planted.md',
    text: [
      'Set `FACECOMPUTE_GATEWAY_PROT=8080`, or `FACECOMPUTE_URL` for the client.',
      'A bad key is `401 invalid_key`; a full queue is `429 queue_full`; `422 no_face_detected` is fine.',
      '| `rate_limit` | 429 | … |',
      'See [limits](limits.md#no-such-heading), [nowhere](nowhere.md) and [out](../../etc/passwd); [ok](limits.md#per-account).',
      'The code is in `src/gateway/nope.ts` and `src/gateway/app.ts`.',
      'Run `facecompute models fetch all`, `facecompute models refresh Facenet` and `facecompute debug haar-windows x.jpg --against y.json --fast`.',
      'Measured at commit 5929e29 on /work/main, as issue 26 asks; the contract is ../shared/docs/contract-v1.md.',
    ].join('\n'),
  };
  t.same(unknownVariables(planted).map((x) => x.split(': ')[1]), ['FACECOMPUTE_GATEWAY_PROT is not in src/config/spec.ts'], 'a wrong variable');
  t.same(wrongCodes(planted).map((x) => x.split(': ').slice(1).join(': ')), ['invalid_key is not an error code', 'queue_full is 503, not 429', 'rate_limit is not an error code'], 'wrong codes and statuses');
  t.same(brokenLinks(planted).map((x) => x.split(': ').slice(1).join(': ')), ['limits.md#no-such-heading: no heading #no-such-heading in docs/limits.md', 'nowhere.md does not exist', '../../etc/passwd points outside the repository'], 'broken links');
  t.same(missingPaths(planted).map((x) => x.split(': ')[1]), ['src/gateway/nope.ts does not exist'], 'a path that does not exist');
  t.same(unknownCommands(planted).map((x) => x.split(': ')[1]), ['facecompute models refresh is not in the CLI\'s help', 'facecompute debug … --fast is not in the CLI\'s help'], 'commands the help does not list');
  t.same(notSelfContained(planted).map((x) => x.split(': ')[1]), ['a machine path', 'an issue number', 'a commit', 'a document outside the repository', 'a document outside the repository'], 'what a user doc must not lean on');
});

t.test('every FACECOMPUTE_* variable named in the docs exists', async (t) => {
  for (const doc of docs) t.same(unknownVariables(doc), [], doc.name);
});

t.test('every error code named in the docs exists, with its status', async (t) => {
  let named = 0;
  for (const doc of docs) {
    t.same(wrongCodes(doc), [], doc.name);
    named += [...doc.text.matchAll(/\b[1-5]\d\d`? +`?[a-z]+_[a-z_]+/g)].length;
  }
  t.ok(named > 60, `${named} codes named`);
  const errors = read('docs/errors.md');
  for (const code of Object.keys(ERROR_STATUS)) t.ok(errors.includes(`| \`${code}\` | ${ERROR_STATUS[code as keyof typeof ERROR_STATUS]} |`), `docs/errors.md has a row for ${code}`);
});

t.test('every relative link resolves, fragments included', async (t) => {
  for (const doc of files) t.same(brokenLinks(doc), [], doc.name);
});

t.test('every repository path named in code exists', async (t) => {
  for (const doc of files) t.same(missingPaths(doc), [], doc.name);
});

t.test("the CLI's help lists every command the docs use", async (t) => {
  for (const doc of docs) t.same(unknownCommands(doc), [], doc.name);
  const help = execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'help'], { encoding: 'utf8' });
  t.equal(help, USAGE, '`facecompute help` prints it');
});

t.test('no user doc leans on a machine path, an issue, a commit or a document outside the repository', async (t) => {
  for (const doc of docs) t.same(notSelfContained(doc), [], doc.name);
});

t.test('the README: at most 200 lines, every docs page linked, its figures the results files\'', async (t) => {
  const readme = read('README.md');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  t.ok(lines <= 200, `${lines} lines`);
  for (const page of pages) t.ok(readme.includes(`](${page})`) || readme.includes(`](${page}#`), `links ${page}`);
  const summary = JSON.parse(read('bench/results/summary.json')) as { models: Record<string, { verify_rps_ratio_c16: number; cpu_per_request_ratio_c16: number }> };
  const ratio = (x: number) => x.toFixed(1);
  t.match(readme, `serves ${ratio(summary.models['Dlib']!.verify_rps_ratio_c16)}× (Dlib) and ${ratio(summary.models['Facenet']!.verify_rps_ratio_c16)}×\n(Facenet) the requests per second`, 'the /verify ratios are summary.json\'s');
  const cpu = [summary.models['Dlib']!.cpu_per_request_ratio_c16, summary.models['Facenet']!.cpu_per_request_ratio_c16].map((x) => x.toFixed(2));
  const cpuText = [...new Set(cpu.map((x) => x.replace(/0$/, '')))].map((x) => `${x}×`).join(' and ');
  t.match(readme, `at ${cpuText}\nits CPU per request`, `the CPU ratios are summary.json's (${cpu})`);
  type Parity = { deepface_images: Record<string, { images: number; cosine_min: number; pairs_all: { pairs: number; same_decision: number } | Record<string, { pairs: number; same_decision: number }> }> };
  const parity = ['bench/results/parity-dlib.json', 'bench/results/parity-facenet.json'].map((f) => JSON.parse(read(f)) as Parity);
  for (const p of parity) {
    for (const [det, r] of Object.entries(p.deepface_images)) {
      if (det === 'deepface') continue;
      t.equal(r.images, 65, `${det}: DeepFace's 65 test images`);
      t.ok(r.cosine_min >= 0.99999, `${det}: cosine ${r.cosine_min} is 0.99999 or closer`);
      const pairs = 'pairs' in r.pairs_all ? [r.pairs_all as { pairs: number; same_decision: number }] : Object.values(r.pairs_all as Record<string, { pairs: number; same_decision: number }>);
      for (const x of pairs) t.ok(x.pairs === 1830 && x.same_decision === 1830, `${det}: the same decision on all 1,830 pairs`);
    }
  }
  // The headline is scoped: the models and detectors it was measured with (those of the results files above).
  t.match(readme, 'with\nFacenet or Dlib and the `opencv`, `yunet` or `skip` detector, on DeepFace\'s 65 test images, the same faces,\nembeddings with a cosine of 0.99999 or closer to DeepFace\'s, and the same decision on all 1,830 pairs.');
  t.same(parity.map((p) => Object.keys(p.deepface_images).filter((d) => d !== 'deepface').sort()), [['opencv', 'skip', 'yunet'], ['opencv', 'skip', 'yunet']], 'Dlib and Facenet were measured with opencv, yunet and skip');
  t.match(readme, 'Facenet512, OpenFace and SFace were never measured', 'and what was not measured is said');
});

t.test("docs/parity.md's dates are when git last wrote each results file", async (t) => {
  const parity = read('docs/parity.md');
  const cell = '(?:\\\\\\||[^|\\n])+';
  const rows = [...parity.matchAll(new RegExp(`^\\|${cell}\\|${cell}\\| ((?:\`[^\`]+\`(?:, )?)+) \\| (\\d{4}-\\d{2}-\\d{2}) \\|`, 'gm'))];
  t.ok(rows.length >= 7, `${rows.length} results files dated`);
  // Only a clone with its history knows when a file was last written: a shallow clone dates every file
  // to its one commit and a tarball has no git at all. There each file must exist and its date be a real
  // day no later than today; the full check runs wherever the history is (CI's clone, a developer's).
  const history = fullHistory();
  if (!history) t.comment(`no git history here (${historyMissing}): each date checked as a real day, not against git`);
  for (const [, filesCell, date] of rows as unknown as Array<[string, string, string]>) {
    for (const f of [...filesCell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)) {
      if (history) {
        const recorded = execFileSync('git', ['log', '-1', '--format=%as', '--', f], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
        t.equal(date, recorded, `${f}: written on ${recorded} (git log -1 --format=%as -- ${f}); update the table when a tool rewrites the file`);
      } else {
        t.ok(existsSync(join(REPO_ROOT, f)), `${f} exists`);
        const day = new Date(`${date}T00:00:00Z`);
        t.ok(!Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === date && day.getTime() <= Date.now(), `${f}: ${date} is a real day, not in the future`);
      }
    }
  }
});

let historyMissing = '';
/** Whether git can answer "when was this file last written": a repository that is not shallow. */
function fullHistory(): boolean {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    // A tarball unpacked inside another repository must not borrow that one's history.
    if (realpathSync(git('rev-parse', '--show-toplevel')) !== realpathSync(REPO_ROOT)) throw new Error('another repository');
    if (git('rev-parse', '--is-shallow-repository') === 'false') return true;
    historyMissing = 'a shallow clone';
  } catch {
    historyMissing = 'not a git checkout, e.g. an exported tarball';
  }
  return false;
}

void relative;
