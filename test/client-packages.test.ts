/**
 * Both client packages as a user gets them (issue 39): each builds to what is published, carries its
 * LICENSE, and installs and imports in a clean environment, offline.
 *   - Python: an sdist and a wheel built by setuptools (>= 77, the pyproject floor) from
 *     .venvs/client-python; the wheel installed into a fresh venv and imported there.
 *   - JS: `npm pack` (prepack builds dist/) into a tarball, installed into a fresh project and imported
 *     through its exports (the `import` and `default` conditions); VERSION equals package.json's; no
 *     module-level `node:` import (browser bundles).
 * About half a minute on two busy cores.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from './helpers/shared.js';
import { CLIENT_JS_DIR, CLIENT_PYTHON } from './helpers/clients.js';

const LICENSE = readFileSync(resolve(REPO_ROOT, 'LICENSE'), 'utf8');

function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stdout}${r.stderr}`);
  return r.stdout;
}

t.test('python: sdist and wheel with LICENSE, the wheel installs in a clean venv', async (t) => {
  const pyproject = readFileSync(resolve(REPO_ROOT, 'clients/python/pyproject.toml'), 'utf8');
  t.match(pyproject, /requires = \["setuptools>=77"\]/, 'setuptools >= 77: the first to read license = "MIT" (PEP 639)');
  t.equal(readFileSync(resolve(REPO_ROOT, 'clients/python/LICENSE'), 'utf8'), LICENSE, 'clients/python/LICENSE is the repository licence');
  const dir = mkdtempSync(join(tmpdir(), 'fc-py-pkg-'));
  const src = join(dir, 'src');
  cpSync(resolve(REPO_ROOT, 'clients', 'python'), src, { recursive: true, filter: (p) => !/(^|\/)(build|dist|__pycache__|[^/]*\.egg-info|\.pytest_cache)$/.test(p) });
  const out = join(dir, 'out');
  // setuptools' PEP 517 backend, offline, as `python -m build --no-isolation` would call it.
  const built = sh(CLIENT_PYTHON, ['-c', `import sys; from setuptools import build_meta as b; o = sys.argv[1]; print(b.build_sdist(o)); print(b.build_wheel(o))`, out], src);
  const files = readdirSync(out);
  const sdist = files.find((f) => f.endsWith('.tar.gz'));
  const wheel = files.find((f) => f.endsWith('.whl'));
  t.ok(sdist && wheel, `an sdist and a wheel: ${files.join(', ')}\n${built.slice(-3000)}`);
  const listing = sh(CLIENT_PYTHON, ['-c', 'import sys, tarfile, zipfile; print("\\n".join(tarfile.open(sys.argv[1]).getnames())); print("\\n".join(zipfile.ZipFile(sys.argv[2]).namelist()))', join(out, sdist!), join(out, wheel!)], dir);
  t.match(listing, /^facecompute-[^/]+\/LICENSE$/m, 'the sdist has LICENSE');
  t.match(listing, /^facecompute-[^/]+\.dist-info\/licenses\/LICENSE$/m, 'the wheel has LICENSE');
  t.match(listing, /^facecompute\/py\.typed$/m, 'the wheel has py.typed');
  const venv = join(dir, 'venv');
  sh('python3', ['-m', 'venv', '--without-pip', venv], dir);
  // The clean venv's interpreter, given the wheel by the test venv's pip (offline, no dependencies
  // fetched: httpx is imported lazily enough for `import facecompute` to need it, so it is linked in).
  sh(CLIENT_PYTHON, ['-m', 'pip', '--python', join(venv, 'bin', 'python'), 'install', '-q', '--no-index', '--no-deps', '--disable-pip-version-check', join(out, wheel!)], dir);
  const site = sh(CLIENT_PYTHON, ['-c', 'import httpx, os; print(os.path.dirname(os.path.dirname(httpx.__file__)))'], dir).trim();
  const got = sh(join(venv, 'bin', 'python'), ['-c', 'import facecompute, facecompute.DeepFace as d; print(facecompute.__version__, d.__version__, facecompute.__file__)'], dir, {
    PYTHONPATH: site,
  });
  t.match(got, new RegExp(`^${readFileSync(resolve(REPO_ROOT, 'clients/python/src/facecompute/_version.py'), 'utf8').match(/"(.+)"/)![1]!.replace(/\./g, '\\.')} 0\\.0\\.100 ${venv.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/`), 'imported from the clean venv');
});

t.test('python: the result TypedDicts (facecompute.types) match openapi.json; a changed document fails the check', async (t) => {
  const root = resolve(REPO_ROOT, 'clients', 'python');
  const ok = spawnSync(CLIENT_PYTHON, ['scripts/gen_types.py', '--check'], { cwd: root, encoding: 'utf8' });
  t.equal(ok.status, 0, `scripts/gen_types.py --check: ${ok.stdout}${ok.stderr}`);
  const doc = JSON.parse(readFileSync(resolve(REPO_ROOT, 'openapi.json'), 'utf8')) as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } };
  doc.components.schemas['VerifyResponse']!.properties['added_field'] = { type: 'string' };
  const changed = join(mkdtempSync(join(tmpdir(), 'fc-openapi-')), 'openapi.json');
  writeFileSync(changed, JSON.stringify(doc));
  const stale = spawnSync(CLIENT_PYTHON, ['scripts/gen_types.py', '--check'], { cwd: root, encoding: 'utf8', env: { ...process.env, FC_OPENAPI_JSON: changed } });
  t.equal(stale.status, 1, 'a field added to the document without regenerating fails');
  t.match(stale.stderr, /added_field: str/, 'and shows the missing field');
});

t.test('js: npm pack (prepack builds) with LICENSE, installs and imports in a clean project', async (t) => {
  const pkg = JSON.parse(readFileSync(join(CLIENT_JS_DIR, 'package.json'), 'utf8')) as { version: string; scripts: Record<string, string>; exports: Record<string, Record<string, string>> };
  t.equal(pkg.scripts['prepack'], 'npm run build', 'prepack builds dist/');
  t.same(Object.keys(pkg.exports['.'] ?? {}), ['types', 'import', 'default'], 'a default export condition, last');
  t.equal(readFileSync(join(CLIENT_JS_DIR, 'LICENSE'), 'utf8'), LICENSE, 'clients/js/LICENSE is the repository licence');
  const dir = mkdtempSync(join(tmpdir(), 'fc-js-pkg-'));
  const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', dir], CLIENT_JS_DIR)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const paths = packed[0]!.files.map((f) => f.path);
  for (const p of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/version.js']) t.ok(paths.includes(p), `the tarball has ${p}`);
  const project = join(dir, 'project');
  sh('mkdir', ['-p', project], dir);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'clean', version: '1.0.0', private: true, type: 'module' }));
  sh('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', join(dir, packed[0]!.filename)], project);
  // Browser-safe: no module-level node: import in what a bundler loads (node:fs is imported lazily, for paths).
  const dist = join(project, 'node_modules', '@facecompute', 'client', 'dist');
  for (const f of readdirSync(dist).filter((x) => x.endsWith('.js'))) {
    t.notMatch(readFileSync(join(dist, f), 'utf8'), /^import[^\n]*from ['"]node:/m, `dist/${f} has no top-level node: import`);
  }
  // A plain node, as a user's: without the test runner's loaders (NODE_OPTIONS).
  const { NODE_OPTIONS: _loaders, ...plain } = process.env;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', "import * as fc from '@facecompute/client'; console.log(fc.VERSION, typeof fc.Client, import.meta.resolve('@facecompute/client'))"], { cwd: project, encoding: 'utf8', env: plain, timeout: 60_000 });
  t.equal(run.status, 0, `node imports the installed package: ${run.stderr}`);
  const out = run.stdout;
  t.match(out, new RegExp(`^${pkg.version.replace(/\./g, '\\.')} function file://.*/node_modules/@facecompute/client/dist/index\\.js`), 'imports; VERSION is package.json\'s');
});
