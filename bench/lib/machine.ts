/** Describes the machine, the SIMD kernels that ran and the commit of a benchmark, for every results file. */
import { cpus, totalmem } from 'node:os';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * The kernels the product runs on this machine (the bench addon asks the core, honouring
 * FACECOMPUTE_SIMD, which the services a suite starts inherit): the Haar scan's (`avx512`, `avx2`,
 * `scalar`) and the vector comparison's; plus the vector extensions the CPU reports.
 */
export interface SimdInfo {
  haar: string;
  compare: string;
  /** FACECOMPUTE_SIMD when set (a narrower kernel forced), else null. */
  forced: string | null;
  cpu_flags: string[];
}

function cpuFlags(): string[] {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'));
    return (line?.split(':')[1]?.trim().split(/\s+/) ?? []).filter((f) => /^(avx2|fma|avx512(f|bw|dq|vl|_vnni))$/.test(f));
  } catch {
    return [];
  }
}

export function simdInfo(): SimdInfo {
  const forced = process.env.FACECOMPUTE_SIMD ?? null;
  try {
    const native = createRequire(import.meta.url)('../native/index.js') as { benchSimdKernels(): { haar: string; compare: string } };
    return { ...native.benchSimdKernels(), forced, cpu_flags: cpuFlags() };
  } catch {
    const why = 'unknown (bench addon not built: npm run build:native:bench)';
    return { haar: why, compare: why, forced, cpu_flags: cpuFlags() };
  }
}

export function machineInfo(): { cpu: string; cores: number; memory_gb: number; node: string; commit: string; date: string; simd: SimdInfo } {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memory_gb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    commit,
    date: new Date().toISOString(),
    simd: simdInfo(),
  };
}
