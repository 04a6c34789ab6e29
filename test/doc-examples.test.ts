/**
 * Every shell example in README.md, in every docs/*.md page and in the /llms.txt and /skill.md the
 * console serves, and every
 * shell, Python and TypeScript example of the client libraries' READMEs (clients/python, clients/js;
 * Python with .venvs/client-python and the package installed offline from the checkout, TypeScript
 * with tsx and @facecompute/client linked to clients/js's build), runs as written against a live
 * `facecompute serve` built without ../shared: its models are those the install step fetched from the
 * registries alone (.first-run/cache/facecompute), and it runs with every shared directory hidden
 * (test/helpers/no-shared.ts). Each document's blocks run in a fresh directory holding what a clone has
 * at its root for them (samples/), and img1.jpg and img2.jpg (two photos of one person, from samples/)
 * for the client READMEs. With bash, curl and jq, as a newcomer would run them. Blocks
 * of one document run in order in one shell (later blocks use what earlier ones set), under
 * `set -euo pipefail`; an answer with "error" in it, or one a `# {…}` comment promises and nobody
 * printed, fails the block. The README's env block (where the service listens) must hold the serve
 * defaults; the test sets those variables to the live service instead. Blocks not meant to run carry
 * an explicit marker (test/helpers/doc-blocks.ts), and the number of blocks run is asserted, so the
 * test cannot silently run nothing. Bounded: one serve start and about 20 compute calls (~1 min).
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { VARS } from '../src/config/spec.js';
import { REPO_ROOT } from './helpers/shared.js';
import { REGISTRY_CACHE, expectedHidden, hiddenDirsReached, probeHidden, registryFetchLog, spawnWithoutShared } from './helpers/no-shared.js';
import { startServe, userEnv } from './helpers/serve-proc.js';
import { CLIENT_LANGUAGES, SHELL_LANGUAGES, envAssignments, jsonValues, keeps, promisedAnswers, shellBlocks, type DocBlock } from './helpers/doc-blocks.js';
import { CLIENT_JS_DIR, CLIENT_PYTHON_VENV, installPythonClient } from './helpers/clients.js';

// How many shell blocks each document runs and skips. Adding an example means raising these.
// Every docs/*.md page is here: a page missing from this table fails, so a new page's blocks are counted too.
const EXPECTED: Record<string, { run: number; skip: number; env: number }> = {
  'README.md': { run: 1, skip: 2, env: 1 },
  'docs/README.md': { run: 0, skip: 0, env: 0 },
  'docs/accounts.md': { run: 0, skip: 1, env: 0 },
  'docs/api.md': { run: 4, skip: 0, env: 1 },
  'docs/architecture.md': { run: 0, skip: 0, env: 0 },
  'docs/benchmarks.md': { run: 0, skip: 0, env: 0 },
  'docs/changelog.md': { run: 0, skip: 0, env: 0 },
  'docs/choosing-a-threshold.md': { run: 0, skip: 0, env: 0 },
  'docs/configuration.md': { run: 0, skip: 0, env: 0 },
  'docs/development.md': { run: 0, skip: 3, env: 0 },
  'docs/errors.md': { run: 0, skip: 0, env: 0 },
  'docs/face-search.md': { run: 0, skip: 3, env: 0 },
  'docs/install.md': { run: 0, skip: 1, env: 0 },
  'docs/limits.md': { run: 0, skip: 0, env: 0 },
  'docs/mcp.md': { run: 0, skip: 0, env: 0 },
  'docs/migrating-from-deepface.md': { run: 0, skip: 1, env: 0 },
  'docs/models.md': { run: 0, skip: 0, env: 0 },
  'docs/operations.md': { run: 0, skip: 2, env: 0 },
  'docs/parity.md': { run: 0, skip: 0, env: 0 },
  'docs/quickstart.md': { run: 1, skip: 1, env: 1 },
  'docs/scaling.md': { run: 0, skip: 1, env: 0 },
  'docs/security.md': { run: 0, skip: 0, env: 0 },
  '/llms.txt': { run: 1, skip: 0, env: 0 },
  '/skill.md': { run: 10, skip: 0, env: 0 },
  'clients/python/README.md': { run: 5, skip: 1, env: 1 },
  'clients/js/README.md': { run: 3, skip: 1, env: 1 },
};

const BLOCK_TIMEOUT_MS = 120_000;

function specDefault(name: string): string {
  const v = VARS.find((x) => x.name === name);
  if (!v) throw new Error(`${name} is not in src/config/spec.ts`);
  return v.default;
}

t.test('the extractor: markers, counts, and refusals', async (t) => {
  const doc = [
    '```sh', 'echo run', '```',
    '<!-- doc-test: skip (starts the service) -->', '', '```bash', 'serve', '```',
    '<!-- doc-test: env -->', '```sh', 'GW=http://localhost:8080  # the gateway', '```',
    '```json', '{"a":1}', '```',
    '  ```sh', '  echo indented', '  ```',
  ].join('\n');
  const blocks = shellBlocks(doc);
  t.same(blocks.map((b) => [b.mode, b.code]), [['run', 'echo run'], ['skip', 'serve'], ['env', 'GW=http://localhost:8080  # the gateway'], ['run', 'echo indented']]);
  t.equal(blocks[1]!.reason, 'starts the service');
  t.same([...envAssignments(blocks[2]!)], [['GW', 'http://localhost:8080']]);
  t.throws(() => shellBlocks('<!-- doc-test: skip -->\n```sh\nx\n```'), /unknown doc-test directive/, 'a skip needs its reason');
  t.throws(() => shellBlocks('<!-- doc-test: run-later (x) -->\n```sh\nx\n```'), /unknown doc-test directive/);
  t.throws(() => shellBlocks('<!-- doc-test: skip (x) -->\nsome prose\n```sh\nx\n```'), /must be followed by a shell block/);
  t.throws(() => shellBlocks('```\ncurl x\n```'), /without a language/);
  t.throws(() => shellBlocks('```sh\ncurl x\n'), /unterminated/);
  t.throws(() => envAssignments({ line: 1, lang: 'sh', code: 'GW=x\ncurl $GW', mode: 'env' }), /only NAME=value/);
  t.same(promisedAnswers({ line: 1, lang: 'sh', mode: 'run', code: 'curl x\n# {"verified":true,"distance":…,"n":0.4,"model":"Dlib","facial_areas":{"img1":{"x":1}},"results":[{"i":0}]}' }), [
    [{ key: 'verified', value: true }, { key: 'distance' }, { key: 'n', value: 0.4 }, { key: 'model', value: 'Dlib' }, { key: 'facial_areas' }, { key: 'results' }],
  ]);
  t.same(jsonValues('{"a":1}{"b":"}{"}\n[1,2]\ntext {not json}'), [{ a: 1 }, { b: '}{' }, [1, 2]]);
  // Client READMEs also run Python and TypeScript; other documents leave them alone.
  const client = '```python\nprint(1)\n```\n<!-- doc-test: skip (x y) -->\n```ts\nx()\n```\n```js\ny()\n```';
  t.same(shellBlocks(client, 'c', CLIENT_LANGUAGES).map((b) => [b.lang, b.mode]), [['python', 'run'], ['ts', 'skip']]);
  t.same(shellBlocks(client.replace('<!-- doc-test: skip (x y) -->\n', '')).map((b) => b.lang), []);
  t.same(promisedAnswers({ line: 1, lang: 'ts', mode: 'run', code: '// {"verified":true}' }), [[{ key: 'verified', value: true }]]);
});

interface RunResult {
  block: DocBlock;
  ran: boolean;
  output: string;
}

/**
 * Runs a document's blocks in order in one bash, in `dir`; returns each block's output. A Python or
 * TypeScript block is written to a file and run there (`python3 block.py`, tsx for `.mts`), with
 * the shell's exported variables.
 */
async function runDocument(name: string, blocks: DocBlock[], vars: Record<string, string>, dir: string, extraEnv: Record<string, string> = {}): Promise<{ results: RunResult[]; stderr: string; code: number | null }> {
  const toRun = blocks.filter((b) => b.mode !== 'skip');
  const script = ['set -euo pipefail'];
  toRun.forEach((b, i) => {
    script.push(`printf '\\n@@doc-block ${i} begin\\n'`);
    if (b.mode === 'env') script.push(...Object.entries(vars).map(([k, v]) => `export ${k}=${v}`));
    else if (b.lang === 'python') script.push(`cat > block-${i}.py <<'FC_DOC_BLOCK'\n${b.code}\nFC_DOC_BLOCK`, `python3 block-${i}.py`);
    else if (b.lang === 'ts') script.push(`cat > block-${i}.mts <<'FC_DOC_BLOCK'\n${b.code}\nFC_DOC_BLOCK`, `node --import "$FC_DOC_TSX" block-${i}.mts`);
    else script.push(b.code);
    script.push(`printf '\\n@@doc-block ${i} end\\n'`);
  });
  // A newcomer's shell: their PATH, a home of their own, none of our FACECOMPUTE_* settings.
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', ...extraEnv };
  const proc = spawn('bash', ['-c', script.join('\n')], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => proc.kill('SIGKILL'), BLOCK_TIMEOUT_MS * Math.max(1, toRun.length));
  const code = await new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  clearTimeout(timer);
  const results = toRun.map((block, i) => {
    const m = new RegExp(`\\n@@doc-block ${i} begin\\n([\\s\\S]*?)(\\n@@doc-block ${i} end\\n|$)`).exec(stdout);
    return { block, ran: Boolean(m && m[2]), output: m?.[1] ?? '' };
  });
  void name;
  return { results, stderr, code };
}

t.test('every shell example runs verbatim against a live serve built without ../shared', { timeout: 600_000 }, async (t) => {
  registryFetchLog();
  const probe = await probeHidden();
  const want = expectedHidden(probe.dirs);
  if (!t.equal(probe.seen, want.seen, `hidden by ${probe.mode}: ${probe.dirs.join(', ')} cannot be read from inside`)) return;
  // What `bootstrap serve` runs: the embedded defaults, on the models a user's machine gets from the
  // registries, only moved to free loopback ports and a fresh data directory.
  const env = userEnv({
    FACECOMPUTE_MODELS_CACHE: REGISTRY_CACHE,
    // Each document is one newcomer, and each signs up anonymously: more of them from one address in
    // an hour than the default allows (5, FACECOMPUTE_SIGNUP_RATE_LIMIT) since the client READMEs and
    // the docs pages came.
    FACECOMPUTE_SIGNUP_RATE_LIMIT: '50',
  });
  const s = await startServe(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], env, { cwd: REPO_ROOT, spawner: spawnWithoutShared });
  t.teardown(s.stop);
  if ((await s.ready()) !== 200) {
    t.fail(`serve did not become ready: ${s.logs.join('').slice(-3000)}`);
    return;
  }
  const gw = s.gw;
  const con = s.console;
  for (const tool of ['bash', 'curl', 'jq']) t.equal(spawnSync(tool, ['--version']).status, 0, `${tool} is installed (scripts/bootstrap.sh installs it)`);

  // The client READMEs' readers installed the package (pip install ./clients/python; npm run build in
  // clients/js): here the package is installed offline into a temporary directory, and
  // @facecompute/client is linked into each run's node_modules.
  const pythonSite = installPythonClient();
  const clientEnv = (dir: string): Record<string, string> => {
    mkdirSync(join(dir, 'node_modules', '@facecompute'), { recursive: true });
    symlinkSync(CLIENT_JS_DIR, join(dir, 'node_modules', '@facecompute', 'client'));
    return {
      PATH: `${join(CLIENT_PYTHON_VENV, 'bin')}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
      PYTHONPATH: [pythonSite, process.env['PYTHONPATH'] ?? ''].filter(Boolean).join(':'),
      FC_DOC_TSX: import.meta.resolve('tsx'),
    };
  };
  const pages = readdirSync(resolve(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`);
  for (const page of pages) t.ok(page in EXPECTED, `${page} has its expected block counts here`);
  const documents: Array<{ name: string; text: string; languages: ReadonlySet<string> }> = [
    { name: 'README.md', text: readFileSync(resolve(REPO_ROOT, 'README.md'), 'utf8'), languages: SHELL_LANGUAGES },
    ...pages.map((name) => ({ name, text: readFileSync(resolve(REPO_ROOT, name), 'utf8'), languages: SHELL_LANGUAGES })),
    { name: '/llms.txt', text: await (await fetch(`${con}/llms.txt`)).text(), languages: SHELL_LANGUAGES },
    { name: '/skill.md', text: await (await fetch(`${con}/skill.md`)).text(), languages: SHELL_LANGUAGES },
    { name: 'clients/python/README.md', text: readFileSync(resolve(REPO_ROOT, 'clients/python/README.md'), 'utf8'), languages: CLIENT_LANGUAGES },
    { name: 'clients/js/README.md', text: readFileSync(resolve(REPO_ROOT, 'clients/js/README.md'), 'utf8'), languages: CLIENT_LANGUAGES },
  ];
  // The variables the README's env block tells a reader to set, and what each means here.
  const live: Record<string, { url: string; port: string }> = {
    GW: { url: gw, port: specDefault('FACECOMPUTE_GATEWAY_PORT') },
    CONSOLE: { url: con, port: specDefault('FACECOMPUTE_CONSOLE_PORT') },
    FACECOMPUTE_URL: { url: gw, port: specDefault('FACECOMPUTE_GATEWAY_PORT') },
  };

  let total = 0;
  for (const doc of documents) {
    await t.test(doc.name, async (t) => {
      const blocks = shellBlocks(doc.text, doc.name, doc.languages);
      const count = (mode: DocBlock['mode']) => blocks.filter((b) => b.mode === mode).length;
      t.same({ run: count('run'), skip: count('skip'), env: count('env') }, EXPECTED[doc.name], 'the shell blocks it runs, skips (with a reason) and reads as env');
      for (const b of blocks.filter((x) => x.mode === 'skip')) t.ok(b.reason && b.reason.length > 3, `line ${b.line} is skipped because: ${b.reason}`);

      const vars: Record<string, string> = {};
      for (const b of blocks.filter((x) => x.mode === 'env')) {
        for (const [name, value] of envAssignments(b)) {
          const l = live[name];
          if (!l) {
            t.fail(`${doc.name}:${b.line} tells the reader to set ${name}, which this test does not know how to set`);
            continue;
          }
          t.equal(value, `http://localhost:${l.port}`, `${name} is documented as the serve default`);
          vars[name] = l.url;
        }
      }

      // The README's and the docs pages' blocks run where a clone's root has samples/; the client
      // READMEs read img1.jpg and img2.jpg from the current directory.
      const dir = mkdtempSync(join(tmpdir(), 'fc-doc-examples-'));
      cpSync(resolve(REPO_ROOT, 'samples'), join(dir, 'samples'), { recursive: true });
      for (const img of ['img1.jpg', 'img2.jpg']) copyFileSync(resolve(REPO_ROOT, 'samples', img), join(dir, img));
      const { results, stderr, code } = await runDocument(doc.name, blocks, vars, dir, doc.name.startsWith('clients/') ? clientEnv(dir) : {});
      for (const r of results) {
        const where = `${doc.name}:${r.block.line}`;
        if (!r.ran) {
          t.fail(`${where} failed (bash exit ${code}): ${stderr.slice(-1500)}\n--- output ---\n${r.output.slice(-1500)}`);
          break;
        }
        total++;
        t.notMatch(r.output, /"error"\s*:/, `${where} answers no error`);
        const values = jsonValues(r.output);
        for (const promise of promisedAnswers(r.block)) {
          t.ok(values.some((v) => keeps(v, promise)), `${where} prints the answer its comment shows (${promise.map((p) => p.key).join(', ')})`, { output: r.output.slice(0, 2000) });
        }
      }
      t.equal(code, 0, `${doc.name}: the shell exits 0`);
      t.equal(results.filter((r) => r.ran).length, results.length, `${doc.name}: every block ran to its end`);
    });
  }
  t.equal(total, Object.values(EXPECTED).reduce((n, e) => n + e.run + e.env, 0), 'blocks run in all');

  await s.stop();
  t.same(hiddenDirsReached(), [], 'the service never reached for a shared directory');
});
