/**
 * SSRF-safe fetcher for remote image URLs (contract §4). Standalone: the REST gateway and the MCP
 * endpoint both use it. Every hop (the first URL and every redirect) is checked:
 *   scheme and mode → no userinfo → host name policy → port policy → resolve ONCE → every resolved
 *   address must be public → connect to the checked address only (pinned; the connector never
 *   resolves again, so DNS rebinding cannot switch the target) → status → streamed byte cap → magic bytes.
 * No client-supplied header is forwarded. Refusals are `url_not_allowed` (400); failures are
 * `url_fetch_failed` (422); a body over the image byte limit is `image_too_large` (413).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { ServiceError } from '../../errors/index.js';
import { addressRefusal, hostnameRefusal } from './address-policy.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses. Injectable so tests use a fake DNS. */
export type LookupFn = (hostname: string) => Promise<ResolvedAddress[]>;

export interface RemoteFetchOptions {
  mode: 'allowlist' | 'public';
  /** Exact origins (scheme://host[:port]) allowed in allowlist mode; their ports are allowed in any mode. */
  allowedOrigins: readonly string[];
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** Refuse plain http:// even in public mode (the MCP endpoint's rule). */
  httpsOnly?: boolean;
  lookup?: LookupFn;
  /**
   * TEST ONLY: maps the checked (public) address and port to the socket address actually dialled, so
   * tests can reach a loopback server behind a fake public name. Production never sets it; the address
   * check happens before it is called.
   */
  testDial?: (address: string, port: number) => { host: string; port: number };
  /** Extra CA certificates (tests use a self-signed one). */
  ca?: string | Buffer;
}

export interface FetchedImage {
  bytes: Buffer;
  finalUrl: string;
  contentType: string;
}

export const defaultLookup: LookupFn = async (hostname) => {
  const r = await dnsLookup(hostname, { all: true, verbatim: true });
  return r.map((x) => ({ address: x.address, family: x.family === 6 ? 6 : 4 }));
};

function refuse(detail: string): never {
  throw new ServiceError('url_not_allowed', detail);
}

function fail(detail: string, cause?: unknown): never {
  throw new ServiceError('url_fetch_failed', detail, { cause });
}

/** True when the first bytes are those of a JPEG, PNG, GIF, BMP or WebP file. */
export function looksLikeImage(b: Buffer): boolean {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return true;
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return true;
  if (b.length >= 6 && /^GIF8[79]a$/.test(b.toString('latin1', 0, 6))) return true;
  if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) return true;
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return true;
  return false;
}

function normalizeOrigin(o: string): string {
  try {
    return new URL(o).origin;
  } catch {
    return o;
  }
}

interface CheckedTarget {
  url: URL;
  host: string;
  port: number;
  pinned: ResolvedAddress;
}

export class RemoteFetcher {
  private readonly origins: Set<string>;
  private readonly lookup: LookupFn;

  constructor(private readonly opts: RemoteFetchOptions) {
    this.origins = new Set(opts.allowedOrigins.map(normalizeOrigin));
    this.lookup = opts.lookup ?? defaultLookup;
  }

  /** Static checks of one URL (no DNS). Exported for tests and for callers that pre-validate. */
  checkUrl(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      refuse('image URL is not a valid absolute URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse(`URL scheme ${url.protocol} is not allowed`);
    if (url.username !== '' || url.password !== '') refuse('URLs with credentials (userinfo) are not allowed');
    if (this.opts.mode === 'allowlist' || this.opts.httpsOnly) {
      if (url.protocol !== 'https:') refuse('only HTTPS URLs are allowed');
    }
    if (this.opts.mode === 'allowlist') {
      if (!this.origins.has(url.origin)) refuse(`origin ${url.origin} is not in the allowlist`);
    }
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (url.port !== '' && !this.origins.has(url.origin)) refuse(`port ${url.port} is not allowed`);
    if (isIP(host)) {
      const why = addressRefusal(host);
      if (why) refuse(`host ${url.hostname} is a ${why}`);
    } else {
      const why = hostnameRefusal(host);
      if (why) refuse(`host ${url.hostname} is not allowed (${why})`);
    }
    return url;
  }

  private async resolve(url: URL, signal: AbortSignal): Promise<CheckedTarget> {
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    let addrs: ResolvedAddress[];
    if (isIP(host)) addrs = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
    else {
      try {
        addrs = await Promise.race([
          this.lookup(host.replace(/\.+$/, '')),
          new Promise<never>((_, rej) => signal.addEventListener('abort', () => rej(new Error('timeout')), { once: true })),
        ]);
      } catch (err) {
        fail(`could not resolve ${url.hostname}`, err);
      }
    }
    if (addrs.length === 0) fail(`could not resolve ${url.hostname}`);
    for (const a of addrs) {
      const why = addressRefusal(a.address);
      if (why) refuse(`host ${url.hostname} resolves to a ${why}`);
    }
    return { url, host, port, pinned: addrs[0]! };
  }

  private agentFor(t: CheckedTarget): Agent {
    const base = buildConnector({ ...(this.opts.ca ? { ca: this.opts.ca } : {}), timeout: this.opts.timeoutMs });
    const testDial = this.opts.testDial;
    const pinned = t.pinned;
    return new Agent({
      connections: 1,
      pipelining: 0,
      connect: (opts, cb) => {
        // Connect-time check: only ever dial the address that passed the policy, never re-resolve.
        const why = addressRefusal(pinned.address);
        if (why) return cb(new ServiceError('url_not_allowed', `refused to connect to a ${why}`), null);
        const dial = testDial ? testDial(pinned.address, t.port) : { host: pinned.address, port: t.port };
        const servername = isIP(t.host) ? undefined : t.host;
        return base({ ...opts, hostname: dial.host, host: dial.host, port: String(dial.port), servername } as any, cb);
      },
    });
  }

  /**
   * Fetches an image, following at most maxRedirects redirects, each re-checked. `received.bytes`
   * counts the body bytes downloaded, whether the fetch ends in an image or a refusal (the budget of
   * fetched bytes charges them, src/service/limits/fetch-budget.ts).
   */
  async fetch(raw: string, received: { bytes: number } = { bytes: 0 }): Promise<FetchedImage> {
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    let url = this.checkUrl(raw);
    for (let hop = 0; ; hop++) {
      const target = await this.resolve(url, signal);
      const agent = this.agentFor(target);
      try {
        let res: Awaited<ReturnType<typeof request>>;
        try {
          res = await request(url, {
            method: 'GET',
            dispatcher: agent,
            signal,
            headers: { accept: 'image/*', 'user-agent': 'facecompute-image-fetcher/1' },
            headersTimeout: this.opts.timeoutMs,
            bodyTimeout: this.opts.timeoutMs,
          });
        } catch (err) {
          if (err instanceof ServiceError) throw err;
          fail(signal.aborted ? 'remote image fetch timed out' : `could not fetch the image from ${url.origin}`, err);
        }
        res.body.on('error', () => undefined);
        if (res.statusCode >= 300 && res.statusCode < 400 && res.headers['location']) {
          await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
          if (hop >= this.opts.maxRedirects) fail(`too many redirects (max ${this.opts.maxRedirects})`);
          const loc = String(res.headers['location']);
          let next: string;
          try {
            next = new URL(loc, url).toString();
          } catch {
            fail('redirect to an invalid URL');
          }
          url = this.checkUrl(next);
          continue;
        }
        if (res.statusCode !== 200) {
          await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
          fail(`remote server answered HTTP ${res.statusCode}`);
        }
        const declared = Number(res.headers['content-length'] ?? NaN);
        if (Number.isFinite(declared) && declared > this.opts.maxBytes) {
          res.body.destroy();
          throw new ServiceError('image_too_large', `remote image is larger than ${this.opts.maxBytes} bytes`);
        }
        const chunks: Buffer[] = [];
        let total = 0;
        try {
          for await (const chunk of res.body) {
            total += (chunk as Buffer).length;
            received.bytes += (chunk as Buffer).length;
            if (total > this.opts.maxBytes) {
              res.body.destroy();
              throw new ServiceError('image_too_large', `remote image is larger than ${this.opts.maxBytes} bytes`);
            }
            chunks.push(chunk as Buffer);
          }
        } catch (err) {
          if (err instanceof ServiceError) throw err;
          fail(signal.aborted ? 'remote image fetch timed out' : 'the remote image download failed', err);
        }
        const bytes = Buffer.concat(chunks, total);
        // Completed, but not an image: its own code, and the call is charged (src/accounts/charging.ts).
        if (!looksLikeImage(bytes)) throw new ServiceError('url_not_image', 'the remote resource is not a JPEG, PNG, WebP, GIF or BMP image');
        return { bytes, finalUrl: url.toString(), contentType: String(res.headers['content-type'] ?? '') };
      } finally {
        agent.destroy().catch(() => undefined);
      }
    }
  }
}

export function createRemoteFetcher(opts: RemoteFetchOptions): RemoteFetcher {
  return new RemoteFetcher(opts);
}
