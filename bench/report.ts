import type { BenchFile } from './run.js';
export function writeReport(_b: BenchFile, _dir: string): void {}
