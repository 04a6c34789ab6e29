// Preloaded into our gateway and model-server processes by the benchmark (NODE_OPTIONS=--import):
// measures event-loop delay with perf_hooks.monitorEventLoopDelay and writes it to
// $BENCH_EVENT_LOOP_DIR/<pid>.json every 200 ms. SIGUSR2 resets the histogram, so the
// harness can measure exactly the load window. Plain JavaScript: it runs before tsx is registered.
import { monitorEventLoopDelay } from 'node:perf_hooks';
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
  h.enable();
  const file = join(dir, `${process.pid}.json`);
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
  setInterval(write, 200).unref();
  process.on('SIGUSR2', () => h.reset());
}
