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
 * its own stretch, starting at an offset derived from its pid, and checks each port by binding it, so
 * tests running side by side rarely meet.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

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
    if (await canBind(port, host)) return port;
  }
  throw new Error(`no free port on ${host} in ${LOW}-${HIGH - 1}`);
}
