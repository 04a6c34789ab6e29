/** CPU time of processes from /proc: what a request costs a tier, in core-milliseconds. */
import { readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** user + system CPU of one process (every thread), in ms. */
export function processCpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

export function sumCpuMs(pids: number[]): number {
  let s = 0;
  for (const p of pids) {
    try {
      s += processCpuMs(p);
    } catch {
      // a process that ended between listing and reading
    }
  }
  return s;
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}
