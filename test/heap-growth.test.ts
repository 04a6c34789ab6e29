/**
 * FACECOMPUTE_HEAP_GROWTH_PERCENT (src/gateway/heap.ts): with V8's own growing factor, a heap whose
 * limit sits a few MB above its live size runs a full collection for almost every 49 MB upload that
 * node:http delivers as 64 KiB ArrayBuffers (their external memory counts against the limit); with the
 * default 300% it runs almost none. Both cases run, so the test fails if the setting stops being
 * applied or stops mattering. Two child processes of about 1-2 s each.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { loadConfig } from '../src/config/index.js';
import { applyHeapGrowth } from '../src/gateway/heap.js';
import { REPO_ROOT } from './helpers/shared.js';

const run = promisify(execFile);

async function uploads(env: Record<string, string>): Promise<{ majors: number; minors: number }> {
  const { stdout } = await run(process.execPath, ['--max-old-space-size=160', '--import', 'tsx', join(REPO_ROOT, 'test', 'helpers', 'upload-heap-child.ts')], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

t.test('the default growth keeps full collections off the upload path; V8 own factor does not', async (t) => {
  const tuned = await uploads({});
  const untuned = await uploads({ FACECOMPUTE_HEAP_GROWTH_PERCENT: '0' });
  t.comment(`12 uploads of 49 MB: ${JSON.stringify(tuned)} with the default, ${JSON.stringify(untuned)} with 0`);
  t.ok(tuned.minors >= 12, 'the chunks were collected young');
  t.ok(tuned.majors <= 2, `at most 2 full collections with the default (${tuned.majors})`);
  t.ok(untuned.majors >= 6, `V8's own factor runs a full collection for most uploads (${untuned.majors})`);
});

t.test('the setting is validated: default 300, bounded, an integer', async (t) => {
  t.equal(loadConfig({}).limits.heapGrowthPercent, 300);
  t.equal(loadConfig({ FACECOMPUTE_HEAP_GROWTH_PERCENT: '0' }).limits.heapGrowthPercent, 0);
  t.throws(() => loadConfig({ FACECOMPUTE_HEAP_GROWTH_PERCENT: '-1' }));
  t.throws(() => loadConfig({ FACECOMPUTE_HEAP_GROWTH_PERCENT: '1001' }));
  t.throws(() => loadConfig({ FACECOMPUTE_HEAP_GROWTH_PERCENT: '2.5' }));
  t.throws(() => applyHeapGrowth(-5), RangeError);
  t.throws(() => applyHeapGrowth(1.5), RangeError);
});
