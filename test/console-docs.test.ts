import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';
import { REPO_ROOT } from './helpers/shared.js';

const dir = mkdtempSync(join(tmpdir(), 'fc-docs-'));
const config = loadConfig({
  FACECOMPUTE_DATA_DIR: dir,
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
});

t.test('/llms.txt and /skill.md tell an agent how to start, with concrete URLs', async (t) => {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  const llms = await app.inject({ url: '/llms.txt', headers: { host: 'console.example:8082' } });
  t.equal(llms.statusCode, 200);
  t.match(llms.headers['content-type'], /^text\/plain/);
  t.match(llms.body, /^# facecompute\n\n> /);
  t.match(llms.body, 'http://console.example:8082/api/signup/anonymous');
  t.match(llms.body, 'https://api.facecompute.example');
  t.match(llms.body, 'http://console.example:8082/skill.md');

  const skill = await app.inject({ url: '/skill.md', headers: { host: 'console.example:8082' } });
  t.equal(skill.statusCode, 200);
  t.match(skill.headers['content-type'], /^text\/markdown/);
  const body = skill.body;
  t.match(body, /^---\nname: facecompute\ndescription: /);
  t.match(body, 'curl -s -X POST http://console.example:8082/api/signup/anonymous');
  t.match(body, 'curl -s -X POST http://console.example:8082/api/keys -H "Authorization: Bearer $SESSION_TOKEN"');
  t.match(body, 'curl -s https://api.facecompute.example/capabilities');
  for (const route of ['verify', 'represent', 'compare']) t.match(body, `curl -s -X POST https://api.facecompute.example/${route} -H "Authorization: Bearer $API_KEY"`);
  for (const code of ['missing_api_key', 'insufficient_credits', 'rate_limited', 'queue_full']) t.match(body, new RegExp(`\\| \`${code}\`[^\\n]*\\| \\d{3} \\| \\S`), `says what to do on ${code}`);
  t.match(body, 'https://mcp.facecompute.example/mcp');
  t.match(body, 'Retry-After');
  // Binary targets and many-to-many (issue 17).
  t.match(body, "-F 'targets=@targets.f32;type=application/octet-stream'");
  t.match(body, /`source` may be a list/);
  t.match(llms.body, /`targets` file part of raw little-endian float32/);
  // After no_face_detected, enforce_detection=false makes /verify compare whole images: never advised.
  t.notMatch(body, /no_face_detected[^\n]*\| No face found[^\n]*(Use|or) `enforce_detection: false`\. \|/);
  t.match(body, /Do not retry \/verify with `enforce_detection: false`/);
  t.match(body, 'http://console.example:8082/docs/errors.md');
  t.match(llms.body, 'http://console.example:8082/docs/api');
});

t.test('/llms.txt and /skill.md give the configured free-call numbers', async (t) => {
  const numbers = loadConfig({ FACECOMPUTE_DATA_DIR: dir, FACECOMPUTE_FREE_CALLS_ANONYMOUS: '7', FACECOMPUTE_FREE_CALLS_ACCOUNT: '33', FACECOMPUTE_FREE_CALLS_CARD: '77' });
  const store = await createAccountsStore(numbers);
  const app = await buildConsole({ config: numbers, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  const llms = (await app.inject({ url: '/llms.txt' })).body;
  t.match(llms, 'get 7 free calls.');
  t.match(llms, '(7 free calls)');
  const skill = (await app.inject({ url: '/skill.md' })).body;
  t.match(skill, '"free_calls":{"total":7,"used":0,"remaining":7}');
  t.match(skill, 'Anonymous: 7. With a verified email and a password: 33 in total');
  t.match(skill, 'With a saved card: 77 in total');
  t.match(skill, '(email: 33, card: 77)');
  for (const doc of [llms, skill]) t.notMatch(doc, /\b(10|50|100) (free calls|in total)|Anonymous: 10\b|email: 50|card: 100|"total":10\b/, 'no default number left');
});

t.test('/openapi.json serves the installed document with servers set to this deployment\'s gateway, or not_found when absent', async (t) => {
  const file = join(dir, 'openapi.json');
  const doc = { openapi: '3.1.0', info: { title: 'facecompute', version: 'v1' }, servers: [{ url: 'http://127.0.0.1:8080' }], paths: { '/verify': {} } };
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store, openapiPath: file });
  const missing = await buildConsole({ config, store, openapiPath: join(dir, 'nope.json') });
  const repo = await buildConsole({ config, store });
  // Without FACECOMPUTE_PUBLIC_BASE_URL the server is http://HOST:GATEWAY_PORT.
  const portConfig = loadConfig({ FACECOMPUTE_DATA_DIR: dir, FACECOMPUTE_HOST: '127.0.0.1', FACECOMPUTE_GATEWAY_PORT: '20417' });
  const byPort = await buildConsole({ config: portConfig, store, openapiPath: file });
  t.teardown(async () => { await app.close(); await missing.close(); await repo.close(); await byPort.close(); await store.close(); });
  const res = await app.inject({ url: '/openapi.json' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.same(res.json(), { ...doc, servers: [{ url: 'https://api.facecompute.example', description: "this deployment's REST gateway" }] }, 'servers from FACECOMPUTE_PUBLIC_BASE_URL, the rest as installed');
  t.same((await byPort.inject({ url: '/openapi.json' })).json().servers.map((s: { url: string }) => s.url), ['http://127.0.0.1:20417'], 'servers from HOST and GATEWAY_PORT');
  const no = await missing.inject({ url: '/openapi.json' });
  t.equal(no.statusCode, 404);
  t.same(no.json().error, 'not_found');
  t.notMatch(no.body, /nope\.json|\/tmp/, 'no file path in the detail');
  // The gateway's author commits openapi.json at the repository root; by default that is what is served.
  const repoFile = resolve(REPO_ROOT, 'openapi.json');
  const r = await repo.inject({ url: '/openapi.json' });
  if (existsSync(repoFile)) {
    const { servers: _s, ...served } = r.json();
    const { servers: _c, ...committed } = JSON.parse(readFileSync(repoFile, 'utf8'));
    t.same(served, committed);
  } else t.equal(r.statusCode, 404);
});

t.test('/docs/ renders every docs page, /docs/api the reference, under a CSP that allows only what each needs', async (t) => {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  t.equal((await app.inject({ url: '/docs' })).headers['location'], '/docs/', '/docs redirects to the index');
  const index = await app.inject({ url: '/docs/' });
  t.equal(index.statusCode, 200);
  t.match(index.headers['content-type'], /^text\/html/);
  t.match(index.body, /<article class="doc"><h1 id="facecompute-documentation">/, 'docs/README.md rendered as HTML, not raw Markdown');
  // Every page, and every link between pages, answers.
  const { readdirSync } = await import('node:fs');
  const names = readdirSync(resolve(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md');
  t.ok(names.length >= 18, `${names.length} pages`);
  const linked = new Set<string>();
  for (const name of names) {
    const res = await app.inject({ url: `/docs/${name}` });
    t.equal(res.statusCode, 200, `/docs/${name}`);
    t.notMatch(res.body.replace(/<pre>[\s\S]*?<\/pre>/g, ''), /^#+ /m, `${name}: no Markdown heading left unrendered (outside code)`);
    for (const m of res.body.matchAll(/href="([a-z0-9-]+\.(?:md|svg|png))(?:#[^"]*)?"/g)) linked.add(m[1]!);
    for (const m of res.body.matchAll(/src="([a-z0-9/-]+\.(?:svg|png))"/g)) linked.add(m[1]!);
    const csp = String(res.headers['content-security-policy']);
    t.notMatch(csp, /connect-src|unsafe-inline/, `${name}: the pages' CSP, nothing added`);
  }
  for (const target of linked) t.equal((await app.inject({ url: `/docs/${target}` })).statusCode, 200, `linked ${target} is served`);
  t.ok(linked.has('roc-lfw-devtrain.svg'), 'the ROC chart is served beside the pages');
  t.equal((await app.inject({ url: '/docs/no-such-page.md' })).statusCode, 404);
  t.equal((await app.inject({ url: '/docs/../package.json' })).statusCode, 404, 'nothing outside docs/');

  const api = await app.inject({ url: '/docs/api' });
  t.equal(api.statusCode, 200);
  const csp = String(api.headers['content-security-policy']);
  t.match(csp, "connect-src 'self'", 'the reference may fetch /openapi.json from the console');
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:/, 'and nothing else: no inline, no eval, no other origin');
  const nonce = /script-src 'nonce-([^']+)'/.exec(csp)![1]!;
  t.match(api.body, `<script nonce="${nonce}" src="/docs/api/assets/swagger-ui-bundle.js">`);
  t.match(api.body, `<link rel="stylesheet" nonce="${nonce}" href="/docs/api/assets/swagger-ui.css">`);
  t.notMatch(api.body, /https?:\/\/(?!127\.|localhost)[^"']*\.(js|css)/, 'no asset from a CDN');
  const js = await app.inject({ url: '/docs/api/assets/swagger-ui-bundle.js' });
  t.equal(js.statusCode, 200);
  t.match(js.headers['content-type'], /^text\/javascript/);
  t.ok(js.body.length > 500_000, 'Swagger UI, served from node_modules');
  t.match((await app.inject({ url: '/docs/api/assets/swagger-ui.css' })).headers['content-type'], /^text\/css/);
  // The other pages keep the strict CSP.
  t.notMatch(String((await app.inject({ url: '/signin' })).headers['content-security-policy']), /connect-src/);
});

t.test('the SDK pages: the client libraries\' READMEs, rendered at /docs/sdk/<language>, linked both ways', async (t) => {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  for (const [language, title] of [['python', 'facecompute (Python client)'], ['js', '@facecompute/client']] as const) {
    const page = await app.inject({ url: `/docs/sdk/${language}` });
    t.equal(page.statusCode, 200, `/docs/sdk/${language}`);
    t.match(page.body, `<h1 id=`, 'rendered');
    t.match(page.body, title.replace(/[()]/g, (c) => c), `the ${language} client's README`);
  }
  const python = (await app.inject({ url: '/docs/sdk/python' })).body;
  t.match(python, 'href="/docs/api.md#many-vectors-binary-targets"', 'a link into docs/ goes to the rendered page');
  const index = (await app.inject({ url: '/docs/' })).body;
  t.match(index, 'href="/docs/sdk/python"', 'docs/README.md links the Python SDK page');
  t.match(index, 'href="/docs/sdk/js"', 'and the TypeScript one');
  t.equal((await app.inject({ url: '/docs/sdk/ruby' })).statusCode, 404, 'no other');
});

t.test('the API page links openapi.json where the console serves it', async (t) => {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  const api = (await app.inject({ url: '/docs/api.md' })).body;
  t.match(api, 'href="/openapi.json"', 'the download link');
  t.equal((await app.inject({ url: '/openapi.json' })).statusCode, 200, 'which the console serves');
});

t.test('every link of every rendered docs and SDK page resolves in the console', async (t) => {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => { await app.close(); await store.close(); });
  const { readdirSync } = await import('node:fs');
  const pages = ['/docs/', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md').map((f) => `/docs/${f}`), '/docs/sdk/python', '/docs/sdk/js'];
  const dead: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const body = (await app.inject({ url: page })).body;
    for (const m of body.matchAll(/<a href="([^"#]*)(?:#[^"]*)?"/g)) {
      const href = m[1]!.replace(/&amp;/g, '&');
      if (/^[a-z]+:/i.test(href) || href === '') continue;
      const url = new URL(href, `http://console.example${page}`).pathname;
      checked++;
      const status = (await app.inject({ url })).statusCode;
      if (status !== 200 && status !== 301 && status !== 302) dead.push(`${page}: ${href} -> ${status}`);
    }
  }
  t.ok(checked > 50, `${checked} links checked`);
  t.same(dead, [], 'no dead link');
});
