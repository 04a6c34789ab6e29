/**
 * Supervision of a child process of `facecompute serve` (the model server): it is restarted when it
 * exits, after an exponential backoff (initial × 2^(n−1), n = exits within the crash-loop window,
 * capped); n reaching the crash-loop threshold reports `crashloop` (it is still restarted, at the
 * cap) until a child becomes ready again. An exit status listed as fatal (a listener that cannot
 * bind) is not retried: the parent stops with it. Readiness of each new child is learnt by polling
 * its probe, so the parent knows when a restart is over.
 *
 * The phases, as the gateway sees them (`SupervisedStatus`):
 *   starting    first child spawned, not yet ready
 *   up          the current child answered its probe (ready, or its own warmup error)
 *   restarting  a child exited; waiting out the backoff, or the new child is not ready yet
 *   crashloop   the same, after `crashloopRestarts` exits within `crashloopWindowMs`
 *   failed      a fatal exit; no restart
 *   stopped     stop() was called
 */
import type { ChildProcess } from 'node:child_process';
import type { Logger } from '../logging/logger.js';

export type SupervisedPhase = 'starting' | 'up' | 'restarting' | 'crashloop' | 'failed' | 'stopped';

export interface SupervisedStatus {
  phase: SupervisedPhase;
  /** Incremented at every exit of a child: a caller compares it to learn that a crash happened meanwhile. */
  generation: number;
  /** Restarts since the parent started. */
  restarts: number;
  /** Whether a child process is alive now (false while the backoff runs). */
  childAlive: boolean;
  /** Seconds after which a retry is likely to find the child ready (≥ 1). */
  retryAfterS: number;
  /** The last exit: status code or signal. */
  lastExit: { code: number | null; signal: NodeJS.Signals | null } | null;
}

/** What a probe found: the child is ready (or settled in its own error state), or not yet. */
export type ProbeResult = 'up' | 'not_yet';

export interface SupervisorOptions {
  /** Name in logs ("model-server"). */
  name: string;
  spawn(): ChildProcess;
  /** Asked every `probeIntervalMs` while a child starts; must settle within its own timeout. */
  probe(): Promise<ProbeResult>;
  logger: Logger;
  backoffMs: number;
  backoffMaxMs: number;
  crashloopRestarts: number;
  crashloopWindowMs: number;
  /** Exit statuses that are not restarted (the parent stops with them). */
  fatalExitCodes?: readonly number[];
  /** Called once when a fatal exit happens. */
  onFatal?(code: number): void;
  /** Called each time a child has become ready. */
  onUp?(child: ChildProcess): void;
  probeIntervalMs?: number;
  /** Typical time a new child takes to become ready, for Retry-After (learnt from each start). */
  expectedStartMs?: number;
}

export interface Supervisor {
  start(): void;
  status(): SupervisedStatus;
  /** The current child, or null during a backoff. */
  child(): ChildProcess | null;
  /** Resolves when the generation moves past `generation` or after `ms`, whichever is first. */
  waitForExit(generation: number, ms: number): Promise<void>;
  /** Resolves when the phase is `up` (or the supervisor is stopped/failed) or after `ms`. */
  waitUntilUp(ms: number): Promise<boolean>;
  /** Stops supervising and ends the child: SIGTERM, then SIGKILL after `killAfterMs`. */
  stop(killAfterMs?: number): Promise<void>;
}

export function createSupervisor(o: SupervisorOptions): Supervisor {
  const log = o.logger;
  const probeEvery = o.probeIntervalMs ?? 50;
  const fatal = new Set(o.fatalExitCodes ?? []);
  let phase: SupervisedPhase = 'starting';
  let crashlooping = false;
  let current: ChildProcess | null = null;
  let generation = 0;
  let restarts = 0;
  let lastExit: SupervisedStatus['lastExit'] = null;
  let exits: number[] = [];
  let restartTimer: NodeJS.Timeout | null = null;
  let restartAt = 0;
  let spawnedAt = 0;
  let crashedAt = 0;
  let expectedStartMs = o.expectedStartMs ?? 2000;
  let waiters: Array<() => void> = [];

  const notify = () => waiters.splice(0).forEach((f) => f());

  function backoffFor(n: number): number {
    return Math.min(o.backoffMaxMs, o.backoffMs * 2 ** Math.max(0, n - 1));
  }

  function spawnChild(): void {
    spawnedAt = performance.now();
    const child = o.spawn();
    current = child;
    const myGeneration = generation;
    child.once('exit', (code, signal) => onExit(child, code, signal));
    // A spawn failure (ENOENT, EAGAIN) is reported as 'error' and may come without 'exit'.
    child.once('error', (err) => {
      log.error({ err, child: o.name }, 'could not start the child process');
      if (child.exitCode === null && child.signalCode === null && child.pid === undefined) onExit(child, null, null);
    });
    log.info({ child: o.name, child_pid: child.pid, restarts }, restarts === 0 ? 'child started' : 'child restarted');
    void watchStartup(child, myGeneration);
  }

  async function watchStartup(child: ChildProcess, gen: number): Promise<void> {
    while (current === child && generation === gen && (phase === 'starting' || phase === 'restarting' || phase === 'crashloop')) {
      let r: ProbeResult = 'not_yet';
      try {
        r = await o.probe();
      } catch {
        r = 'not_yet';
      }
      if (current !== child || generation !== gen) return;
      if (r === 'up') {
        const tookMs = Math.round(performance.now() - spawnedAt);
        expectedStartMs = tookMs;
        const downMs = crashedAt > 0 ? Math.round(performance.now() - crashedAt) : undefined;
        if (phase !== 'starting') log.info({ child: o.name, start_ms: tookMs, down_ms: downMs, restarts }, 'child ready again');
        phase = 'up';
        crashlooping = false;
        o.onUp?.(child);
        notify();
        return;
      }
      await new Promise((r2) => setTimeout(r2, probeEvery).unref());
    }
  }

  function onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (current !== child) return;
    current = null;
    generation++;
    lastExit = { code, signal };
    notify();
    if (phase === 'stopped') return;
    if (code !== null && fatal.has(code)) {
      phase = 'failed';
      log.fatal({ child: o.name, code }, 'child exited with a fatal status; not restarting');
      o.onFatal?.(code);
      return;
    }
    const now = performance.now();
    crashedAt = now;
    exits = exits.filter((t) => now - t < o.crashloopWindowMs);
    exits.push(now);
    if (exits.length >= o.crashloopRestarts) crashlooping = true;
    phase = crashlooping ? 'crashloop' : 'restarting';
    const delay = backoffFor(exits.length);
    restartAt = now + delay;
    const level = crashlooping ? 'error' : 'warn';
    log[level]({ child: o.name, code, signal, restart_in_ms: delay, exits_in_window: exits.length, crashloop: crashlooping }, 'child exited; restarting');
    restartTimer = setTimeout(() => {
      restartTimer = null;
      if (phase === 'stopped' || phase === 'failed') return;
      restarts++;
      spawnChild();
    }, delay);
  }

  return {
    start() {
      if (current || restartTimer) return;
      spawnChild();
    },
    status() {
      const waitMs = current === null && restartTimer ? Math.max(0, restartAt - performance.now()) + expectedStartMs : expectedStartMs;
      return {
        phase,
        generation,
        restarts,
        childAlive: current !== null,
        retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)),
        lastExit,
      };
    },
    child: () => current,
    waitForExit(gen, ms) {
      if (generation !== gen) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== check);
          resolve();
        }
        function check() {
          if (generation !== gen) done();
          else waiters.push(check);
        }
        waiters.push(check);
      });
    },
    waitUntilUp(ms) {
      const settled = () => phase === 'up' || phase === 'stopped' || phase === 'failed';
      if (settled()) return Promise.resolve(phase === 'up');
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== check);
          resolve(false);
        }, ms);
        function check() {
          if (settled()) {
            clearTimeout(timer);
            resolve(phase === 'up');
          } else waiters.push(check);
        }
        waiters.push(check);
      });
    },
    async stop(killAfterMs = 10_000) {
      if (phase !== 'failed') phase = 'stopped';
      if (restartTimer) clearTimeout(restartTimer);
      restartTimer = null;
      notify();
      const child = current;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const hard = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      await exited;
      clearTimeout(hard);
    },
  };
}
