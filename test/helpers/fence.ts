/**
 * Fences for the processes the loopback guard cannot preload (it patches Node and Python only), checked
 * before they start. HAProxy: its configuration may name only loopback addresses, for what it binds and
 * every server it forwards or health-checks to, and no DNS (resolvers, nameserver) or mail; a
 * configuration that would reach further is refused, and logged as the guard logs.
 */
import { refuseOffLoopback } from './loopback-guard.js';

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|\[?::1\]?|localhost)$/i;

/** The addresses in an HAProxy `bind` or `server` line (host:port, unix sockets aside). */
function addressOf(line: string): string | null {
  const words = line.trim().split(/\s+/);
  const kw = words[0];
  const addr = kw === 'bind' ? words[1] : kw === 'server' ? words[2] : undefined;
  if (addr === undefined || addr.startsWith('/') || addr.startsWith('unix@') || addr.startsWith('abns@')) return null;
  return addr;
}

function hostOf(addr: string): string {
  const v6 = /^\[([^\]]+)\]/.exec(addr) ?? /^ipv6@\[?([^\]]+)\]?:/.exec(addr);
  if (v6) return v6[1] === '::1' ? '::1' : v6[1]!;
  return addr.replace(/^ipv4@/, '').replace(/:[^:]*$/, '');
}

/** Throws (and logs the refusal) unless every address the configuration names is on loopback. */
export function assertLoopbackHaproxyConfig(cfg: string): void {
  for (const raw of cfg.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const kw = line.split(/\s+/)[0]!;
    if (['resolvers', 'nameserver', 'mailers', 'mailer', 'peers', 'peer'].includes(kw)) throw refuseOffLoopback('an HAProxy configuration with', JSON.stringify(line));
    if (kw === 'log' && !/^log\s+(\/|stdout|stderr|127\.|\[?::1\]?|localhost|global)/.test(line)) throw refuseOffLoopback('an HAProxy log target', JSON.stringify(line));
    const addr = addressOf(line);
    if (addr !== null && !LOOPBACK_HOST.test(hostOf(addr))) throw refuseOffLoopback('an HAProxy configuration with', JSON.stringify(line));
  }
}
