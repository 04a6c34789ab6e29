/**
 * The child supervisor of `facecompute serve` (src/cli/supervisor.ts) with real child processes:
 * restarts with an exponential backoff and a cap, the crash-loop state, fatal exit statuses, the
 * ready probe, and stop(). Timings are asserted only as lower bounds (a delay is never shorter than
 * configured), which a busy machine cannot break.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { createSupervisor, type ProbeResult, type SupervisorOptions } from '../src/cli/supervisor.js';
import { createLogger } from '../src/logging/logger.js';

const logger = createLogger('test', 'silent');
const node = (code: string) => () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
const CRASH = node('process.exit(1)');
const STAY = node('setInterval(() => {}, 1000)');

function options(over: Partial<SupervisorOptions>): SupervisorOptions {
  return {
    name: 'test-child',
    spawn: STAY,
    probe: async () => 'up',
    logger,
    backoffMs: 40,
    backoffMaxMs: 160,
    crashloopRestarts: 4,
    crashloopWindowMs: 60_000,
    probeIntervalMs: 10,
    ...over,
  };
}

async function until(f: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

t.test('a crashing child is restarted after growing delays, capped, then reported as a crash loop', async (t) => {
  const spawns: number[] = [];
  const phases: string[] = [];
  const sup = createSupervisor(
    options({
      spawn: () => {
        spawns.push(performance.now());
        return CRASH();
      },
      probe: async () => 'not_yet',
    }),
  );
  t.teardown(() => sup.stop());
  sup.start();
  await until(() => {
    const s = sup.status();
    if (phases.at(-1) !== s.phase) phases.push(s.phase);
    return spawns.length >= 6;
  });
  const s = sup.status();
  t.equal(s.phase, 'crashloop', `4 crashes within the window: ${phases.join(' → ')}`);
  t.ok(phases.includes('restarting'), 'restarting before the crash loop');
  t.ok(s.restarts >= 5);
  // Delays before restarts 1..5: 40, 80, 160, 160 (cap), 160 ms: each gap is at least that.
  const expected = [40, 80, 160, 160, 160];
  for (let i = 0; i < expected.length; i++) {
    const gap = spawns[i + 1]! - spawns[i]!;
    t.ok(gap >= expected[i]! - 1, `gap ${i + 1} is ${gap.toFixed(0)} ms >= ${expected[i]} ms`);
  }
  await until(() => !sup.status().childAlive);
  const during = sup.status();
  t.ok(during.retryAfterS >= 1, 'Retry-After during the backoff');
  t.same(during.lastExit, { code: 1, signal: null });
});

t.test('a child that becomes ready again ends the crash loop', async (t) => {
  let n = 0;
  let probeUp = false;
  const sup = createSupervisor(
    options({
      crashloopRestarts: 2,
      spawn: () => (++n <= 2 ? CRASH() : STAY()),
      probe: async (): Promise<ProbeResult> => (probeUp ? 'up' : 'not_yet'),
    }),
  );
  t.teardown(() => sup.stop());
  sup.start();
  await until(() => n >= 3);
  t.equal(sup.status().phase, 'crashloop', 'two crashes: crash loop');
  t.ok(sup.status().childAlive, 'the third child runs');
  probeUp = true;
  t.equal(await sup.waitUntilUp(30_000), true);
  t.equal(sup.status().phase, 'up');
  // A kill from outside (kill -9) is a crash too; the next child comes up again.
  const gen = sup.status().generation;
  sup.child()!.kill('SIGKILL');
  await sup.waitForExit(gen, 30_000);
  t.equal(sup.status().generation, gen + 1);
  t.equal(sup.status().lastExit?.signal, 'SIGKILL');
  t.equal(sup.status().phase, 'crashloop', 'third crash within the window');
  t.equal(await sup.waitUntilUp(30_000), true, 'restarted and ready');
});

t.test('a fatal exit status is not restarted', async (t) => {
  let spawned = 0;
  let fatal: number | null = null;
  const sup = createSupervisor(
    options({
      spawn: () => {
        spawned++;
        return node('process.exit(3)')();
      },
      probe: async () => 'not_yet',
      fatalExitCodes: [3],
      onFatal: (code) => (fatal = code),
    }),
  );
  sup.start();
  await until(() => fatal !== null);
  t.equal(fatal, 3);
  t.equal(sup.status().phase, 'failed');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(spawned, 1, 'never restarted');
});

t.test('stop() ends the child and restarts nothing', async (t) => {
  let spawned = 0;
  const sup = createSupervisor(options({ spawn: () => (spawned++, STAY()) }));
  sup.start();
  t.equal(await sup.waitUntilUp(30_000), true);
  const child = sup.child()!;
  await sup.stop();
  t.not(child.signalCode ?? child.exitCode, null, 'the child has exited');
  t.equal(sup.status().phase, 'stopped');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(spawned, 1);
  t.equal(sup.child(), null);
});
