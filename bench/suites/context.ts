/** What every suite gets from bench/run.ts. */
import type { machineInfo } from '../lib/machine.js';

export interface SuiteContext {
  quick: boolean;
  machine: ReturnType<typeof machineInfo>;
  /** Logs of spawned services (kept outside the repository). */
  logDir: string;
  log(line: string): void;
  table(header: string[], rows: Array<Array<string | number>>): void;
}
