/**
 * Starts Stripe's official stripe-mock (built with `go install github.com/stripe/stripe-mock@latest`;
 * scripts/bootstrap.sh does it). stripe-mock answers from static fixtures, so a SetupIntent always
 * comes back `requires_payment_method`; `succeededSetupIntents` starts it with a copy of its own
 * bundled fixtures in which SetupIntents have succeeded, to exercise the success path.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

function goEnv(name: string): string | null {
  try {
    return execFileSync('go', ['env', name], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

export function findStripeMock(): string | null {
  const candidates = [process.env['STRIPE_MOCK_BIN'], goEnv('GOBIN') && join(goEnv('GOBIN')!, 'stripe-mock'), join(goEnv('GOPATH') ?? join(homedir(), 'go'), 'bin', 'stripe-mock'), join(homedir(), 'go', 'bin', 'stripe-mock')];
  for (const c of candidates) if (c && existsSync(c)) return c;
  return null;
}

function bundledFixtures(): string | null {
  const modcache = goEnv('GOMODCACHE') ?? join(homedir(), 'go', 'pkg', 'mod');
  const dir = join(modcache, 'github.com', 'stripe');
  if (!existsSync(dir)) return null;
  const versions = readdirSync(dir).filter((d) => d.startsWith('stripe-mock@')).sort();
  for (const v of versions.reverse()) {
    const f = join(dir, v, 'embedded', 'openapi', 'fixtures3.json');
    if (existsSync(f)) return f;
  }
  return null;
}

export interface StripeMock {
  url: string;
  stop(): Promise<void>;
}

export async function startStripeMock(bin: string, opts: { succeededSetupIntents?: boolean } = {}): Promise<StripeMock> {
  const args: string[] = [];
  if (opts.succeededSetupIntents) {
    const src = bundledFixtures();
    if (!src) throw new Error('stripe-mock fixtures not found in the Go module cache');
    const fixtures = JSON.parse(readFileSync(src, 'utf8'));
    fixtures.resources.setup_intent.status = 'succeeded';
    const file = join(mkdtempSync(join(tmpdir(), 'stripe-mock-')), 'fixtures.json');
    writeFileSync(file, JSON.stringify(fixtures));
    args.push('-fixtures', file);
  }
  const port = await freePort();
  // stripe-mock also opens HTTPS on a fixed default port unless told otherwise, which would collide
  // between parallel instances.
  const tlsPort = await freePort();
  const child: ChildProcess = spawn(bin, [...args, '-http-addr', `127.0.0.1:${port}`, '-https-addr', `127.0.0.1:${tlsPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/v1/customers`, { headers: { authorization: 'Bearer sk_test_123' } });
      await r.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error('stripe-mock did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
