/**
 * The client libraries (issue 27) against one live `facecompute serve` with real images
 * (../shared/data/deepface):
 *   - Python: clients/python built and installed offline (`pip install`), then its pytest suite
 *     (Client, AsyncClient, every input form, binary compare on the streaming path, typed errors,
 *     retries against a stub, and the DeepFace shim's parity with the REST API), and mypy --strict;
 *   - the "done when" script: clients/python/examples/deepface_readme.py, DeepFace README code whose
 *     only facecompute line is its import, runs against the service;
 *   - TypeScript: clients/js's generated types match openapi.json, it type-checks, its README's
 *     TypeScript type-checks against the built package, and its node:test suite passes against the
 *     built package (dist/, through its exports).
 * Each suite's own runner decides pass or fail; this file fails with its output, and checks that the
 * suites ran what they should (no skips, no empty runs). About 5 minutes on two busy cores.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import { REPO_ROOT, DEEPFACE_DIR, ROBUSTNESS_DIR } from './helpers/shared.js';
import { CLIENT_JS_DIR, CLIENT_PYTHON, installPythonClient, run, startServe, type LiveServe } from './helpers/clients.js';
import { CLIENT_LANGUAGES, shellBlocks } from './helpers/doc-blocks.js';

const NO_FACE = join(ROBUSTNESS_DIR, 'no_face', 'face-api.js__test__images__white.png');
// The suites' sizes: a test removed or deselected by mistake fails here rather than passing quietly.
const PYTEST_MIN = 72;
const NODE_TEST_MIN = 23;


let stack: LiveServe;
let key: string;
let testEnv: Record<string, string>;

t.before(async () => {
  stack = await startServe({ FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000', FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_LOG_LEVEL: 'warn' });
  key = await stack.newKey('clients');
  testEnv = {
    ...(process.env as Record<string, string>),
    FACECOMPUTE_URL: stack.gateway,
    FACECOMPUTE_API_KEY: key,
    FC_TEST_IMAGES: DEEPFACE_DIR,
    FC_TEST_NO_FACE: NO_FACE,
    FC_TEST_METRICS_URL: stack.metrics,
  };
});
t.teardown(() => stack?.stop());
/** Each subtest ends with this: a failure from a dead service then says so, with serve's log. */
function serveStillRunning(t: Test): void {
  const gone = stack.exited();
  t.equal(gone, null, `serve still running${gone ? ` (${gone}); its log: ${stack.logs.join('').slice(-4000)}` : ''}`);
}

t.test('python: pip install ./clients/python, then its pytest suite', { timeout: 900_000 }, async (t) => {
  const site = installPythonClient();
  t.ok(existsSync(join(site, 'facecompute', 'py.typed')), 'the installed package ships py.typed');
  const started = Date.now();
  const r = await run(CLIENT_PYTHON, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-rfEs', 'tests'], {
    cwd: resolve(REPO_ROOT, 'clients', 'python'),
    env: { ...testEnv, PYTHONPATH: [site, process.env['PYTHONPATH'] ?? ''].filter(Boolean).join(':'), PYTHONDONTWRITEBYTECODE: '1' },
    timeoutMs: 840_000,
  });
  // pytest -q ends with "66 passed in 12.34s" (with ===== around it without -q)
  const summary = /^=*\s*(\d+ (?:passed|failed|error)[^\n]*?) in [\d.]+s/m.exec(r.out)?.[1] ?? '';
  t.equal(r.code, 0, `pytest exit status; ${summary}\n${r.code === 0 ? '' : r.out.slice(-12_000)}`);
  const passed = Number(/(\d+) passed/.exec(summary)?.[1] ?? 0);
  t.ok(passed >= PYTEST_MIN, `pytest: ${passed} passed (at least ${PYTEST_MIN})`);
  t.notMatch(summary, /skipped|xfail|xpass|deselected|error/, 'nothing skipped, deselected or errored');
  t.comment(`pytest: ${summary} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  serveStillRunning(t);
});

t.test('python: the package type-checks (mypy --strict), as py.typed promises', { timeout: 300_000 }, async (t) => {
  const root = resolve(REPO_ROOT, 'clients', 'python');
  const r = await run(CLIENT_PYTHON, ['-m', 'mypy', '--strict', '--no-error-summary', '--cache-dir', mkdtempSync(join(tmpdir(), 'fc-mypy-')), join(root, 'src', 'facecompute')], {
    cwd: root,
    env: { ...(process.env as Record<string, string>), MYPYPATH: join(root, 'src') },
    timeoutMs: 240_000,
  });
  t.equal(r.code, 0, `mypy --strict\n${r.out}`);
});

t.test('the DeepFace README script runs after changing only its import line', { timeout: 300_000 }, async (t) => {
  const script = resolve(REPO_ROOT, 'clients', 'python', 'examples', 'deepface_readme.py');
  const code = readFileSync(script, 'utf8').split('\n').filter((l) => !l.startsWith('#'));
  t.same(code.filter((l) => /facecompute/i.test(l)), ['from facecompute import DeepFace'], 'the import is its only facecompute line: DeepFace code otherwise');
  t.notMatch(code.join('\n'), /FACECOMPUTE_|configure\(|Client\(/, 'no facecompute set-up in the code: the URL and key come from the environment');
  const site = installPythonClient();
  const dir = mkdtempSync(join(tmpdir(), 'fc-deepface-script-'));
  for (const [from, to] of [['img1.jpg', 'img1.jpg'], ['img2.jpg', 'img2.jpg'], ['img3.jpg', 'img.jpg']] as const) copyFileSync(join(DEEPFACE_DIR, from), join(dir, to));
  const r = await run(CLIENT_PYTHON, [script], { cwd: dir, env: { ...testEnv, PYTHONPATH: site }, timeoutMs: 240_000 });
  t.equal(r.code, 0, `the script ran\n${r.out}`);
  t.match(r.out, /^verify: True 0\.\d+ 0\.4 Facenet$/m, 'verify: same person, with Facenet');
  t.match(r.out, /^represent: 1 face\(s\), 128 dimensions$/m);
  t.match(r.out, /^models\[1\]: 128 dimensions$/m, 'Dlib');
  t.match(r.out, /^detector: retinaface True$/m);
  t.match(r.out, /^extract_faces: 1 face\(s\), 3 channels$/m, 'extract_faces (issue 39)');
  t.match(r.out, /^metric: euclidean \d+\.\d+ 10 True$/m);
  serveStillRunning(t);
});

t.test('typescript: generated types up to date, type-check, node:test suite on the built package', { timeout: 600_000 }, async (t) => {
  t.ok(existsSync(join(CLIENT_JS_DIR, 'dist', 'index.js')), 'clients/js is built (scripts/bootstrap.sh runs npm run build there)');
  const pkg = JSON.parse(readFileSync(join(CLIENT_JS_DIR, 'package.json'), 'utf8')) as { main: string; exports: { '.': { import: string } } };
  t.equal(pkg.main, './dist/index.js');
  t.equal(pkg.exports['.'].import, './dist/index.js');
  const check = await run('npm', ['run', '--silent', 'check'], { cwd: CLIENT_JS_DIR, env: process.env as Record<string, string>, timeoutMs: 180_000 });
  t.equal(check.code, 0, `npm run check (generated types match openapi.json, tsc --noEmit)\n${check.out}`);
  // The check can fail: against an openapi.json with one more response field, it must.
  const doc = JSON.parse(readFileSync(resolve(REPO_ROOT, 'openapi.json'), 'utf8')) as { components: { schemas: { VerifyResponse: { properties: Record<string, unknown> } } } };
  doc.components.schemas.VerifyResponse.properties['added_later'] = { type: 'string' };
  const changed = join(mkdtempSync(join(tmpdir(), 'fc-openapi-')), 'openapi.json');
  writeFileSync(changed, JSON.stringify(doc));
  const stale = await run('npm', ['run', '--silent', 'check:generated'], { cwd: CLIENT_JS_DIR, env: { ...(process.env as Record<string, string>), FC_OPENAPI_JSON: changed }, timeoutMs: 120_000 });
  t.not(stale.code, 0, 'a changed openapi.json without regenerating fails the check');
  t.match(stale.out, /out of date with openapi\.json[\s\S]*added_later/, 'and says which line differs');
  // The README's TypeScript, as a reader's files beside the installed package, type-checks strictly.
  const readme = join(mkdtempSync(join(tmpdir(), 'fc-js-readme-')), 'app');
  mkdirSync(join(readme, 'node_modules', '@facecompute'), { recursive: true });
  symlinkSync(CLIENT_JS_DIR, join(readme, 'node_modules', '@facecompute', 'client'));
  const blocks = shellBlocks(readFileSync(join(CLIENT_JS_DIR, 'README.md'), 'utf8'), 'clients/js/README.md', CLIENT_LANGUAGES).filter((b) => b.lang === 'ts');
  t.ok(blocks.length >= 2, `${blocks.length} TypeScript blocks in the README`);
  blocks.forEach((b, i) => writeFileSync(join(readme, `block-${i}.mts`), b.code));
  writeFileSync(join(readme, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'], typeRoots: [join(CLIENT_JS_DIR, 'node_modules', '@types')], skipLibCheck: true }, include: ['*.mts'] }));
  const tsc = await run(process.execPath, [join(CLIENT_JS_DIR, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', readme], { cwd: readme, env: process.env as Record<string, string>, timeoutMs: 120_000 });
  t.equal(tsc.code, 0, `the README's TypeScript type-checks (tsc --strict)\n${tsc.out}`);
  const r = await run(process.execPath, ['--test', '--test-reporter=tap', 'test/'], { cwd: CLIENT_JS_DIR, env: testEnv, timeoutMs: 540_000 });
  const count = (what: string) => Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(r.out)?.[1] ?? -1);
  t.equal(r.code, 0, `node --test exit status\n${r.code === 0 ? '' : r.out.slice(-12_000)}`);
  t.ok(count('pass') >= NODE_TEST_MIN, `node --test: ${count('pass')} passed (at least ${NODE_TEST_MIN})`);
  t.same([count('fail'), count('skipped'), count('todo'), count('cancelled')], [0, 0, 0, 0], 'none failed, skipped or cancelled');
  serveStillRunning(t);
});
