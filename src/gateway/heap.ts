/**
 * V8's old-generation growth for the gateway process (FACECOMPUTE_HEAP_GROWTH_PERCENT).
 *
 * Why: node:http hands every body chunk to JavaScript as a fresh 64 KiB ArrayBuffer, so a
 * 100,000 × 128 binary /compare (49 MB) allocates about 770 of them. V8 counts that external memory
 * against the old generation's allocation limit (the space it reports free is the limit less the live
 * heap less the external memory allocated since the last full collection), and starts incremental
 * marking when that free space falls to the young generation's capacity (16 MiB). The limit is set
 * after each full collection as live size × a growing factor that V8 derives from how much time
 * went to collections: 4× on a quiet heap, down to 1.1-1.3× after a memory-reducing collection
 * (an idle gateway gets one) or a run of full collections. With the gateway's live heap of about
 * 25 MB that left 8-16 MB of room, less than one request's chunks, so every request started marking
 * and paid a mark-compact (traced in bench/suites/compare.ts: 29-39 per run, 124-131 ms of CPU per
 * 100k request, half of it on V8's worker threads), and each such collection lowered the factor
 * again. A fixed factor keeps the room at a few times the live heap whatever the history. The flag
 * is read by V8 each time it computes the limit, so setting it at start-up is enough.
 */
import { setFlagsFromString } from 'node:v8';

/** Sets V8's growing factor to 1 + percent/100; 0 leaves V8's own heuristics. */
export function applyHeapGrowth(percent: number): void {
  if (!Number.isInteger(percent) || percent < 0) throw new RangeError(`heap growth percent must be a non-negative integer, got ${percent}`);
  // 0 is also V8's own default for the flag: its heuristics.
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}
