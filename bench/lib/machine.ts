/** Describes the machine and the commit a benchmark ran on, for every results file. */
import { cpus, totalmem } from 'node:os';
import { execFileSync } from 'node:child_process';

export function machineInfo(): { cpu: string; cores: number; memory_gb: number; node: string; commit: string; date: string } {
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
  };
}
