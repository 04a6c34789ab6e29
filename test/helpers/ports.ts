/**
 * Ports for servers that a test starts in another process, which binds them later.
 *
 * A port the kernel picks with listen(0) comes from its ephemeral range (ip_local_port_range, 32768-60999
 * by default). That is also where it takes the local port of every outgoing connection from. Between
 * closing the probe and the child's bind, a client socket of any test running beside this one can take
 * the port: a CI run on 2026-11-26 saw serve's MCP port taken that way (listen-failures, EADDRINUSE on a
 * port the test had not occupied).
 *
 * These ports come from below that range, which the kernel never hands out by itself. Each process walks
 * its own stretch, starting at an offset derived from its pid, and checks each port by binding it.
 *
 * A port that binds now may still be one another test process has just handed to a child that has not
 * bound it yet: a full run at af17f4f saw serve's model-server child meet EADDRINUSE that way, when two
 * processes' stretches met. So each port handed out is also claimed, for the life of the process that
 * claimed it, by a file named after it in one directory (created exclusively, holding the claimer's
 * pid); a claim whose process is gone may be taken over.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOW = 10_000;
const HIGH = ephemeralRangeStart();
let next = LOW + ((process.pid * 7919) % (HIGH - LOW));

/** The first port of the kernel's ephemeral range (Linux's default when it cannot be read). */
function ephemeralRangeStart(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > LOW + 1000) return first;
  } catch {
    // not Linux, or no /proc: the default below
  }
  return 32_768;
}

export const CLAIMS = join(tmpdir(), 'facecompute-test-ports');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims `port` for this process: false when a live test process (this one included) holds it. */
export function claim(port: number): boolean {
  mkdirSync(CLAIMS, { recursive: true });
  const file = join(CLAIMS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      let owner = NaN;
      try {
        owner = Number(readFileSync(file, 'utf8'));
      } catch {
        continue; // removed meanwhile: try again
      }
      if (!Number.isInteger(owner) || owner <= 0 || owner === process.pid || alive(owner)) return false;
      try {
        unlinkSync(file); // a claim left by a process that is gone
      } catch {
        // another process took it over first; the exclusive write decides
      }
    }
  }
  return false;
}

function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((done) => {
    const s = createServer();
    s.unref();
    s.once('error', () => done(false));
    s.listen(port, host, () => s.close(() => done(true)));
  });
}

/** A port free on `host` now, outside the kernel's ephemeral range. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let tries = 0; tries < HIGH - LOW; tries++) {
    const port = next;
    next = next + 1 < HIGH ? next + 1 : LOW;
    if (claim(port) && (await canBind(port, host))) return port;
  }
  throw new Error(`no free port on ${host} in ${LOW}-${HIGH - 1}`);
}
