/**
 * Runs a registry's own client (pip, npm, apt-get) as a child process: its configuration decides
 * where it downloads from (an index URL, a registry, sources.list, proxies, certificates), so no
 * registry address is written in this code. Only the tail of its messages is kept: the reasons are at
 * the end, and a chatty client must not grow memory.
 */
import { spawn } from 'node:child_process';

export interface ClientOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The client's progress and messages, as it prints them. */
  onOutput?: (chunk: string) => void;
  /** Kills a client that has not finished by then. */
  timeoutMs?: number;
}

export interface ClientResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  spawnError?: Error;
}

const TAIL = 16_384;

export function runClient(command: string, args: string[], opts: ClientOptions = {}): Promise<ClientResult> {
  return new Promise((resolvePromise) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let spawnError: Error | undefined;
    const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs ?? 30 * 60_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout = (stdout + d).slice(-TAIL);
      opts.onOutput?.(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr = (stderr + d).slice(-TAIL);
      opts.onOutput?.(d);
    });
    child.on('error', (err) => {
      spawnError = err;
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolvePromise({ status, signal, stdout, stderr, ...(spawnError ? { spawnError } : {}) });
    });
  });
}

/** The last few meaningful lines of a client's messages, for an error that says why. */
export function lastLines(text: string, pick: RegExp | null = null, n = 3): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  const picked = pick ? lines.filter((l) => pick.test(l)) : [];
  return (picked.length > 0 ? picked : lines).slice(-n).join(' | ');
}
