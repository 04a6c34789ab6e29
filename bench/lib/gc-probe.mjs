// Preloaded into `facecompute serve` by hand (NODE_OPTIONS=--import=./bench/lib/gc-probe.mjs before a
// bench that starts it): logs each garbage collection of the main thread that held it 20 ms or
// more, and every 5 s the count and total, to stderr (the service's log). Used to tell GC pauses
// apart from the machine's scheduling in the overload bench's event-loop delays. Plain JavaScript:
// it runs before tsx is registered; only the `serve` process, not its model-server child.
import { PerformanceObserver } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';

if (isMainThread && process.argv.slice(2).join(' ').endsWith('serve')) {
  const kinds = { 1: 'major', 2: 'minor', 4: 'incremental', 8: 'weakcb' };
  const all = { n: 0, ms: 0, long: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      all.n++;
      all.ms += e.duration;
      if (e.duration >= 20) {
        all.long++;
        process.stderr.write(`GC_LONG ${kinds[e.detail?.kind] ?? e.detail?.kind} ${e.duration.toFixed(1)} ms at ${Date.now()}\n`);
      }
    }
  }).observe({ entryTypes: ['gc'] });
  setInterval(() => process.stderr.write(`GC_SUM ${JSON.stringify({ ...all, ms: Math.round(all.ms) })} at ${Date.now()}\n`), 5000).unref();
}
