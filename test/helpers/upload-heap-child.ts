/**
 * Child process of test/heap-growth.test.ts: applies FACECOMPUTE_HEAP_GROWTH_PERCENT from the
 * configuration as `serve` and `gateway` do, builds a live heap the size of the gateway's (about 25 MB),
 * then receives 12 "uploads" the way node:http delivers a 100,000 × 128 binary /compare body (49 MB
 * as 64 KiB chunks, each its own ArrayBuffer, copied into one pooled buffer), yielding to the event
 * loop between chunks as a socket does. Prints the full (major) and young collections during the uploads.
 * Run with a small --max-old-space-size: V8's own growing factor is then at most 1.3, which puts the
 * heap at once in the state an idle or busy gateway reaches (a limit a few MB above the live heap).
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { loadConfig } from '../../src/config/index.js';
import { applyHeapGrowth } from '../../src/gateway/heap.js';

applyHeapGrowth(loadConfig().limits.heapGrowthPercent);
let majors = 0;
let minors = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
    else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minors++;
  }
}).observe({ entryTypes: ['gc'] });

const live: Array<{ a: number; b: string; c: number[] }> = [];
for (let i = 0; i < 250_000; i++) live.push({ a: i, b: `s${i}`, c: [i, i + 1] });
const CHUNK = 64 * 1024;
const CHUNKS = 768;
const dest = Buffer.allocUnsafeSlow(CHUNK * CHUNKS);
await new Promise((r) => setTimeout(r, 200));
const [m0, s0] = [majors, minors];
for (let upload = 0; upload < 12; upload++) {
  for (let c = 0; c < CHUNKS; c++) {
    const chunk = Buffer.allocUnsafeSlow(CHUNK);
    chunk[0] = c;
    dest.set(chunk, c * CHUNK);
    if (c % 8 === 7) await yieldToLoop();
  }
  await new Promise((r) => setTimeout(r, 5));
}
process.stdout.write(`${JSON.stringify({ majors: majors - m0, minors: minors - s0, live: live.length })}\n`);
