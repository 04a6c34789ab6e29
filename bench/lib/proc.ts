/**
 * Process helpers for the service-level benchmarks: free ports, spawning with captured logs,
 * waiting on HTTP, and memory of a whole process tree read from /proc (Linux only).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../test/helpers/ports.js';

export { freePort };

export interface Spawned {
  child: ChildProcess;
  pid: number;
  startedAt: number;
  logPath: string;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Starts a process in its own process group, so that stop() ends it and whatever it started (a
 * model-server child, gunicorn's worker) and nothing else.
 */
export function start(cmd: string, args: string[], opts: SpawnOptions & { logPath: string }): Spawned {
  const startedAt = performance.now();
  // The child writes its log file itself. Piped through this process instead, a service that logs
  // synchronously to a pipe (pino on stdout) would stall whenever the benchmark's own event loop is
  // slow to drain the pipe: the load generator would then be measuring itself.
  const fd = openSync(opts.logPath, 'w');
  const child = spawn(cmd, args, { ...opts, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // A command that cannot be run (ENOENT, EACCES) emits 'error' and no 'exit'.
    child.once('error', () => resolve(null));
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${cmd}`);
  return {
    child,
    pid,
    startedAt,
    logPath: opts.logPath,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        return;
      }
      const done = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
      if (!done) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
        await exited;
      }
    },
  };
}

/** Polls `probe` until it returns true; rejects after `timeoutMs` or when the process exits. */
export async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, proc?: Spawned, intervalMs = 50): Promise<number> {
  const t0 = performance.now();
  let exited = false;
  void proc?.exited.then(() => {
    exited = true;
  });
  while (performance.now() - t0 < timeoutMs) {
    if (exited) throw new Error(`process exited before it was ready (log: ${proc?.logPath})`);
    try {
      if (await probe()) return performance.now();
    } catch {
      // not listening yet
    }
    await sleep(intervalMs);
  }
  throw new Error(`not ready after ${timeoutMs} ms${proc ? ` (log: ${proc.logPath})` : ''}`);
}

function children(pid: number): number[] {
  // /proc/<pid>/task/<tid>/children lists direct children per thread.
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // process gone
  }
  return out;
}

export function processTree(root: number): number[] {
  const seen: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (seen.includes(pid)) continue;
    seen.push(pid);
    stack.push(...children(pid));
  }
  return seen;
}

export interface ProcMemory {
  pid: number;
  name: string;
  vmHwmMb: number;
  vmRssMb: number;
}

export function procMemory(pid: number): ProcMemory | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?';
    return { pid, name, vmHwmMb: kb('VmHWM') / 1024, vmRssMb: kb('VmRSS') / 1024 };
  } catch {
    return null;
  }
}

/**
 * Peak RSS (VmHWM) of every process in the tree, and their sum. esbuild is listed but not summed:
 * it is tsx compiling the TypeScript sources of a development checkout; a built install (dist/)
 * has no such process.
 */
export function treeMemory(root: number): { processes: ProcMemory[]; peakRssMb: number; rssMb: number } {
  const processes = processTree(root)
    .map(procMemory)
    .filter((m): m is ProcMemory => m !== null);
  const counted = processes.filter((p) => p.name !== 'esbuild');
  return {
    processes,
    peakRssMb: counted.reduce((a, p) => a + p.vmHwmMb, 0),
    rssMb: counted.reduce((a, p) => a + p.vmRssMb, 0),
  };
}

/**
 * CPU time (user + system, seconds) of a process tree, from /proc/<pid>/stat: every live process's
 * own utime + stime, plus cutime + cstime, the time of children that have exited and been waited for
 * (a gunicorn worker restarted mid-run, a helper process the model server ran). Differences of two
 * readings are what the benchmarks report: a child's time moves from its own fields to its parent's
 * c-fields when it is reaped, so the sum does not jump.
 */
export function treeCpuSeconds(root: number): number {
  let ticks = 0;
  for (const pid of processTree(root)) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after "(comm)": state is [0], so utime, stime, cutime, cstime are [11]..[14].
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    } catch {
      // gone
    }
  }
  return ticks / CLOCK_TICKS;
}

/**
 * CPU seconds of one process's threads, split into its main thread (tid = pid: the event loop) and
 * all the others (libuv pool, V8's GC and compiler workers; threads that ended count in neither).
 */
export function threadCpuSeconds(pid: number): { main: number; others: number } {
  let main = 0;
  let others = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ticks = Number(f[11]) + Number(f[12]);
        if (tid === String(pid)) main += ticks;
        else others += ticks;
      } catch {
        // the thread ended
      }
    }
  } catch {
    // the process ended
  }
  return { main: main / CLOCK_TICKS, others: others / CLOCK_TICKS };
}

/** USER_HZ: the unit of /proc/<pid>/stat's times; 100 on every Linux ABI Node supports. */
const CLOCK_TICKS = 100;

export function logDir(): string {
  return join(process.env['TMPDIR'] ?? '/tmp', `facecompute-bench-${process.pid}`);
}

/**
 * Samples the 1-minute load average every `everyMs` until stopped: what the machine was doing
 * during a suite, not only before and after it (other builds come and go on a shared machine).
 */
export function sampleLoad(everyMs = 5000): { stop(): { samples: number; min: number; max: number; mean: number } | null } {
  const xs: number[] = [];
  const take = () => {
    const one = loadAverage()[0];
    if (one !== undefined && Number.isFinite(one)) xs.push(one);
  };
  take();
  const timer = setInterval(take, everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      take();
      if (xs.length === 0) return null;
      return { samples: xs.length, min: Math.min(...xs), max: Math.max(...xs), mean: Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 100) / 100 };
    },
  };
}

export function loadAverage(): number[] {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  } catch {
    return [];
  }
}

/** What settle reads and waits on: the machine's by default, a driven clock and counter in tests. */
export interface SettleDeps {
  cpuSeconds(root: number): number;
  wait(ms: number): Promise<void>;
  now(): number;
}

const MACHINE: SettleDeps = { cpuSeconds: treeCpuSeconds, wait: (ms) => new Promise((r) => setTimeout(r, ms)), now: () => performance.now() };

/**
 * Waits until the process tree under `root` has gone quiet: less than `idleShare` of one core over
 * a `windowMs` window, or `timeoutMs` passed. A load run abandons its requests in flight when it
 * stops, but a server that cannot cancel them (gunicorn's sync workers run every queued request to
 * the end) keeps both cores busy for seconds afterwards; the next side measured on the same machine
 * would pay for that. Returns how long it waited, in how many windows, and the CPU seconds the tree
 * used meanwhile.
 */
export async function settle(root: number, o: { windowMs?: number; idleShare?: number; timeoutMs?: number } = {}, deps: SettleDeps = MACHINE): Promise<{ waitedMs: number; windows: number; cpuS: number; quiet: boolean }> {
  const windowMs = o.windowMs ?? 500;
  const idleShare = o.idleShare ?? 0.05;
  const timeoutMs = o.timeoutMs ?? 120_000;
  const t0 = deps.now();
  const c0 = deps.cpuSeconds(root);
  let last = c0;
  for (let windows = 1; ; windows++) {
    await deps.wait(windowMs);
    const now = deps.cpuSeconds(root);
    const quiet = now - last < (idleShare * windowMs) / 1000;
    const waitedMs = deps.now() - t0;
    if (quiet || waitedMs >= timeoutMs) return { waitedMs, windows, cpuS: now - c0, quiet };
    last = now;
  }
}
