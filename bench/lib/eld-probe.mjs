// Preloaded into our gateway and model-server processes by the benchmark (NODE_OPTIONS=--import):
// measures event-loop delay with perf_hooks.monitorEventLoopDelay and writes it to
// $BENCH_EVENT_LOOP_DIR/<pid>.json every 200 ms. SIGUSR2 resets the histogram, so the
// harness can measure exactly the load window. Plain JavaScript: it runs before tsx is registered.
//
// Beside the delay (wall time, which on a shared machine includes waiting for a core), `busy_max_ms`
// is the most CPU time the JS thread itself spent between two ticks of a 2 ms timer, read from the
// kernel's per-thread run time (/proc/self/task/<pid>/schedstat, nanoseconds): the part of a stall
// that is the process's own work. Linux only; elsewhere it stays null.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.BENCH_EVENT_LOOP_DIR;
// NODE_OPTIONS reaches worker threads too. The model server's inference worker blocks in every ONNX
// Runtime run by design, and it shares the pid, so it would overwrite the JS thread's file.
if (dir && isMainThread) {
  // The histogram records the time between timer ticks, which includes the sampling period itself;
  // that period is subtracted so the figures are the delay beyond it.
  const resolutionMs = 5;
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  const file = join(dir, `${process.pid}.json`);
  // The JS thread's on-CPU nanoseconds (its tid is the pid), or null where schedstat cannot be read.
  const schedstat = `/proc/self/task/${process.pid}/schedstat`;
  const onCpuNs = () => {
    try {
      return Number(readFileSync(schedstat, 'latin1').split(' ')[0]);
    } catch {
      return null;
    }
  };
  let lastCpu = onCpuNs();
  let busyMaxNs = lastCpu === null ? null : 0;
  // Sampling costs the measured process CPU (a /proc read every 2 ms on each JS thread: several
  // per cent of a request's CPU under load), so a harness that measures CPU per request disarms the
  // probe while it does (a file `disarmed` in the directory, looked for every 200 ms).
  let sampler = null;
  const arm = (on) => {
    if (on && !sampler) {
      h.enable();
      lastCpu = onCpuNs();
      sampler = lastCpu === null ? true : setInterval(() => {
        const now = onCpuNs();
        if (now === null || lastCpu === null) return;
        busyMaxNs = Math.max(busyMaxNs ?? 0, now - lastCpu);
        lastCpu = now;
      }, 2).unref();
    } else if (!on && sampler) {
      h.disable();
      if (sampler !== true) clearInterval(sampler);
      sampler = null;
    }
  };
  const disarmed = join(dir, 'disarmed');
  arm(!existsSync(disarmed));
  const ms = (ns) => Math.max(0, Math.round((ns / 1e6 - resolutionMs) * 100) / 100);
  let writing = false;
  const write = () => {
    const snap = {
      pid: process.pid,
      argv: process.argv.slice(2).join(' '),
      count: h.count,
      p50_ms: ms(h.percentile(50)),
      p99_ms: ms(h.percentile(99)),
      max_ms: ms(h.max),
      mean_ms: ms(h.mean),
      busy_max_ms: busyMaxNs === null ? null : Math.round(busyMaxNs / 1e4) / 100,
    };
    // Asynchronous: written synchronously, on a busy disk each write held the measured process's
    // event loop for milliseconds (seen in a CPU profile of the gateway under the overload bench).
    if (writing) return;
    writing = true;
    writeFile(`${file}.tmp`, JSON.stringify(snap))
      .then(() => rename(`${file}.tmp`, file))
      .catch(() => undefined) // the directory went away: the benchmark is over
      .finally(() => (writing = false));
  };
  setInterval(() => {
    arm(!existsSync(disarmed));
    if (sampler) write();
  }, 200).unref();
  process.on('SIGUSR2', () => {
    h.reset();
    lastCpu = onCpuNs();
    if (busyMaxNs !== null) busyMaxNs = 0;
  });
}
