/**
 * Runs numpy_baseline.py when a Python with numpy is available (BENCH_PYTHON, else python3), and
 * otherwise reports why it was skipped: numpy is an optional comparison, never a requirement.
 */
import { spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NumpyTiming {
  n: number;
  dims: number;
  metric: string;
  seconds: number;
}

const SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), 'numpy_baseline.py');

export function runNumpy(configs: Array<{ n: number; dims: number }>): NumpyTiming[] | { skipped: string } {
  const python = process.env['BENCH_PYTHON'] ?? 'python3';
  const probe = spawnSync(python, ['-c', 'import numpy'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return { skipped: `no numpy for ${python} (set BENCH_PYTHON to a Python with numpy)` };
  }
  const run = spawnSync(python, [SCRIPT], { input: JSON.stringify(configs), encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (run.status !== 0) return { skipped: `numpy baseline failed: ${run.stderr.trim().split('\n').pop() ?? ''}` };
  return JSON.parse(run.stdout) as NumpyTiming[];
}
