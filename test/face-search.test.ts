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
import { mkdtempSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { DEFAULT_RECIPE, calibratedPoints, createSchema, enroll, falseMatchRate, identify, recommendedThreshold, requiredFar, searchEmbedding, searchSettings, tableFor, thresholdForGallery, type Service } from '../examples/face-search/face-search.js';
import { DEEPFACE_DIR, REPO_ROOT, SHARED_DATA_DIR } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';
import { userEnv } from './helpers/serve-proc.js';
import { shellBlocks } from './helpers/doc-blocks.js';

const photos = readFileSync(join(DEEPFACE_DIR, 'identities.csv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => line.split(','))
  .filter(([, identity]) => !identity!.includes('+')) // couple.jpg and selfie-many-people.jpg show several people
  .map(([name, subject]) => ({ name: name!, subject: subject!, bytes: new Uint8Array(readFileSync(join(DEEPFACE_DIR, name!))) }));

/**
 * Strangers: real faces of people outside the gallery. Every 30th person of LFW DevTrain, first photo,
 * leaving out the people DeepFace's test images show (Angelina Jolie, Jennifer Aniston; Bill Gates to
 * be safe), so no stranger is enrolled.
 */
const LFW_DIR = join(SHARED_DATA_DIR, 'lfw-devtrain');
const NOT_STRANGERS = new Set(['Angelina_Jolie', 'Jennifer_Aniston', 'Bill_Gates']);
const strangers = readdirSync(LFW_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort()
  .filter((name, i) => i % 30 === 0 && !NOT_STRANGERS.has(name))
  .map((name) => {
    const file = readdirSync(join(LFW_DIR, name)).filter((f) => f.endsWith('.jpg')).sort()[0]!;
    return { name: `${name}/${file}`, bytes: new Uint8Array(readFileSync(join(LFW_DIR, name, file))) };
  });

/** The tolerated share of strangers' searches that return a match, for the gallery-size threshold. */
const FALSE_MATCH = 0.1;

/** The smallest k with P(X <= k) >= q for X ~ Binomial(n, p). */
function binomialQuantile(n: number, p: number, q: number): number {
  let cdf = 0;
  let pk = (1 - p) ** n;
  for (let k = 0; k <= n; k++) {
    cdf += pk;
    if (cdf >= q) return k;
    pk *= ((n - k) / (k + 1)) * (p / (1 - p));
  }
  return n;
}

t.test("the gallery-size arithmetic, and docs/face-search.md's table of it", async (t) => {
  t.ok(Math.abs(falseMatchRate(1000, 1e-3) - 0.6323) < 1e-4, 'FAR 1e-3 over 1,000 rows: 63% of strangers match someone');
  for (const rows of [1, 10, 62, 1000, 100_000]) {
    for (const a of [0.01, 0.1]) t.ok(Math.abs(falseMatchRate(rows, requiredFar(rows, a)) - a) < 1e-9, `requiredFar inverts falseMatchRate (${rows} rows, ${a})`);
  }
  const page = readFileSync(resolve(REPO_ROOT, 'docs/face-search.md'), 'utf8');
  const rows = [...page.matchAll(/^\| ([\d,]+) \| ([\d.]+(?:e-\d+)?) \| ([\d.]+(?:e-\d+)?) \| ([\d.]+)% \|/gm)];
  t.ok(rows.length >= 4, `the page's gallery table has ${rows.length} rows`);
  for (const [, n, at1, at10, fm] of rows as unknown as Array<[string, string, string, string, string]>) {
    const g = Number(n.replace(/,/g, ''));
    t.equal(Number(at1), Number(requiredFar(g, 0.01).toPrecision(3)), `${n} rows, 1% false matches: FAR ${at1}`);
    t.equal(Number(at10), Number(requiredFar(g, 0.1).toPrecision(3)), `${n} rows, 10% false matches: FAR ${at10}`);
    t.equal(Number(fm), Number((falseMatchRate(g, 1e-3) * 100).toFixed(1)), `${n} rows at FAR 1e-3: ${fm}% of strangers match`);
  }
  const calibration = JSON.parse(readFileSync(resolve(REPO_ROOT, 'models/calibration/lfw-devtrain.json'), 'utf8'));
  const points = (model: string, det: string) => Object.entries(calibration.models[model][det].cosine).filter(([, p]) => typeof p === 'object' && p && 'threshold' in (p as object)).map(([name, p]) => ({ name, ...(p as { threshold: number; far: number; tar: number }) }));
  const yunet = thresholdForGallery(points('Facenet', 'yunet'), 62, FALSE_MATCH);
  t.same(yunet.threshold, calibration.models.Facenet.yunet.cosine.far_1e_3.threshold, 'Facenet + yunet, 62 rows, 10%: the FAR <= 1e-3 point');
  t.equal(thresholdForGallery(points('Facenet', 'yunet'), 1000, 0.01).threshold, null, 'a gallery of 1,000 at 1%: below what LFW DevTrain can vouch for');
  for (const det of ['mtcnn', 'fastmtcnn']) t.equal(thresholdForGallery(points('Facenet', det), 62, FALSE_MATCH).threshold, null, `Facenet + ${det}: the strict point's TAR is unusable, so none`);
});

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
  const threshold = await recommendedThreshold(svc, recipe, photos.length, FALSE_MATCH);
  const calibration = JSON.parse(readFileSync(resolve(REPO_ROOT, 'models/calibration/lfw-devtrain.json'), 'utf8'));
  t.equal(threshold, calibration.models.Facenet.yunet.cosine.far_1e_3.threshold, `62 rows, at most 10% false matches: the calibrated FAR <= 1e-3 point (${threshold})`);
  t.equal((await calibratedPoints(svc, recipe)).length, 4, "the deployment's four calibrated points");

  const table = tableFor(recipe);
  t.equal(table, 'faces_facenet_yunet_base_a1_e0', 'one table per comparable configuration');
  await createSchema(db, recipe, caps.embedding_dims[recipe.model]!);
  await enroll(db, svc, recipe, photos);
  const { rows } = await db.query<{ n: string; dims: number }>(`SELECT count(*) AS n, max(vector_dims(embedding)) AS dims FROM ${table}`);
  t.same(rows[0], { n: '62', dims: 128 }, 'one 128-d row per photo');
  await t.rejects(db.query(`INSERT INTO ${table} (subject, source, model, detector, normalization, align, expand_percentage, facial_area, embedding) SELECT subject, source, model, detector, normalization, align, 10, facial_area, embedding FROM ${table} LIMIT 1`), /check constraint/, 'a row of another configuration is refused');
  lap('62 photos enrolled');

  // The top-N query is answered by the HNSW index (with sequential scans off: 62 rows would not need it).
  await db.query('SET enable_seqscan = off');
  const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT subject FROM ${table} ORDER BY embedding <=> $1 LIMIT 10`, [`[${new Array(128).fill(0.1).join(',')}]`])).rows.map((r) => r['QUERY PLAN']).join('\n');
  t.match(plan, new RegExp(`Index Scan using ${table}_embedding_hnsw`), 'HNSW index scan');

  // A filter applied after the scan: with a small hnsw.ef_search and no iterative scan, fewer rows than
  // LIMIT come back; with the recipe's iterative scan, all of them.
  const bySubject = new Map<string, number>();
  for (const p of photos) bySubject.set(p.subject, (bySubject.get(p.subject) ?? 0) + 1);
  const [subject, count] = [...bySubject].sort((a, b) => b[1] - a[1])[0]!;
  const probeRow = (await db.query<{ e: string }>(`SELECT embedding::text AS e FROM ${table} WHERE subject <> $1 LIMIT 1`, [subject])).rows[0]!.e;
  const filtered = async (settings: Array<[string, string]>) => {
    await db.query('BEGIN');
    for (const [k, v] of settings) await db.query('SELECT set_config($1, $2, true)', [k, v]);
    const r = await db.query(`SELECT source FROM ${table} WHERE subject = $2 ORDER BY embedding <=> $1 LIMIT $3`, [probeRow, subject, count]);
    await db.query('COMMIT');
    return r.rows.length;
  };
  const without = await filtered([['hnsw.ef_search', '1'], ['hnsw.iterative_scan', 'off']]);
  const withScan = await filtered([['hnsw.ef_search', '1'], ...searchSettings(count).filter(([k]) => k === 'hnsw.iterative_scan')]);
  t.ok(without < count, `a post-scan filter without iterative scan: ${without} of ${count} rows`);
  t.equal(withScan, count, `with hnsw.iterative_scan = strict_order: all ${count}`);
  await db.query('SET enable_seqscan = on');

  const wrong: string[] = [];
  let maxDelta = 0;
  for (const photo of photos) {
    const match = await identify(db, svc, recipe, photo, { threshold, excludeSource: photo.name });
    if (match?.subject !== photo.subject) wrong.push(`${photo.name} (${photo.subject}): ${match ? `${match.subject} via ${match.source} at ${match.distance}` : 'no match'}`);
    if (match) maxDelta = Math.max(maxDelta, Math.abs(match.distance - match.pgvector_distance));
  }
  lap('62 photos searched');
  t.same(wrong, [], 'every photo finds its own person among the others');
  t.ok(maxDelta < 1e-5, `pgvector's cosine distance is the service's, within 1e-5 (largest difference ${maxDelta.toExponential(2)})`);

  // Open set: real faces of people who are not enrolled. At most FALSE_MATCH of them may match someone;
  // the bound is the binomial's 99.9% quantile, so a looser threshold (FAR <= 1e-2 gives
  // 1 - 0.99^62 = 46% false matches) fails here.
  t.ok(strangers.length >= 60, `${strangers.length} strangers from LFW`);
  const falseMatches: string[] = [];
  const noFace: string[] = [];
  for (const s of strangers) {
    // yunet alone (no fallback detector here) finds no face in a few LFW photos: those are not searches.
    const match = await identify(db, svc, recipe, s, { threshold }).catch((err: Error) => {
      if (!/422 no_face_detected/.test(err.message)) throw err;
      noFace.push(s.name);
      return null;
    });
    if (match) falseMatches.push(`${s.name} -> ${match.subject} (${match.source}) at ${match.distance}`);
  }
  const searched = strangers.length - noFace.length;
  lap(`${strangers.length} strangers searched`);
  t.ok(searched >= 60, `${searched} strangers searched (no face found by yunet: ${noFace.join(', ') || 'none'})`);
  const bound = binomialQuantile(searched, FALSE_MATCH, 0.999);
  t.ok(falseMatches.length <= bound, `strangers matched: ${falseMatches.length} of ${searched} (at most ${bound}; expected about ${(falseMatchRate(photos.length, calibration.models.Facenet.yunet.cosine.far_1e_3.far) * searched).toFixed(1)} from LFW's FAR)${falseMatches.length ? `: ${falseMatches.join('; ')}` : ''}`);

  // The Python recipe (examples/face-search/face_search.py, psycopg and pgvector-python), on the same
  // service and the same PostgreSQL, reached over the wire protocol on loopback (PGlite's socket
  // server), from an empty table: the same threshold, the same people found, the same strangers.
  await db.query(`DROP TABLE ${table}`);
  const pgPort = await freePort();
  const socketServer = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port: pgPort, maxConnections: 4 });
  await socketServer.start();
  t.teardown(() => socketServer.stop());
  const python = resolve(REPO_ROOT, '.venvs/face-search/bin/python');
  const pyPlan = {
    url, key, dsn: `host=127.0.0.1 port=${pgPort} user=postgres dbname=postgres sslmode=disable`, dims: 128, false_match: FALSE_MATCH,
    gallery: photos.map((p) => ({ subject: p.subject, source: p.name, path: join(DEEPFACE_DIR, p.name) })),
    strangers: strangers.map((s) => ({ name: s.name, path: join(LFW_DIR, s.name) })),
  };
  // Asynchronous: the PostgreSQL it talks to is served by this process's event loop.
  const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(python, [resolve(REPO_ROOT, 'test/helpers/face_search_check.py')], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('error', (err) => (stderr += String(err)));
    child.on('close', (status) => {
      clearTimeout(timer);
      done({ status, stdout, stderr });
    });
    child.stdin.end(JSON.stringify(pyPlan));
  });
  lap('the Python recipe');
  if (!t.equal(run.status, 0, `the Python recipe ran (${python}; bootstrap.sh test makes it from examples/face-search/requirements.txt)`)) {
    t.comment(`${run.stderr}`.slice(-3000));
    return;
  }
  type PyMatch = { subject: string; source: string; distance: number; pgvector_distance: number } | null;
  const py = JSON.parse(run.stdout) as { table: string; threshold: number; rows: number; gallery: Array<{ source: string; subject: string; match: PyMatch }>; strangers: Array<{ name: string; match?: PyMatch; no_face?: boolean }>; arithmetic: Array<{ rows: number; a: number; required_far: number; false_match_rate: number }> };
  t.equal(py.table, table, 'the same table name');
  t.equal(py.threshold, threshold, 'the same threshold');
  t.equal(py.rows, 62, 'one row per photo');
  t.same(py.gallery.filter((g) => g.match?.subject !== g.subject).map((g) => g.source), [], 'every photo finds its own person among the others');
  t.ok(py.gallery.every((g) => g.match && Math.abs(g.match.distance - g.match.pgvector_distance) < 1e-5), "pgvector's distance is the service's within 1e-5");
  t.same(py.strangers.filter((s) => s.no_face).map((s) => s.name), noFace, 'the same strangers without a face');
  t.same(py.strangers.filter((s) => s.match).map((s) => `${s.name} -> ${s.match!.subject}`).sort(), falseMatches.map((m) => m.split(' (')[0]!).sort(), 'the same strangers matched, to the same people');
  for (const x of py.arithmetic) {
    t.ok(Math.abs(x.required_far - requiredFar(x.rows, x.a)) < 1e-15 && Math.abs(x.false_match_rate - falseMatchRate(x.rows, 1e-3)) < 1e-15, `the same arithmetic (${x.rows} rows, ${x.a})`);
  }

  // docs/face-search.md's TypeScript and Python blocks, verbatim, as a user runs them from a clone's
  // root (examples/, samples/, the packages; the page's .venv-search is bootstrap's .venvs/face-search),
  // against this database over the wire protocol, each from an empty table: alice is found.
  const blocks = shellBlocks(readFileSync(resolve(REPO_ROOT, 'docs/face-search.md'), 'utf8'), 'docs/face-search.md');
  for (const [language, marker] of [['TypeScript', 'cat > search.ts'], ['Python', 'cat > search.py']] as const) {
    await db.query(`DROP TABLE IF EXISTS ${table}`);
    // PGlite is one backend session for every connection: psycopg's prepared statements (_pg3_0, …) of an
    // earlier connection would collide with a new one's. A server gives each connection its own session.
    await db.query('DEALLOCATE ALL');
    const block = blocks.find((b) => b.code.includes(marker));
    if (!t.ok(block, `docs/face-search.md's ${language} block`) || !block) return;
    const clone = mkdtempSync(join(tmpdir(), 'fc-face-search-doc-'));
    for (const entry of ['examples', 'samples', 'node_modules', 'package.json']) symlinkSync(resolve(REPO_ROOT, entry), join(clone, entry));
    symlinkSync(resolve(REPO_ROOT, '.venvs/face-search'), join(clone, '.venv-search'));
    const doc = await new Promise<{ status: number | null; out: string }>((done) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', block.code], {
        cwd: clone,
        env: { ...process.env, DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/postgres`, FACECOMPUTE_URL: url, FACECOMPUTE_API_KEY: key },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
      child.on('close', (status) => {
        clearTimeout(timer);
        done({ status, out });
      });
    });
    lap(`the page's ${language} block`);
    t.equal(doc.status, 0, `the ${language} block ran${doc.status ? `: ${doc.out.slice(-2000)}` : ''}`);
    t.match(doc.out, /'subject': 'alice'[\s\S]*'verified': True|subject: 'alice'[\s\S]*verified: true/, `it finds alice: ${doc.out.trim().slice(-400)}`);
  }
});
