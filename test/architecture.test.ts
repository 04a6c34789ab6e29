/**
 * docs/architecture.md ("Layers"): the import rules of src/, checked on every import of every file.
 *
 * Layers, top to bottom (a folder of src/ belongs to one; see LAYERS):
 *   entry (cli) → surfaces (gateway, mcp, console, model-server) → service (service, http)
 *   → clients and domain (model-client, accounts, deepface, models)
 *   → foundation (vocabulary, native, config, errors, logging, package-root.ts).
 * Rules: an import goes to its own folder or to a lower layer, never up; surfaces do not import one
 * another; nothing outside src/native/ loads the generated binding or reads its typings (index.js,
 * index.d.ts, the .node file), in src/ or anywhere else in the repository (bench/ loads its own,
 * bench/native/); no cycle of imports among src/'s files (type-only imports count: they tie the files' meanings);
 * no bench-only export of the binding is used in src/. The request lifecycle's rules (at the end) keep
 * authentication, metering, error mapping and cleanup on close in src/service/lifecycle/ and
 * src/http/error-handler.ts. KNOWN lists today's exceptions, each with the
 * step of issue 30 that removes it; the test also fails when one is gone, so the list stays true.
 *
 * A regex over the sources reads the imports: `import … from '…'`, `export … from '…'`, side-effect
 * imports and `import('…')`, relative specifiers only (packages are not layers).
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { DISTANCE_METRICS, NORMALIZATIONS } from '../src/vocabulary/closed-sets.js';
import { native } from '../src/native/addon.js';

const SRC = join(REPO_ROOT, 'src');

/** Layer of each top-level folder (or file) of src/; a lower number is higher up. */
const LAYERS: Record<string, number> = {
  cli: 0,
  gateway: 1,
  mcp: 1,
  console: 1,
  'model-server': 1,
  service: 2,
  http: 2,
  'model-client': 3,
  accounts: 3,
  deepface: 3,
  models: 3,
  'docs-index': 3,
  vocabulary: 4,
  native: 4,
  config: 4,
  errors: 4,
  logging: 4,
  'package-root.ts': 4,
};
const SURFACES = 1;

/** Today's exceptions: `from -> to` (paths under src/), and why they are still there. */
const KNOWN: Record<string, string> = {};

/** Today's cycles, each as the test prints it, and why it is still there. */
const KNOWN_CYCLES: Record<string, string> = {};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const IMPORT = /(?:^|[\n;])\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

/** Relative specifiers of a source, comments removed. */
export function importsOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/[^\n]*/g, '$1');
  return [...code.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3] ?? '').filter((s) => s.startsWith('.'));
}

const top = (rel: string): string => rel.split(sep)[0] ?? rel;
const files = sources(SRC);
const edges = new Map<string, string[]>();
for (const file of files) {
  const from = relative(SRC, file);
  edges.set(
    from,
    importsOf(readFileSync(file, 'utf8')).map((spec) => relative(SRC, resolve(dirname(file), spec)).replace(/\.js$/, '.ts')),
  );
}

t.test('the reader sees imports (a check of the check)', async (t) => {
  t.ok(files.length > 100, `${files.length} source files`);
  t.same(importsOf("import { a,\n  b } from './x.js';\nimport type { C } from '../y.js';\nexport * from './z.js';\nimport './side.js';\nconst m = await import('./lazy.js');\n// import { no } from './comment.js';\nimport { pkg } from 'fastify';"), ['./x.js', '../y.js', './z.js', './side.js', './lazy.js']);
  t.ok([...edges.values()].reduce((n, e) => n + e.length, 0) > 300, 'hundreds of relative imports read');
});

t.test('every folder of src/ has a layer', async (t) => {
  const tops = [...new Set([...edges.keys()].map(top))].sort();
  t.same(tops.filter((x) => LAYERS[x] === undefined), [], 'folders without a layer (add them to LAYERS and docs/architecture.md)');
});

t.test('imports go down the layers, never up or across surfaces', async (t) => {
  const bad: string[] = [];
  const seen = new Set<string>();
  for (const [from, tos] of edges) {
    for (const to of tos) {
      const a = top(from);
      const b = top(to);
      if (to.startsWith('..')) {
        // Outside src/: only the generated binding, from native/.
        if (to !== join('..', 'index.ts') || a !== 'native') bad.push(`${from} -> ${to}`);
        continue;
      }
      if (a === b) continue;
      const la = LAYERS[a];
      const lb = LAYERS[b];
      if (la === undefined || lb === undefined) continue;
      if (lb > la || (la !== SURFACES && lb === la)) continue;
      const key = `${from} -> ${to}`;
      if (KNOWN[key]) seen.add(key);
      else bad.push(key);
    }
  }
  t.same(bad, [], 'imports that break the layering');
  t.same([...seen].sort(), Object.keys(KNOWN).sort(), 'every known exception still exists (remove fixed ones from KNOWN)');
});

t.test('no cycle among the files of src/', async (t) => {
  const state = new Map<string, 1 | 2>();
  const cycles: string[] = [];
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 1);
    stack.push(f);
    for (const to of edges.get(f) ?? []) {
      if (!edges.has(to)) continue;
      const s = state.get(to);
      if (s === 1) cycles.push([...stack.slice(stack.indexOf(to)), to].join(' -> '));
      else if (s === undefined) visit(to);
    }
    stack.pop();
    state.set(f, 2);
  };
  for (const f of [...edges.keys()].sort()) if (!state.has(f)) visit(f);
  t.same(cycles.filter((c) => !KNOWN_CYCLES[c]), [], 'import cycles');
  t.same(cycles.filter((c) => KNOWN_CYCLES[c]).sort(), Object.keys(KNOWN_CYCLES).sort(), 'every known cycle still exists (remove fixed ones)');
});

t.test('no `as never` in src/: bodies and tool arguments are typed from their schemas', async (t) => {
  // `as never` silences every type check of what it casts; it was how bodies reached the compute
  // service (req.body as never) and how MCP called it (compute[tool](args as never, ctx)).
  const casts = files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (/\bas\s+never\b/.test(line) ? [`${relative(SRC, f)}:${i + 1}: ${line.trim()}`] : [])),
  );
  t.same(casts, [], 'src/ lines with `as never`');
});

t.test('only src/native/ reaches the addon (native/addon.ts); the other layers call its typed wrappers', async (t) => {
  const users = [...edges].flatMap(([from, tos]) => (top(from) !== 'native' && tos.includes(join('native', 'addon.ts')) ? [from] : []));
  t.same(users, [], 'src/ files outside native/ importing native/addon.ts');
});

t.test('the bench-only exports of the binding are not used by the service', async (t) => {
  const users = files.filter((f) => /\bnative\.bench[A-Z]/.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
  t.same(users, [], 'src/ files calling native.bench* (crates/facecompute-node/src/bench.rs)');
  // The shipped addon is built without the cargo feature `bench` (npm run build:native).
  t.same(Object.keys(native).filter((k) => /^bench[A-Z]/.test(k)), [], 'bench-only exports in the shipped addon (index.js)');
  t.notMatch(readFileSync(join(REPO_ROOT, 'index.d.ts'), 'utf8'), /\bbench[A-Z]/, 'bench-only exports in index.d.ts');
});

t.test("the contract's closed sets are the binding's, written once in TypeScript", async (t) => {
  t.same([...DISTANCE_METRICS], Object.values(native.DistanceMetric), "metrics: the vocabulary's are the binding's string enum's, in order");
  t.same([...NORMALIZATIONS], Object.values(native.Normalization), "normalizations: the vocabulary's are the binding's");
  // A second copy: a line of another src/ file that spells two members of one set as strings (a
  // list, a union type); one member alone (a `case` of an exhaustive switch) is a use, not a copy.
  const copies: string[] = [];
  for (const f of files) {
    const rel = relative(SRC, f);
    if (rel === join('vocabulary', 'closed-sets.ts')) continue;
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      for (const set of [DISTANCE_METRICS, NORMALIZATIONS]) {
        const spelled = set.filter((m) => new RegExp(`['"\`]${m}['"\`]`).test(line));
        if (spelled.length >= 2) copies.push(`${rel}:${i + 1}: ${spelled.join(', ')}`);
      }
    });
  }
  t.same(copies, [], 'src/ files spelling a closed set outside src/vocabulary/closed-sets.ts');
});

/** The repository's own code: the folders whose files may run or be imported (not dist/ or node_modules/). */
const CODE_DIRS = ['src', 'test', 'bench', 'tools', 'scripts', 'bin', 'examples'];

function code(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : code(p);
    return /\.(ts|mts|js|mjs|cjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

const LOAD = /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)|createRequire\([^)]*\)\s*\(\s*['"]([^'"]+)['"]/g;

/**
 * Files (paths relative to the repository root) that load the binding or read its typings outside
 * src/native/: an import, export, `import()` or `require` of the root's index.js (its index.d.ts
 * types it), a path to the `.node` file, or the loader's path joined to the package root. bench/ may
 * load its own build, bench/native/, and nothing else may.
 */
export function bindingLoaders(sourcesByPath: Array<[string, string]>): string[] {
  const root = resolve('/repo');
  const binding = new Set([join(root, 'index.js'), join(root, 'index.d.ts'), join(root, 'index.ts')]);
  const benchBinding = join(root, 'bench', 'native', 'index.js');
  return sourcesByPath
    .filter(([rel, text]) => {
      if (rel.startsWith(`src${sep}native${sep}`) || rel.startsWith(`bench${sep}native${sep}`)) return false;
      const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/[^\n]*/g, '$1');
      const specs = [...importsOf(code), ...[...code.matchAll(LOAD)].map((m) => m[1] ?? m[2] ?? '')].filter((x) => x.startsWith('.'));
      const targets = specs.map((x) => resolve(root, dirname(rel), x));
      if (targets.some((x) => binding.has(x))) return true;
      if (!rel.startsWith(`bench${sep}`) && targets.includes(benchBinding)) return true;
      return /['"`][^'"`\n]*\bfacecompute\.[\w-]+\.node['"`]/.test(code) || /\b(?:join|resolve)\(\s*\w*ROOT\w*\s*,\s*['"]index\.(?:js|d\.ts)['"]/.test(code);
    })
    .map(([rel]) => rel);
}

t.test('nothing outside src/native/ loads the binding (index.js, index.d.ts, the .node file)', async (t) => {
  const all = CODE_DIRS.flatMap((d) => code(join(REPO_ROOT, d))).map((f): [string, string] => [relative(REPO_ROOT, f), readFileSync(f, 'utf8')]);
  t.ok(all.length > files.length + 100, `${all.length} files of src/, test/, bench/, tools/, scripts/, bin/ and examples/ read`);
  // This file is left out: its planted sources below spell what the rule looks for.
  const others = all.filter(([rel]) => rel !== join('test', 'architecture.test.ts'));
  t.same(bindingLoaders(others), [], 'files loading the binding outside src/native/');
  // A check of the check: each way of reaching the binding is caught; src/native/ and bench/'s own are not.
  const planted: Array<[string, string]> = [
    [join('src', 'service', 'x.ts'), "import type { NativeImage } from '../../index.js';"],
    [join('src', 'vocabulary', 'x.ts'), "import type * as Binding from '../../index.js';"],
    [join('test', 'x.test.ts'), "const native = createRequire(import.meta.url)('../index.js');"],
    [join('tools', 'x.ts'), "const addon = require('../facecompute.linux-x64-gnu.node');"],
    [join('src', 'model-server', 'x.ts'), "export const native = require(join(PACKAGE_ROOT, 'index.js'));"],
    [join('test', 'y.test.ts'), "const { benchReadSum } = await import('../bench/native/index.js');"],
    [join('src', 'native', 'addon.ts'), "import type * as Binding from '../../index.js'; const n = require(join(PACKAGE_ROOT, 'index.js'));"],
    [join('bench', 'lib', 'bench-native.ts'), "const n = require('../native/index.js');"],
    [join('test', 'z.test.ts'), "import { native } from '../src/native/addon.js'; // not '../index.js'"],
    [join('test', 'w.test.ts'), "const probe = join(dir, 'panic-probe.node'); const f = 'better_sqlite3.node';"],
  ];
  t.same(bindingLoaders(planted), planted.slice(0, 6).map(([rel]) => rel), 'the planted loaders are caught, the allowed ones are not');
});

/** src/ files, other than the one reader, that parse an Authorization header themselves. */
export function bearerParsers(sourcesByPath: Array<[string, string]>): string[] {
  return sourcesByPath.filter(([rel, text]) => rel !== join('http', 'bearer.ts') && /\^Bearer|(?<!['"][\w.]*)headers(?:\.authorization|\[['"]authorization['"]\])/.test(text)).map(([rel]) => rel);
}

t.test('one reader of the bearer credential for every surface (src/http/bearer.ts)', async (t) => {
  t.same(bearerParsers(files.map((f) => [relative(SRC, f), readFileSync(f, 'utf8')])), [], 'src/ files reading Authorization themselves');
  // A check of the check: a surface with its own parser is caught, by its regex or by the header.
  t.same(bearerParsers([[join('mcp', 'server.ts'), 'const m = /^Bearer\\s+(\\S+)$/i.exec(h);'], [join('console', 'x.ts'), 'const h = req.headers.authorization;'], [join('http', 'bearer.ts'), 'req.headers.authorization /^Bearer/'], [join('logging', 'x.ts'), "redact: ['req.headers.authorization']"]]), [join('mcp', 'server.ts'), join('console', 'x.ts')], 'a parser is caught; the reader itself and a redaction path are not');
});

/*
 * The request lifecycle (src/service/lifecycle/, docs/architecture.md "The request lifecycle"): REST,
 * MCP and the console authenticate, meter, map errors and clean up through it, each concern written
 * once. Each rule below is a function over sources, checked on src/ and on planted violations.
 */
const LIFECYCLE = join('service', 'lifecycle');
const sourcePairs = (): Array<[string, string]> => files.map((f) => [relative(SRC, f), readFileSync(f, 'utf8')]);

/** The lifecycle's parts: only src/service/lifecycle/ imports them (the surfaces go through it). */
const LIFECYCLE_PARTS = [join('accounts', 'charging.ts'), join('http', 'bearer.ts')];

/** `from -> to` imports of a lifecycle part from outside src/service/lifecycle/. */
export function lifecycleBypasses(importsByFile: Array<[string, string[]]>): string[] {
  return importsByFile.flatMap(([from, tos]) => (from.startsWith(LIFECYCLE + sep) ? [] : tos.filter((to) => LIFECYCLE_PARTS.includes(to)).map((to) => `${from} -> ${to}`)));
}

/** Surface files that meter by hand: count a window, take a slot, or consume or refund a call. */
export function handMetering(sourcesByPath: Array<[string, string]>): string[] {
  return sourcesByPath.filter(([rel, text]) => LAYERS[top(rel)] === SURFACES && /\blimiter\s*\.\s*(?:hit|acquire|release)\s*\(|\b(?:accounts|store)\s*\.\s*(?:consume|refund)\s*\(/.test(text)).map(([rel]) => rel);
}

/** src/ files, other than the one error handler (src/http/error-handler.ts), that set their own. */
export function ownErrorHandlers(sourcesByPath: Array<[string, string]>): string[] {
  return sourcesByPath.filter(([rel, text]) => rel !== join('http', 'error-handler.ts') && /\.set(?:Error|NotFound)Handler\s*\(/.test(text)).map(([rel]) => rel);
}

/** src/ files, other than the lifecycle's cleanup (cleanup.ts), listening to a response's 'close'. */
export function closeListeners(sourcesByPath: Array<[string, string]>): string[] {
  return sourcesByPath.filter(([rel, text]) => rel !== join(LIFECYCLE, 'cleanup.ts') && /\b(?:reply\.raw|res|response)\s*\.\s*(?:on|once|addListener|prependListener)\s*\(\s*['"]close['"]/.test(text)).map(([rel]) => rel);
}

/** Files of the surfaces and the service that decide a route's behaviour by comparing its URL. */
export function urlDecisions(sourcesByPath: Array<[string, string]>): string[] {
  const scoped = ['gateway', 'mcp', 'console', 'service'];
  return sourcesByPath.filter(([rel, text]) => scoped.includes(top(rel)) && /routeOptions\.url\s*[!=]==?\s*['"`]|['"`]\s*[!=]==?\s*req\.routeOptions\.url/.test(text)).map(([rel]) => rel);
}

t.test('the surfaces meter and authenticate through the lifecycle, not its parts', async (t) => {
  t.same(lifecycleBypasses([...edges]), [], 'imports of the charging rule or the bearer reader from outside src/service/lifecycle/');
  t.same(handMetering(sourcePairs()), [], 'surface files calling the limiter or the allowance themselves');
  // A check of the check: the console parsing its own bearer, a gateway settling credits itself,
  // MCP counting its own window or taking its own slot are caught; the lifecycle itself is not.
  t.same(
    lifecycleBypasses([
      [join('mcp', 'server.ts'), [join('http', 'bearer.ts'), join(LIFECYCLE, 'door.ts')]],
      [join('console', 'plugins', 'session.ts'), [join('http', 'bearer.ts')]],
      [join('gateway', 'plugins', 'request-state.ts'), [join('accounts', 'charging.ts')]],
      [join(LIFECYCLE, 'metering.ts'), [join('accounts', 'charging.ts')]],
    ]),
    [`${join('mcp', 'server.ts')} -> ${join('http', 'bearer.ts')}`, `${join('console', 'plugins', 'session.ts')} -> ${join('http', 'bearer.ts')}`, `${join('gateway', 'plugins', 'request-state.ts')} -> ${join('accounts', 'charging.ts')}`],
    'planted import bypasses are caught',
  );
  t.same(
    handMetering([
      [join('mcp', 'server.ts'), 'const w = await deps.limiter.hit(req.mcpKey.accountId, 0);'],
      [join('mcp', 'metering.ts'), 'const slot = await deps.limiter.acquire(accountId);'],
      [join('gateway', 'plugins', 'compute-routes.ts'), 'await o.accounts.consume(req.auth!.accountId);'],
      [join('console', 'routes', 'api.ts'), 'await store.refund(id);'],
      [join('gateway', 'app.ts'), 'await limiter.close().catch(() => undefined);'],
      [join(LIFECYCLE, 'metering.ts'), 'await this.o.limiter.acquire(accountId); await this.accounts.refund(id);'],
    ]),
    [join('mcp', 'server.ts'), join('mcp', 'metering.ts'), join('gateway', 'plugins', 'compute-routes.ts'), join('console', 'routes', 'api.ts')],
    'planted hand metering is caught; closing the limiter and the lifecycle itself are not',
  );
});

t.test('one error handler, one table: no surface sets its own (src/http/error-handler.ts)', async (t) => {
  t.same(ownErrorHandlers(sourcePairs()), [], 'src/ files calling setErrorHandler or setNotFoundHandler');
  t.same(
    ownErrorHandlers([
      [join('mcp', 'server.ts'), 'app.setErrorHandler((err, req, reply) => reply.status(400).send({}));'],
      [join('console', 'plugins', 'errors.ts'), 'app.setNotFoundHandler((req, reply) => page(reply));'],
      [join('console', 'plugins', 'flash.ts'), 'registerErrorHandling(app, { notFound, send: sendPage });'],
      [join('http', 'error-handler.ts'), 'app.setErrorHandler((err, req, reply) => send(req, reply, toServiceError(err)));'],
    ]),
    [join('mcp', 'server.ts'), join('console', 'plugins', 'errors.ts')],
    'a surface with its own handler is caught; a surface choosing its envelope is not',
  );
});

t.test("cleanup on close in one place: only the lifecycle listens to a response's close", async (t) => {
  t.same(closeListeners(sourcePairs()), [], "src/ files with their own listener on a response's 'close' (use onClose from src/service/lifecycle/cleanup.ts)");
  t.same(
    closeListeners([
      [join('gateway', 'plugins', 'compute-routes.ts'), "reply.raw.once('close', () => targets.release());"],
      [join('mcp', 'server.ts'), 'reply.raw.on("close", () => { void transport.close(); });'],
      [join('http', 'body-budget.ts'), "res.once( 'close', give);"],
      [join('http', 'lingering-close.ts'), "socket.once('close', () => clearTimeout(t));"],
      [join('gateway', 'multipart-reader.ts'), "req.once('close', onClose);"],
      [join(LIFECYCLE, 'cleanup.ts'), "reply.raw.once('close', () => releases.runAll());"],
    ]),
    [join('gateway', 'plugins', 'compute-routes.ts'), join('mcp', 'server.ts'), join('http', 'body-budget.ts')],
    'planted response listeners are caught; sockets, request streams and the lifecycle are not',
  );
});

t.test('route behaviour comes from route config, not from comparing the URL', async (t) => {
  t.same(urlDecisions(sourcePairs()), [], 'gateway, mcp, console or service files comparing routeOptions.url with a string');
  t.same(
    urlDecisions([
      [join('gateway', 'plugins', 'compute-routes.ts'), "if (req.routeOptions.url !== '/compare') return;"],
      [join(LIFECYCLE, 'door.ts'), 'if ("/health" === req.routeOptions.url) return;'],
      [join('gateway', 'plugins', 'request-state.ts'), 'if (req.routeOptions.config.whileDraining !== true) throw e;'],
      [join('gateway', 'plugins', 'probes.ts'), "const route = req.routeOptions.url ?? 'unmatched';"],
      [join('http', 'route-guard.ts'), "const corsWildcard = req.routeOptions.url === '*';"],
    ]),
    [join('gateway', 'plugins', 'compute-routes.ts'), join(LIFECYCLE, 'door.ts')],
    'URL comparisons are caught; a config flag, a metrics label and the route guard are not',
  );
});
