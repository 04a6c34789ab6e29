/**
 * One test command, one result (issue 23, section 2): no test, bench or tool branches on `CI`, and a
 * test whose service is missing fails naming the service and the command that starts it, never skips.
 */
import t, { type Test } from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { requireService, START_TEST_SERVICES } from './helpers/services.js';

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'results' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (/\.(ts|mjs|js|cjs|sh|py)$/.test(name)) out.push(p);
  }
  return out;
}

t.test('no test, bench or tool reads the CI variable', async (t) => {
  // Any read of it: env.CI or env['CI'] (Node), environ.get('CI') or environ['CI'] (Python), $CI or ${CI} (shell).
  const reads = new RegExp(['env\\s*(\\.\\s*CI\\b|\\[\\s*[\'"]CI[\'"]\\s*\\])', 'environ(\\.get\\(|\\[)\\s*[\'"]CI[\'"]', '\\$\\{?CI\\b'].join('|'));
  const hits: string[] = [];
  // This file names the patterns it looks for, so it is not scanned.
  const scanned = ['test', 'bench', 'tools'].flatMap((d) => files(join(REPO_ROOT, d))).filter((f) => !f.endsWith('test-services.test.ts'));
  t.ok(scanned.length > 100, `scanned ${scanned.length} files`);
  for (const f of scanned) {
    readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
      if (reads.test(line)) hits.push(`${relative(REPO_ROOT, f)}:${i + 1}: ${line.trim()}`);
    });
  }
  t.same(hits, [], 'the same tests run, and fail the same way, with CI set or not');
});

/** A stand-in for tap's Test that records what requireService reports. */
function recorder() {
  const failures: string[] = [];
  return { failures, t: { fail: (msg: string) => { failures.push(msg); return false; } } as unknown as Test };
}

t.test('a missing service fails, naming it and the command that starts it', async (t) => {
  const saved = { redis: process.env['FACECOMPUTE_TEST_REDIS_URL'], pg: process.env['FACECOMPUTE_TEST_DATABASE_URL'] };
  t.teardown(() => {
    for (const [k, v] of [['FACECOMPUTE_TEST_REDIS_URL', saved.redis], ['FACECOMPUTE_TEST_DATABASE_URL', saved.pg]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  delete process.env['FACECOMPUTE_TEST_REDIS_URL'];
  const unset = recorder();
  t.equal(await requireService(unset.t, 'Redis'), null);
  t.same(unset.failures, [`Redis is required by this test and FACECOMPUTE_TEST_REDIS_URL is not set: start it with ${START_TEST_SERVICES}`]);

  // A port nothing listens on: the one a server just left.
  const gone = createServer();
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
  const port = (gone.address() as { port: number }).port;
  await new Promise((r) => gone.close(r));
  process.env['FACECOMPUTE_TEST_DATABASE_URL'] = `postgres://facecompute@127.0.0.1:${port}/facecompute_test`;
  const down = recorder();
  t.equal(await requireService(down.t, 'PostgreSQL'), null);
  t.equal(down.failures.length, 1);
  t.match(down.failures[0], /^PostgreSQL is required by this test and FACECOMPUTE_TEST_DATABASE_URL=\S+ does not answer \(ECONNREFUSED\): start it with `source scripts\/test-services.sh; start_test_services`/);

  const up = createServer((s) => s.end());
  await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
  t.teardown(() => up.close());
  const url = `redis://127.0.0.1:${(up.address() as { port: number }).port}`;
  process.env['FACECOMPUTE_TEST_REDIS_URL'] = url;
  const ok = recorder();
  t.equal(await requireService(ok.t, 'Redis'), url, 'a service that answers is used');
  t.same(ok.failures, []);
});
