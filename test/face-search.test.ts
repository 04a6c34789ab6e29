/**
 * docs/face-search.md's recipe (examples/face-search/face-search.ts), end to end: PostgreSQL with the
 * pgvector extension, a live `facecompute serve`, and every single-person photo of DeepFace's test
 * images (../shared/data/deepface, 62 photos of 13 people, identities.csv).
 *
 * PostgreSQL + pgvector is PGlite (@electric-sql/pglite, PostgreSQL compiled to WebAssembly) with its
 * pgvector extension (@electric-sql/pglite-pgvector), both npm packages installed by `npm ci` with the
 * rest; the recipe talks to it through node-postgres (`pg`), as it talks to a server, via PGlite's
 * node-postgres adapter. Debian's mirror here has no pgvector package.
 *
 * The gallery is every photo; each photo is then searched for with its own row left out, and the
 * recipe must name the right person for every one at the threshold it recommends (the deployment's
 * calibrated FAR <= 1e-3 threshold for Facenet with yunet, from /capabilities). pgvector's cosine
 * distance must equal the service's for each match (both are 1 - cos; pgvector stores float32), and
 * the HNSW index must answer the top-N query.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { DEFAULT_RECIPE, createSchema, enroll, identify, recommendedThreshold, searchEmbedding, tableFor, type Service } from '../examples/face-search/face-search.js';
import { DEEPFACE_DIR, REPO_ROOT } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';
import { userEnv } from './helpers/serve-proc.js';

const photos = readFileSync(join(DEEPFACE_DIR, 'identities.csv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => line.split(','))
  .filter(([, identity]) => !identity!.includes('+')) // couple.jpg and selfie-many-people.jpg show several people
  .map(([name, subject]) => ({ name: name!, subject: subject!, bytes: new Uint8Array(readFileSync(join(DEEPFACE_DIR, name!))) }));

t.test('face search with pgvector: the right person for every photo, at the recommended threshold', { timeout: 600_000 }, async (t) => {
  t.equal(photos.length, 62, "DeepFace's single-person test photos");
  t.equal(new Set(photos.map((p) => p.subject)).size, 13, 'of 13 people');

  let at = Date.now();
  const lap = (what: string) => {
    t.comment(`${what}: ${((Date.now() - at) / 1000).toFixed(1)} s`);
    at = Date.now();
  };
  const pglite = await PGlite.create({ extensions: { vector } });
  const db = new pg.Pool(createPgConfig(pglite));
  t.teardown(async () => {
    await db.end();
    await pglite.close();
  });

  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env = userEnv();
  Object.assign(env, modelServerEnv(modelServer), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-face-search-')),
    FACECOMPUTE_ALLOWED_MODELS: 'Facenet',
    FACECOMPUTE_ALLOWED_DETECTORS: 'yunet',
    // The recipe's detector; serve refuses to start when its default detector is not one it can serve.
    FACECOMPUTE_DEFAULT_DETECTOR: 'yunet',
    // 62 photos enrolled and 62 searched (represent + compare each): more than an anonymous account's
    // allowance and one minute's rate limit, which are policy, not what is tested here.
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000',
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000',
  });
  const logs: string[] = [];
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], { env, cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  t.teardown(async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
  });
  lap('PGlite with pgvector started');
  const url = `http://127.0.0.1:${gateway}`;
  const deadline = Date.now() + 240_000;
  while (Date.now() < deadline && proc.exitCode === null) {
    if ((await fetch(`${url}/readiness`).catch(() => null))?.status === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (proc.exitCode !== null) {
    t.fail(`serve exited (${proc.exitCode}) before it was ready:\n${logs.join('').slice(-3000)}`);
    return;
  }
  const caps = (await (await fetch(`${url}/capabilities`)).json()) as { allowed_models: string[]; embedding_dims: Record<string, number> };
  if (!t.same(caps.allowed_models, ['Facenet'], 'serve is ready with Facenet (bootstrap installs it)')) {
    t.comment(logs.join('').slice(-3000));
    return;
  }

  lap('serve ready');
  const con = `http://127.0.0.1:${consolePort}`;
  const { session_token } = (await (await fetch(`${con}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const { key } = (await (await fetch(`${con}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session_token}`, 'content-type': 'application/json' }, body: '{"name":"face-search"}' })).json()) as { key: string };
  const svc: Service = { url, key };

  const recipe = DEFAULT_RECIPE;
  const threshold = await recommendedThreshold(svc, recipe);
  const calibration = JSON.parse(readFileSync(resolve(REPO_ROOT, 'models/calibration/lfw-devtrain.json'), 'utf8'));
  t.equal(threshold, calibration.models.Facenet.yunet.cosine.far_1e_3.threshold, `the recommended threshold is the calibrated FAR <= 1e-3 point (${threshold})`);

  await createSchema(db, recipe.model, caps.embedding_dims[recipe.model]!);
  await enroll(db, svc, recipe, photos);
  const { rows } = await db.query<{ n: string; dims: number }>(`SELECT count(*) AS n, max(vector_dims(embedding)) AS dims FROM ${tableFor(recipe.model)}`);
  t.same(rows[0], { n: '62', dims: 128 }, 'one 128-d row per photo');
  lap('62 photos enrolled');

  // The top-N query is answered by the HNSW index (with sequential scans off: 62 rows would not need it).
  await db.query('SET enable_seqscan = off');
  const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT subject FROM ${tableFor(recipe.model)} ORDER BY embedding <=> $1 LIMIT 10`, [`[${new Array(128).fill(0.1).join(',')}]`])).rows.map((r) => r['QUERY PLAN']).join('\n');
  t.match(plan, /Index Scan using faces_facenet_embedding_hnsw/, 'HNSW index scan');

  const wrong: string[] = [];
  let maxDelta = 0;
  for (const photo of photos) {
    const match = await identify(db, svc, recipe, photo, { threshold, excludeSource: photo.name });
    if (match?.subject !== photo.subject) wrong.push(`${photo.name} (${photo.subject}): ${match ? `${match.subject} via ${match.source} at ${match.distance}` : 'no match'}`);
    if (match) maxDelta = Math.max(maxDelta, Math.abs(match.distance - match.pgvector_distance));
  }
  lap('62 photos searched');
  t.same(wrong, [], 'every photo finds its own person among the others');
  t.ok(maxDelta < 1e-5, `pgvector's cosine distance is the service's (largest difference ${maxDelta.toExponential(2)})`);

  // And the decision is the threshold's: a stranger's photo matches nobody.
  const probe = await searchEmbedding(db, svc, recipe, new Array(128).fill(0).map((_, i) => Math.sin(i)), { threshold });
  t.ok(probe.length === 10 && probe.every((m) => !m.verified), 'an unrelated vector verifies against no one');
});
