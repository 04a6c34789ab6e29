/**
 * The Postman collection of the REST API (examples/postman/facecompute.postman_collection.json): it is
 * tools/postman/collection.ts's rendering of openapi.json (every operation has its folder), and newman
 * runs it as a Postman user would, from the repository's root, against a live `facecompute serve` on
 * loopback with an anonymous account's key: every request answers as the collection's tests expect.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { anonymousKey, startServe, userEnv } from './helpers/serve-proc.js';
import { COLLECTION_PATH, render } from '../tools/postman/collection.js';

const collection = JSON.parse(readFileSync(join(REPO_ROOT, COLLECTION_PATH), 'utf8')) as { item: Array<{ name: string; item: Array<{ name: string }> }> };
const openapi = JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };

t.test('the collection is openapi.json, rendered', async (t) => {
  t.equal(readFileSync(join(REPO_ROOT, COLLECTION_PATH), 'utf8'), render(), `${COLLECTION_PATH} is current (node --import tsx tools/postman/collection.ts)`);
  const operations = Object.entries(openapi.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  t.same(collection.item.map((f) => f.name).sort(), operations.sort(), 'a folder for every operation');
});

t.test('newman runs the collection against a live serve: every test passes', { timeout: 400_000 }, async (t) => {
  const newman = join(dirname(createRequire(import.meta.url).resolve('newman/package.json')), 'bin', 'newman.js');
  // The tests' weights and models cache; startServe picks the ports (the model server's included).
  const { FACECOMPUTE_MODEL_SERVER_PORT: _port, ...models } = modelServerEnv(0, { FACECOMPUTE_ALLOWED_MODELS: 'Facenet', FACECOMPUTE_ALLOWED_DETECTORS: 'opencv', FACECOMPUTE_PREWARM: 'Facenet,opencv' });
  const serve = await startServe(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], { ...userEnv(), ...models }, { cwd: REPO_ROOT });
  t.teardown(() => serve.stop());
  if (!t.equal(await serve.ready(), 200, 'serve is ready')) {
    t.comment(serve.logs.join('').slice(-3000));
    return;
  }
  const key = await anonymousKey(serve.console);
  const reportFile = join(mkdtempSync(join(tmpdir(), 'fc-newman-')), 'report.json');
  const args = [newman, 'run', COLLECTION_PATH, '--working-dir', REPO_ROOT, '--env-var', `baseUrl=${serve.gw}`, '--env-var', `apiKey=${key}`, '--reporters', 'cli,json', '--reporter-json-export', reportFile, '--disable-unicode', '--color', 'off'];
  const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, NO_UPDATE_NOTIFIER: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
  if (!t.ok(existsSync(reportFile), `newman wrote its report (exit ${run.status})`)) {
    t.comment(`${run.stdout}\n${run.stderr}`.slice(-3000));
    return;
  }
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as { run: { stats: Record<string, { total: number; failed: number }>; failures: Array<{ source?: { name?: string }; error: { message: string } }> } };
  const { stats, failures } = report.run;
  const requests = collection.item.reduce((n, f) => n + f.item.length, 0);
  t.equal(stats['requests']!.total, requests, `${requests} requests sent`);
  t.same(failures.map((f) => `${f.source?.name}: ${f.error.message}`), [], 'no failure');
  t.equal(stats['assertions']!.failed, 0, `${stats['assertions']!.total} assertions, none failed`);
  t.ok(stats['assertions']!.total >= requests, 'at least one assertion a request');
  t.equal(run.status, 0, `newman exited 0${run.status ? `: ${`${run.stdout}\n${run.stderr}`.slice(-3000)}` : ''}`);
});
