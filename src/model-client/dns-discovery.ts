/**
 * Model-server replicas from DNS: the A and AAAA records of one host name (a Kubernetes headless
 * Service lists one per ready pod), re-resolved every `intervalMs`, so replicas that join or leave are
 * followed without a restart.
 *
 * An answer that the name has no records of a family is believed (the replicas of that family are
 * gone); a failed lookup (timeout, SERVFAIL, no DNS server) keeps what that family last had, so a DNS
 * hiccup never empties the set.
 */
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Logger } from '../logging/logger.js';

/** Addresses of one family for `host`: [] when the name has none; throws when the lookup failed. */
export interface DnsResolver {
  resolve4(host: string): Promise<string[]>;
  resolve6(host: string): Promise<string[]>;
}

/** DNS answers that mean "no such records", as opposed to "could not find out". */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

/** c-ares, not getaddrinfo: no thread-pool slot per lookup, and servers can be named. */
export function systemResolver(servers: string[] = [], timeoutMs = 2000): DnsResolver {
  const r = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) r.setServers(servers);
  const family = (f: (host: string) => Promise<string[]>) => async (host: string) => {
    try {
      return await f(host);
    } catch (err) {
      if (NO_RECORDS.has((err as { code?: string }).code ?? '')) return [];
      throw err;
    }
  };
  return { resolve4: family((h) => r.resolve4(h)), resolve6: family((h) => r.resolve6(h)) };
}

export interface DnsWatchOptions {
  /** http://host[:port]: the host is resolved, the port and scheme kept. */
  url: string;
  intervalMs: number;
  resolver: DnsResolver;
  /** Called with the replicas' origins after each lookup that changed them (and after the first). */
  onChange(origins: string[]): void;
  logger?: Logger;
}

export interface DnsWatch {
  /** Settles after the first lookup, whatever its outcome. */
  readonly first: Promise<void>;
  /** Resolves again now (tests, and a caller that found no replica). */
  refresh(): Promise<void>;
  stop(): void;
}

export function watchDns(o: DnsWatchOptions): DnsWatch {
  const url = new URL(o.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const originOf = (address: string) => `${url.protocol}//${address.includes(':') ? `[${address}]` : address}:${port}`;
  const last: { v4: string[]; v6: string[] } = { v4: [], v6: [] };
  let published: string | null = null;
  let running: Promise<void> | null = null;
  let failing = false;

  async function lookup(): Promise<void> {
    if (isIP(host) !== 0) {
      publish([host]);
      return;
    }
    const [a, aaaa] = await Promise.allSettled([o.resolver.resolve4(host), o.resolver.resolve6(host)]);
    if (a.status === 'fulfilled') last.v4 = a.value;
    if (aaaa.status === 'fulfilled') last.v6 = aaaa.value;
    const errors = [a, aaaa].filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => (r.reason as { code?: string }).code ?? String(r.reason));
    if (errors.length > 0 && !failing) o.logger?.warn({ host, errors }, 'model-server DNS lookup failed; keeping the replicas last known');
    failing = errors.length > 0;
    publish([...last.v4, ...last.v6]);
  }

  function publish(addresses: string[]): void {
    const origins = [...new Set(addresses)].sort().map(originOf);
    const key = origins.join(',');
    if (key === published) return;
    published = key;
    o.onChange(origins);
  }

  const refresh = (): Promise<void> => {
    running ??= lookup()
      .catch((err: unknown) => o.logger?.warn({ err, host }, 'model-server DNS lookup failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };
  const first = refresh();
  const timer = setInterval(() => void refresh(), o.intervalMs);
  timer.unref();
  return { first, refresh, stop: () => clearInterval(timer) };
}
