/**
 * The OOM killer, emulated without cgroups: every `everyMs`, each watched process's peak RSS (VmHWM,
 * the kernel's own high-water mark, so a spike between two readings still counts) is compared with
 * its limit, and a process past it is SIGKILLed, as the kernel kills a container past its memory
 * limit. `prlimit --as` limits address space instead, which V8 and ONNX Runtime reserve far beyond
 * what they touch (at idle `serve` maps 22 GB and its model server 2.6 GB), so it cannot stand in.
 */
import { procMemory } from '../lib/proc.js';

export interface Watched {
  pid: number;
  /** What the process is, in reports ("serve", "model-server"). */
  role: string;
  limitBytes: number;
}

export interface Kill {
  pid: number;
  role: string;
  peakMb: number;
}

export function memoryWatchdog(watched: () => Watched[], everyMs = 10): { kills: Kill[]; stop(): void } {
  const kills: Kill[] = [];
  const timer = setInterval(() => {
    for (const w of watched()) {
      const m = procMemory(w.pid);
      if (!m || m.vmHwmMb * 2 ** 20 <= w.limitBytes || kills.some((k) => k.pid === w.pid)) continue;
      kills.push({ pid: w.pid, role: w.role, peakMb: Math.round(m.vmHwmMb) });
      try {
        process.kill(w.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }, everyMs);
  return { kills, stop: () => clearInterval(timer) };
}
