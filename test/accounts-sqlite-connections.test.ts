/**
 * The gateway, the MCP endpoint and the console may each open the same SQLite file. Consumption must
 * stay exact across connections, not only within one: 5 threads with their own connections make 10
 * calls each against 10 remaining.
 */
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.js';
import { createAccountsStore } from '../src/accounts/index.js';

const WORKER = new URL('./helpers/consume-worker.ts', import.meta.url);

t.test('50 consumes from 5 SQLite connections against 10 remaining: exactly 10 succeed', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fc-sqlite-mp-'));
  const store = await createAccountsStore(loadConfig({ FACECOMPUTE_DATA_DIR: dataDir }));
  const { account } = await store.signupAnonymous('127.0.0.1');
  await store.close();
  const runs = await Promise.all(
    Array.from(
      { length: 5 },
      () =>
        new Promise<{ ok: number; refused: number }>((resolve, reject) => {
          // Workers do not inherit the tsx loader on Node 20; register it, then load the TypeScript worker.
          const src = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER.href)}); })`;
          const w = new Worker(src, { eval: true, workerData: { dataDir, accountId: account.id, calls: 10 } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  const ok = runs.reduce((n, r) => n + r.ok, 0);
  const refused = runs.reduce((n, r) => n + r.refused, 0);
  t.equal(ok, 10);
  t.equal(refused, 40);
  const check = await createAccountsStore(loadConfig({ FACECOMPUTE_DATA_DIR: dataDir }));
  t.same((await check.getAccount(account.id)).free_calls, { total: 10, used: 10, remaining: 0 });
  await check.close();
});

t.test('8 connections opening one fresh SQLite file at the same moment: every one migrates or finds it migrated', async (t) => {
  // The gateway, the console and the MCP endpoint start together on one data directory (the image
  // test's read-only stack does): without a lock, one re-ran a migration ("table ... already exists").
  const dataDir = mkdtempSync(join(tmpdir(), 'fc-sqlite-migrate-'));
  const src = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(new URL('./helpers/migrate-worker.ts', import.meta.url).href)}); })`;
  const workers = Array.from({ length: 8 }, () => new Worker(src, { eval: true, workerData: { dataDir } }));
  t.teardown(() => Promise.all(workers.map((w) => w.terminate())));
  // Every thread loads first; then all are told to open the database at once.
  await Promise.all(workers.map((w) => new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); })));
  const done = workers.map((w) => new Promise<{ ok: boolean; error?: string }>((resolve, reject) => { w.once('message', resolve); w.once('error', reject); }));
  for (const w of workers) w.postMessage('go');
  const results = await Promise.all(done);
  t.same(results.filter((r) => !r.ok).map((r) => r.error), [], 'no start-up failed');
  const check = await createAccountsStore(loadConfig({ FACECOMPUTE_DATA_DIR: dataDir }));
  const { account } = await check.signupAnonymous('127.0.0.1');
  t.ok(account.id, 'the schema works');
  await check.close();
});
