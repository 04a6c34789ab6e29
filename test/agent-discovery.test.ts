/**
 * What an agent discovers on the console by itself: /llms-full.txt (every docs page in one text, with
 * this deployment's addresses) and the Agent Skills discovery index at /.well-known/skills (v0.1.0)
 * and /.well-known/agent-skills (v0.2.0), whose every entry resolves to its SKILL.md.
 */
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';
import { buildConsole } from '../src/console/main.js';
import { REPO_ROOT } from './helpers/shared.js';

const dir = mkdtempSync(join(tmpdir(), 'fc-agent-discovery-'));
const config = loadConfig({
  FACECOMPUTE_DATA_DIR: dir,
  FACECOMPUTE_PUBLIC_BASE_URL: 'https://api.facecompute.example',
  FACECOMPUTE_PUBLIC_MCP_URL: 'https://mcp.facecompute.example/mcp',
});
const HOST = { host: 'console.example:8082' };
const CONSOLE = 'http://console.example:8082';
const docsDir = join(REPO_ROOT, 'docs');
/** Each docs page's title and headings, read here without the code under test. */
const pages = readdirSync(docsDir)
  .filter((n) => n.endsWith('.md'))
  .map((name) => {
    const text = readFileSync(join(docsDir, name), 'utf8').replace(/```[\s\S]*?```/g, '');
    const headings = [...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim());
    return { name, title: headings[0]!, headings };
  });

async function consoleApp(t: Test) {
  const store = await createAccountsStore(config);
  const app = await buildConsole({ config, store });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });
  return app;
}

t.test('/llms-full.txt holds every docs page, with this deployment\'s addresses', async (t) => {
  const app = await consoleApp(t);
  const res = await app.inject({ url: '/llms-full.txt', headers: HOST });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain; charset=utf-8/);
  const text = res.body;
  t.ok(pages.length >= 15, `${pages.length} pages`);
  for (const p of pages) {
    t.ok(text.includes(`<!-- ${p.title.replace(/`/g, '')}: `), `${p.name} is introduced by its title`);
    for (const h of p.headings) t.ok(text.includes(h), `${p.name}: heading "${h}"`);
  }
  t.match(text, `${CONSOLE}/docs/errors.md`);
  t.match(text, 'https://api.facecompute.example');
  t.match(text, 'https://mcp.facecompute.example/mcp');
  // The local defaults the pages use are this deployment's addresses here.
  for (const local of ['localhost:8080', '127.0.0.1:8081', 'localhost:8082']) t.notOk(text.includes(local), `no ${local}`);
  t.match(text, 'GW=https://api.facecompute.example', "the quickstart's gateway is the deployment's");
  // Every link is absolute (or within a page): a relative one means nothing outside the docs folder.
  const relative = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((h) => !/^(https?:|mailto:|#)/.test(h));
  t.same(relative, [], 'no relative links');
  t.notMatch(text, /\]\(\.\.\//, 'no link into the repository');
  const llms = await app.inject({ url: '/llms.txt', headers: HOST });
  t.match(llms.body, `${CONSOLE}/llms-full.txt`, '/llms.txt links it');
});

interface IndexV1 { skills: Array<{ name: string; description: string; files: string[]; url: string }> }
interface IndexV2 { $schema: string; skills: Array<{ name: string; type: string; description: string; url: string; digest: string }> }

const front = (doc: string) => {
  const m = /^---\nname: (.*)\ndescription: (.*)\n---\n/.exec(doc);
  return m ? { name: m[1]!, description: m[2]! } : null;
};

t.test('/.well-known/skills: an index whose every entry resolves to its SKILL.md', async (t) => {
  const app = await consoleApp(t);
  const skill = (await app.inject({ url: '/skill.md', headers: HOST })).body;
  for (const url of ['/.well-known/skills', '/.well-known/skills/', '/.well-known/skills/index.json']) {
    const res = await app.inject({ url, headers: HOST });
    t.equal(res.statusCode, 200, url);
    t.match(res.headers['content-type'], /^application\/json/);
    const index = res.json() as IndexV1;
    t.ok(index.skills.length >= 1, `${url}: ${index.skills.length} skill(s)`);
    for (const s of index.skills) {
      t.match(s.name, /^[a-z0-9](?:[a-z0-9]|-(?!-)){0,62}[a-z0-9]$/, 'the Agent Skills name rules');
      t.ok(s.description.length > 20 && s.description.length <= 1024, 'a description of at most 1024 characters');
      t.same(s.files, ['SKILL.md']);
      t.equal(s.url, `${CONSOLE}/.well-known/skills/${s.name}/SKILL.md`);
      for (const path of [new URL(s.url).pathname, `/.well-known/skills/${s.name}`]) {
        const doc = await app.inject({ url: path, headers: HOST });
        t.equal(doc.statusCode, 200, path);
        t.match(doc.headers['content-type'], /^text\/markdown/);
        t.same(front(doc.body), { name: s.name, description: s.description }, `${path}: its frontmatter is the entry`);
      }
    }
    t.ok(index.skills.some((s) => s.name === 'facecompute'), 'the facecompute skill');
  }
  const doc = await app.inject({ url: '/.well-known/skills/facecompute', headers: HOST });
  t.equal(doc.body, skill, '/skill.md stays, the same document');
});

t.test('/.well-known/agent-skills/index.json (v0.2.0): type, url and the digest of the bytes served', async (t) => {
  const app = await consoleApp(t);
  const res = await app.inject({ url: '/.well-known/agent-skills/index.json', headers: HOST });
  t.equal(res.statusCode, 200);
  const index = res.json() as IndexV2;
  t.equal(index.$schema, 'https://schemas.agentskills.io/discovery/0.2.0/schema.json');
  for (const s of index.skills) {
    t.equal(s.type, 'skill-md');
    const doc = await app.inject({ url: new URL(s.url).pathname, headers: HOST });
    t.equal(doc.statusCode, 200, s.url);
    t.equal(s.digest, `sha256:${createHash('sha256').update(doc.rawPayload).digest('hex')}`, 'the digest is of the exact bytes');
    t.same(front(doc.body), { name: s.name, description: s.description });
  }
});

t.test('an unknown skill is 404 in the console\'s error shape', async (t) => {
  const app = await consoleApp(t);
  for (const url of ['/.well-known/skills/nope', '/.well-known/skills/nope/SKILL.md', '/.well-known/agent-skills/nope/SKILL.md', '/.well-known/skills/..%2Fskill.md']) {
    const res = await app.inject({ url, headers: HOST });
    t.equal(res.statusCode, 404, url);
    t.equal((res.json() as { error: string }).error, 'not_found', url);
    t.type((res.json() as { detail: string }).detail, 'string');
  }
});
