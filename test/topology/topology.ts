/**
 * `npm run test:topology`: the Helm chart's topology (deploy/helm/facecompute) as real processes on
 * loopback, each started as the chart starts it (`facecompute <command>` from the built bundle, the
 * configuration only through FACECOMPUTE_* variables):
 *
 *   HAProxy (Debian's package) ── gateway 1 ─┐        ┌─ model server 127.0.0.2 ┐
 *                              └─ gateway 2 ─┼─ DNS ──┤  model server 127.0.0.3 ├ internal token
 *   MCP endpoint ────────────────────────────┘        └─ (127.0.0.4, added later)┘
 *   console;  PostgreSQL (accounts) and Redis (rate limits) from scripts/test-services.sh
 *
 * The model servers share one port on 127.0.0.2-4, as pods behind a headless Service do, and the
 * gateways and the MCP endpoint find them through FACECOMPUTE_MODEL_SERVER_DNS, answered by a DNS
 * server on loopback (test/helpers/dns-stub.ts) that stands in for the cluster's DNS. HAProxy health-
 * checks the gateways' /readiness, as the chart's readiness probe does. A rolling restart follows
 * what Kubernetes does to a pod: out of the Service's endpoints (HAProxy `disable server`), a preStop
 * pause, SIGTERM (the gateway drains), a new process, back in once its /readiness answers 200.
 *
 * It shows, with assertions, and prints the figures:
 *   - allowance exact across gateways: 50 parallel calls split over both gateways against 10 credits
 *     give exactly 10 successes;
 *   - one rate limit across gateways, through Redis;
 *   - a model server killed under steady load: no client errors other than requests in flight at the
 *     kill, and traffic continues on the other;
 *   - a replica added at run time (a DNS record) takes traffic without a restart;
 *   - rolling restart of both gateways behind HAProxy under steady load with zero failed requests.
 *
 * Needs FACECOMPUTE_TEST_DATABASE_URL and FACECOMPUTE_TEST_REDIS_URL (scripts/test-services.sh), the
 * Dlib weights in ../shared/weights, /usr/sbin/haproxy, and a build (`npm run build:ts`).
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mailedToken } from '../helpers/verify-email.js';
import { REPO_ROOT, SHARED_DATA_DIR, SHARED_WEIGHTS_DIR } from '../helpers/shared.js';
import { MODELS_CACHE } from '../helpers/real-stack.js';
import { startDnsStub } from '../helpers/dns-stub.js';
import { freePort } from '../helpers/ports.js';
import { assertLoopbackHaproxyConfig } from '../helpers/fence.js';

const T0 = Date.now();
const HAPROXY = process.env['HAPROXY'] ?? '/usr/sbin/haproxy';
const DATABASE_URL = process.env['FACECOMPUTE_TEST_DATABASE_URL'] ?? '';
const REDIS_URL = process.env['FACECOMPUTE_TEST_REDIS_URL'] ?? '';
const BUNDLE = join(REPO_ROOT, 'dist', 'bundle', 'main.js');
const TOKEN = 'topology-internal-token-' + 'x7Kq2'.repeat(8);
const DNS_NAME = 'facecompute-model-server-headless.topology.test';
const RATE_LIMIT = 20;
const LOAD_WORKERS = 4;
/** A 150×150 face chip from dlib's examples (Boost licence), sent with detector_backend=skip. */
const FACE = readFileSync(join(SHARED_DATA_DIR, 'dlib-examples', 'johns', 'John_Savage', '000296_01099007.jpg'));
const REPRESENT = JSON.stringify({ img: `data:image/jpeg;base64,${FACE.toString('base64')}`, model_name: 'Dlib', detector_backend: 'skip' });

// ---- preconditions: fail loudly, never skip ---------------------------------------------------------
for (const [ok, why] of [
  [DATABASE_URL !== '' && REDIS_URL !== '', 'FACECOMPUTE_TEST_DATABASE_URL and FACECOMPUTE_TEST_REDIS_URL must be set (source scripts/test-services.sh; start_test_services)'],
  [existsSync(HAPROXY), `${HAPROXY} not found: apt-get install haproxy (scripts/bootstrap.sh does)`],
  [existsSync(BUNDLE), `${BUNDLE} not found: npm run build:ts`],
] as const) {
  if (!ok) throw new Error(`test:topology: ${why}`);
}
{
  // The processes run the bundle, as the image does: a bundle older than the sources tests old code.
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((m, e) => Math.max(m, e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs), 0);
  if (newest(join(REPO_ROOT, 'src')) > statSync(BUNDLE).mtimeMs) throw new Error('test:topology: dist/bundle is older than src/: npm run build:ts');
}

// ---- processes --------------------------------------------------------------------------------------
interface Proc {
  name: string;
  proc: ChildProcess;
  logs: string[];
  exited: Promise<number | null>;
}
const procs = new Set<Proc>();
const cleanEnv: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) cleanEnv[k] = v;

function spawnLogged(name: string, cmd: string, args: string[], env: Record<string, string>): Proc {
  const proc = spawn(cmd, args, { env: { ...cleanEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO_ROOT });
  const logs: string[] = [];
  const keep = (d: Buffer) => {
    logs.push(d.toString());
    if (logs.length > 400) logs.splice(0, logs.length - 400);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const p: Proc = { name, proc, logs, exited: new Promise((r) => proc.on('exit', (c) => r(c))) };
  procs.add(p);
  void p.exited.then(() => procs.delete(p));
  return p;
}

const facecompute = (name: string, command: string, env: Record<string, string>) => spawnLogged(name, process.execPath, [BUNDLE, command], env);

async function stop(p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill(signal);
  return p.exited;
}

t.teardown(async () => {
  await Promise.all([...procs].map((p) => stop(p, 'SIGKILL')));
  await dns.close();
});
process.on('exit', () => {
  for (const p of procs) p.proc.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, f: () => Promise<T | false | null | undefined>, ms: number, logsOf: Proc[] = []): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
    } catch {
      // not yet
    }
    for (const p of logsOf) if (p.proc.exitCode !== null) throw new Error(`${p.name} exited ${p.proc.exitCode} while waiting for ${what}:\n${p.logs.join('').slice(-4000)}`);
    if (Date.now() > end) throw new Error(`${what}: not reached in ${ms} ms\n${logsOf.map((p) => `--- ${p.name}\n${p.logs.join('').slice(-3000)}`).join('\n')}`);
    await sleep(100);
  }
}

const http = new Agent({ keepAliveTimeout: 2000, connections: 64 });
async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { headers, dispatcher: http } as RequestInit);
  const text = await r.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: r.status, body };
}
async function post(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, dispatcher: http } as RequestInit);
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: r.status, body: parsed };
}

// ---- the topology -----------------------------------------------------------------------------------
const dns = await startDnsStub();
const msPort = await freePort('127.0.0.2');
const [gwPorts, gwMetricsPorts, mcpPort, consolePort, haPort] = [[await freePort(), await freePort()], [await freePort(), await freePort()], await freePort(), await freePort(), await freePort()];
const dir = mkdtempSync(join(tmpdir(), 'fc-topology-'));
const adminSock = join(dir, 'haproxy.sock');
const lb = `http://127.0.0.1:${haPort}`;

/** What every process gets: one Secret and one ConfigMap, as in the chart. */
const common: Record<string, string> = {
  FACECOMPUTE_HOST: '127.0.0.1',
  FACECOMPUTE_LOG_LEVEL: 'warn',
  FACECOMPUTE_DATABASE_URL: DATABASE_URL,
  FACECOMPUTE_REDIS_URL: REDIS_URL,
  FACECOMPUTE_INTERNAL_TOKEN: TOKEN,
  FACECOMPUTE_WEIGHTS_DIR: SHARED_WEIGHTS_DIR,
  FACECOMPUTE_MODELS_CACHE: MODELS_CACHE,
  FACECOMPUTE_ALLOWED_MODELS: 'Dlib',
  FACECOMPUTE_DEFAULT_MODEL: 'Dlib',
  FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,skip',
  FACECOMPUTE_FREE_CALLS_ANONYMOUS: '10',
  FACECOMPUTE_FREE_CALLS_ACCOUNT: '1000000',
  // The kill test may lose every request in flight (502 upstream_lost, one strike each); the load account
  // must keep computing after it, so it may lose that many without being refused 429 too_many_strikes.
  FACECOMPUTE_STRIKE_LIMIT: String(LOAD_WORKERS + 1),
  FACECOMPUTE_SIGNUP_RATE_LIMIT: '100000',
};
/** The gateways' and the MCP endpoint's way to the model servers: the headless Service's name. */
const discovery: Record<string, string> = {
  FACECOMPUTE_MODEL_SERVER_DNS: `http://${DNS_NAME}:${msPort}`,
  FACECOMPUTE_MODEL_SERVER_DNS_SERVERS: dns.server,
  FACECOMPUTE_MODEL_SERVER_DNS_INTERVAL_MS: '500',
};

const modelServers = new Map<string, Proc>();
function startModelServer(host: string): Proc {
  const p = facecompute(`model-server ${host}`, 'model-server', {
    ...common,
    FACECOMPUTE_MODEL_SERVER_HOST: host,
    FACECOMPUTE_MODEL_SERVER_PORT: String(msPort),
    FACECOMPUTE_ORT_INTRA_OP_THREADS: '1',
  });
  modelServers.set(host, p);
  return p;
}
const msReady = (host: string) => until(`model server ${host} ready`, async () => (await get(`http://${host}:${msPort}/readiness`)).status === 200, 180_000, [modelServers.get(host)!]);

const gateways: Proc[] = [];
function startGateway(i: number, rateLimit: number): Proc {
  const p = facecompute(`gateway ${i + 1}`, 'gateway', {
    ...common,
    ...discovery,
    FACECOMPUTE_GATEWAY_PORT: String(gwPorts[i]),
    FACECOMPUTE_METRICS_PORT: String(gwMetricsPorts[i]),
    FACECOMPUTE_RATE_LIMIT_REQUESTS: String(rateLimit),
    FACECOMPUTE_RATE_LIMIT_WINDOW_MS: '120000',
    FACECOMPUTE_RATE_LIMIT_CONCURRENT: '64',
    FACECOMPUTE_DRAIN_TIMEOUT_MS: '10000',
  });
  gateways[i] = p;
  return p;
}
const gwReady = (i: number) => until(`gateway ${i + 1} ready`, async () => (await get(`http://127.0.0.1:${gwPorts[i]}/readiness`)).status === 200, 60_000, [gateways[i]!]);

/** Requests each gateway has sent to each model-server replica (its metrics port), and their state. */
async function replicaStats(i: number): Promise<Map<string, { requests: number; state: string }>> {
  const text = (await get(`http://127.0.0.1:${gwMetricsPorts[i]}/metrics`)).body as string;
  const out = new Map<string, { requests: number; state: string }>();
  for (const m of text.matchAll(/^facecompute_gateway_model_server_replica_requests\{replica="http:\/\/([\d.]+):\d+",state="(\w+)"\} (\d+)/gm)) {
    out.set(m[1]!, { requests: Number(m[3]), state: m[2]! });
  }
  return out;
}

function haproxy(cmd: string): Promise<string> {
  return new Promise((res, rej) => {
    const c = createConnection(adminSock);
    let out = '';
    c.on('data', (d) => (out += d.toString()));
    c.on('end', () => res(out));
    c.on('error', rej);
    c.write(`${cmd}\n`);
  });
}
/** HAProxy's counters for one gateway: status (UP/DOWN/MAINT), total sessions, retries, redispatches. */
async function haStat(server: string): Promise<{ status: string; stot: number; wretr: number; wredis: number; scur: number }> {
  const csv = (await haproxy('show stat')).trim().split('\n');
  const cols = csv[0]!.replace(/^# /, '').split(',');
  const row = csv.slice(1).map((l) => l.split(',')).find((r) => r[0] === 'gateways' && r[1] === server)!;
  const v = (k: string) => row[cols.indexOf(k)]!;
  return { status: v('status'), stot: Number(v('stot')), wretr: Number(v('wretr')), wredis: Number(v('wredis')), scur: Number(v('scur')) };
}

writeFileSync(
  join(dir, 'haproxy.cfg'),
  `global
    stats socket ${adminSock} mode 600 level admin
    tune.bufsize 65536
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    # A request whose connection to a gateway failed, or that got no answer at all, is retried on the
    # other (only before anything reached the client); a gateway's 503 is never retried.
    retries 2
    option redispatch 1
    retry-on conn-failure empty-response
frontend api
    bind 127.0.0.1:${haPort}
    default_backend gateways
backend gateways
    balance roundrobin
    option httpchk GET /readiness
    http-check expect status 200
    # The chart's readiness probe allows 2 s per answer (timeoutSeconds) and 2 failures; without its own
    # timeout HAProxy would allow only \`inter\` (300 ms), so on a loaded machine a slow /readiness of the
    # gateway left in rotation took it out too, and requests met "no server available" (503).
    timeout check 2s
    default-server inter 300ms fall 2 rise 2
    server gw1 127.0.0.1:${gwPorts[0]} check
    server gw2 127.0.0.1:${gwPorts[1]} check
`,
);

// ---- steady load ------------------------------------------------------------------------------------
interface Outcome {
  start: number;
  end: number;
  status: number;
  code: string;
}
class Load {
  outcomes: Outcome[] = [];
  inFlight = 0;
  private running = true;
  private workers: Promise<void>[];
  constructor(private key: string, n: number) {
    this.workers = Array.from({ length: n }, () => this.worker());
  }
  private async worker(): Promise<void> {
    while (this.running) {
      const start = Date.now();
      this.inFlight++;
      let status = 0;
      let code = '';
      try {
        const r = await post(`${lb}/represent`, REPRESENT, { authorization: `Bearer ${this.key}` });
        status = r.status;
        code = status === 200 ? (Array.isArray(r.body?.results) ? '' : 'bad_body') : String(r.body?.error ?? r.body).slice(0, 80);
      } catch (err) {
        code = `client: ${(err as Error).message}`;
      }
      this.inFlight--;
      this.outcomes.push({ start, end: Date.now(), status, code });
    }
  }
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }
  /** Outcomes of requests that started in [from, to). */
  between(from: number, to = Infinity): Outcome[] {
    return this.outcomes.filter((o) => o.start >= from && o.start < to);
  }
}
const failures = (os: Outcome[]) => os.filter((o) => o.status !== 200 || o.code !== '');
const describe = (os: Outcome[]) => {
  const f = failures(os);
  const lat = os.filter((o) => o.status === 200).map((o) => o.end - o.start).sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? 0;
  const span = os.length ? (Math.max(...os.map((o) => o.end)) - Math.min(...os.map((o) => o.start))) / 1000 : 0;
  return `${os.length} requests, ${f.length} failed${f.length ? ` (${[...new Set(f.map((o) => `${o.status} ${o.code}`))].join('; ')})` : ''}, ${(os.length / (span || 1)).toFixed(1)} req/s, p50 ${q(0.5)} ms, p95 ${q(0.95)} ms`;
};
const figures: string[] = [];
const figure = (s: string) => {
  figures.push(s);
  t.comment(s);
};

// ---- start ------------------------------------------------------------------------------------------
const tStart = Date.now();
dns.set(DNS_NAME, ['127.0.0.2', '127.0.0.3']);
// The console's own data directory: its file mailer writes the verification mails there.
const consoleData = join(dir, 'console-data');
const consoleProc = facecompute('console', 'console', { ...common, FACECOMPUTE_CONSOLE_PORT: String(consolePort), FACECOMPUTE_DATA_DIR: consoleData });
// The console migrates the database first; then everything else comes up at once.
await until('console ready', async () => (await get(`http://127.0.0.1:${consolePort}/readiness`)).status === 200, 60_000, [consoleProc]);
startModelServer('127.0.0.2');
startModelServer('127.0.0.3');
startGateway(0, RATE_LIMIT);
startGateway(1, RATE_LIMIT);
const mcpProc = facecompute('mcp', 'mcp', { ...common, ...discovery, FACECOMPUTE_MCP_PORT: String(mcpPort) });
// HAProxy is not Node: the guard cannot preload into it, so its configuration is the fence (loopback only).
assertLoopbackHaproxyConfig(readFileSync(join(dir, 'haproxy.cfg'), 'utf8'));
const haproxyProc = spawnLogged('haproxy', HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], {});
await Promise.all([msReady('127.0.0.2'), msReady('127.0.0.3')]);
await Promise.all([gwReady(0), gwReady(1)]);
await until('MCP endpoint ready', async () => (await get(`http://127.0.0.1:${mcpPort}/readiness`)).status === 200, 60_000, [mcpProc]);
await until('HAProxy sees both gateways up', async () => (await haStat('gw1')).status === 'UP' && (await haStat('gw2')).status === 'UP', 30_000, [haproxyProc]);
figure(`topology up in ${((Date.now() - tStart) / 1000).toFixed(1)} s (console, 2 model servers warmed with Dlib, 2 gateways, MCP endpoint, HAProxy)`);

// ---- accounts, through the console -------------------------------------------------------------------
const consoleUrl = `http://127.0.0.1:${consolePort}`;
async function account(anonymous: boolean): Promise<{ session: string; rest: string; mcp: string }> {
  const s = anonymous
    ? await post(`${consoleUrl}/api/signup/anonymous`, '{}')
    : await post(`${consoleUrl}/api/signup`, JSON.stringify({ email: `topology-${crypto.randomUUID()}@example.com`, password: 'correct horse battery staple' }));
  if (s.status !== 201) throw new Error(`signup: ${s.status} ${JSON.stringify(s.body)}`);
  if (!anonymous) {
    // Follow the mailed link: until then the account has the anonymous allowance.
    const token = mailedToken(consoleData, s.body.account.email);
    const v = await post(`${consoleUrl}/api/account/verify-email`, JSON.stringify({ token }));
    if (v.status !== 200) throw new Error(`verify-email: ${v.status} ${JSON.stringify(v.body)}`);
  }
  const auth = { authorization: `Bearer ${s.body.session_token}` };
  const rest = await post(`${consoleUrl}/api/keys`, JSON.stringify({ name: 'topology' }), auth);
  const mcp = await post(`${consoleUrl}/api/mcp-keys`, JSON.stringify({ name: 'topology' }), auth);
  return { session: s.body.session_token, rest: rest.body.key, mcp: mcp.body.key };
}
const freeCalls = async (a: { session: string }) => (await get(`${consoleUrl}/api/account`, { authorization: `Bearer ${a.session}` })).body.account.free_calls as { total: number; used: number; remaining: number };

// ---- the tests --------------------------------------------------------------------------------------
t.test('the model servers take only requests that carry the internal token; probes need none', async (t) => {
  for (const host of ['127.0.0.2', '127.0.0.3']) {
    const base = `http://${host}:${msPort}`;
    t.equal((await get(`${base}/internal/capabilities`)).status, 401, `${host}: no token → 401`);
    t.equal((await get(`${base}/internal/capabilities`, { 'x-facecompute-internal-token': TOKEN.replace(/x/g, 'y') })).status, 401, `${host}: wrong token → 401`);
    t.equal((await get(`${base}/internal/capabilities`, { 'x-facecompute-internal-token': TOKEN })).status, 200, `${host}: the token → 200`);
    t.same(await get(`${base}/readiness`), { status: 200, body: { status: 'ready', ready: true } }, `${host}: the kubelet's probe needs no token`);
  }
  for (const p of [...modelServers.values()]) t.notMatch(p.logs.join(''), TOKEN.slice(10, 30), 'the token is never logged');
});

t.test('one rate limit across gateways, through Redis', async (t) => {
  const a = await account(false);
  const byGateway = [0, 0];
  const statuses: number[] = [];
  for (let i = 0; i < 2 * RATE_LIMIT; i++) {
    const g = i % 2;
    const r = await post(`http://127.0.0.1:${gwPorts[g]}/represent`, REPRESENT, { authorization: `Bearer ${a.rest}` });
    statuses.push(r.status);
    if (r.status === 200) byGateway[g]!++;
    else t.match(r.body, { error: 'rate_limited' }, `call ${i + 1} (gateway ${g + 1}): 429 rate_limited`);
  }
  const ok = statuses.filter((s) => s === 200).length;
  t.equal(ok, RATE_LIMIT, `${2 * RATE_LIMIT} calls alternating over the two gateways, limit ${RATE_LIMIT} per window: exactly ${RATE_LIMIT} pass (per-gateway counters would pass all ${2 * RATE_LIMIT})`);
  t.same(statuses.slice(RATE_LIMIT), Array(RATE_LIMIT).fill(429), 'and every call after the limit is refused, on either gateway');
  t.equal((await freeCalls(a)).used, RATE_LIMIT, 'the refused calls used no credit');
  figure(`rate limit ${RATE_LIMIT}/window across 2 gateways: ${2 * RATE_LIMIT} alternating calls → ${ok} passed (gateway 1: ${byGateway[0]}, gateway 2: ${byGateway[1]}), ${2 * RATE_LIMIT - ok} × 429`);
});

t.test('reconfigure: both gateways restarted without the low rate limit', async (t) => {
  for (const i of [0, 1]) {
    t.equal(await stop(gateways[i]!), 0, `gateway ${i + 1} drained and exited 0`);
    startGateway(i, 1_000_000);
  }
  await Promise.all([gwReady(0), gwReady(1)]);
  await until('HAProxy sees both gateways up again', async () => (await haStat('gw1')).status === 'UP' && (await haStat('gw2')).status === 'UP', 30_000);
});

t.test('allowance exact across gateways: 50 parallel calls, split over both, against 10 credits', async (t) => {
  const a = await account(true);
  t.same(await freeCalls(a), { total: 10, used: 0, remaining: 10 });
  const t0 = Date.now();
  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => post(`http://127.0.0.1:${gwPorts[i % 2]}/represent`, REPRESENT, { authorization: `Bearer ${a.rest}` })));
  const ms = Date.now() - t0;
  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  t.equal(ok.length, 10, 'exactly 10 successes');
  t.equal(refused.length, 40, 'and 40 × 402');
  for (const r of refused) t.equal(r.body.error, 'insufficient_credits');
  const okBy = [0, 1].map((g) => results.filter((r, i) => i % 2 === g && r.status === 200).length);
  t.same(await freeCalls(a), { total: 10, used: 10, remaining: 0 });
  figure(`allowance: 50 parallel calls (25 per gateway) against 10 credits → ${ok.length} × 200 (gateway 1: ${okBy[0]}, gateway 2: ${okBy[1]}), ${refused.length} × 402, in ${ms} ms`);
  // Usage (issue 28): each gateway records its answers off the request path, in batches, into the one
  // accounts database; once both have flushed, the account's usage equals what the allowance says.
  const usage = await until('both gateways flushed the usage of the 50 calls', async () => {
    const u = await get(`${consoleUrl}/api/usage`, { authorization: `Bearer ${a.session}` });
    return u.status === 200 && u.body.usage.totals.total >= 50 ? u.body.usage : null;
  }, 30_000, gateways);
  t.match(usage.totals, { charged: 10, refunded: 0, refused: 40, total: 50 }, 'usage: 10 charged (the credits consumed), 40 refused, 50 in all: nothing lost or counted twice across gateways');
  t.match(usage.by_route, [{ route: '/represent', charged: 10, refused: 40, total: 50 }], 'all on /represent');
  t.equal(usage.recent.filter((r: { status: number }) => r.status === 402).length, 40, 'the recent requests list each 402');
  figure(`usage over 2 gateways: ${usage.totals.charged} charged / ${usage.totals.refused} refused / ${usage.totals.total} recorded for 50 calls against 10 credits`);
});

const loadAccount = await account(false);

t.test('the MCP endpoint computes through the same model servers and charges the same account', async (t) => {
  const before = (await freeCalls(loadAccount)).used;
  const c = new Client({ name: 'topology', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcpPort}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${loadAccount.mcp}` } } }));
  t.teardown(() => c.close());
  const r = await c.callTool({ name: 'represent_face', arguments: { img: `data:image/jpeg;base64,${FACE.toString('base64')}`, model_name: 'Dlib', detector_backend: 'skip' } });
  t.notOk(r.isError, JSON.stringify(r.content).slice(0, 300));
  const rest = await post(`${lb}/represent`, REPRESENT, { authorization: `Bearer ${loadAccount.rest}` });
  t.equal(rest.status, 200);
  const mcpEmbedding = (r.structuredContent as { results: { embedding: number[] }[] }).results[0]!.embedding;
  t.same(mcpEmbedding, rest.body.results[0].embedding, 'the same embedding as REST through HAProxy');
  t.equal((await freeCalls(loadAccount)).used, before + 2, 'one call each');
});

t.test('a model server killed under steady load: only requests in flight at the kill may fail; traffic goes on on the other', async (t) => {
  const load = new Load(loadAccount.rest, LOAD_WORKERS);
  await until('steady load', async () => load.outcomes.length >= 20, 60_000);
  const before = await Promise.all([replicaStats(0), replicaStats(1)]);
  const victim = modelServers.get('127.0.0.2')!;
  const kill = Date.now();
  const inFlightAtKill = load.inFlight;
  victim.proc.kill('SIGKILL');
  await victim.exited;
  const dead = Date.now();
  await sleep(5000);
  const snapAt = Date.now();
  const after = await Promise.all([replicaStats(0), replicaStats(1)]);
  const end = Date.now();
  await load.stop();
  // Requests that had finished before the kill, and those that were still running when it came.
  const at = load.outcomes.filter((o) => o.end < kill);
  const since = load.outcomes.filter((o) => o.end >= kill);
  // A request the victim had already received when it died is the only kind allowed to fail, and only as
  // 502 upstream_lost: the gateway does not resend a frame a model server may have died of (issue 24),
  // so a poisoned frame cannot take down a second replica. Requests the victim had not received yet are
  // sent to the survivor and succeed.
  const lost = failures(since);
  t.ok(lost.length <= inFlightAtKill, `failures after the kill (${lost.length}) ≤ requests in flight at the kill (${inFlightAtKill})`);
  t.same([...new Set(lost.map((o) => `${o.status} ${o.code}`))].filter((c) => c !== '502 upstream_lost'), [], 'and each of them is 502 upstream_lost');
  t.equal(failures(load.between(kill + 1000, end)).length, 0, 'no failure among requests started 1 s or more after the kill');
  t.equal(failures(at).length, 0, 'none that finished before it');
  const served = (s: Map<string, { requests: number }>[], host: string) => s.reduce((n, m) => n + (m.get(host)?.requests ?? 0), 0);
  const survivor = served(after, '127.0.0.3') - served(before, '127.0.0.3');
  const answered = load.outcomes.filter((o) => o.start >= dead && o.end <= snapAt && o.status === 200).length;
  t.ok(answered > 0 && survivor >= answered, `the survivor took the traffic: the gateways sent it ${survivor} requests while ${answered} client requests were answered`);
  for (const g of [0, 1]) t.equal(after[g]!.get('127.0.0.2')?.state, 'down', `gateway ${g + 1} ejected the dead replica`);
  figure(`model server killed under load (${LOAD_WORKERS} clients): before: ${describe(at)}; from the kill on: ${describe(since)}; in flight at the kill: ${inFlightAtKill}`);
});

t.test('a replica added at run time (a new DNS record) takes traffic without a restart', async (t) => {
  startModelServer('127.0.0.4');
  await msReady('127.0.0.4');
  const load = new Load(loadAccount.rest, LOAD_WORKERS);
  await until('steady load', async () => load.outcomes.length >= 10, 60_000);
  const added = Date.now();
  dns.set(DNS_NAME, ['127.0.0.2', '127.0.0.3', '127.0.0.4']);
  const firstTraffic = await until('the new replica takes traffic from both gateways', async () => {
    const s = await Promise.all([replicaStats(0), replicaStats(1)]);
    return s.every((m) => (m.get('127.0.0.4')?.requests ?? 0) > 0) && Date.now();
  }, 20_000);
  const s0 = await Promise.all([replicaStats(0), replicaStats(1)]);
  await sleep(3000);
  const s1 = await Promise.all([replicaStats(0), replicaStats(1)]);
  await load.stop();
  const delta = (host: string) => [0, 1].reduce((n, g) => n + (s1[g]!.get(host)?.requests ?? 0) - (s0[g]!.get(host)?.requests ?? 0), 0);
  const [d3, d4] = [delta('127.0.0.3'), delta('127.0.0.4')];
  t.ok(d4 > 0 && d3 > 0, `over 3 s, both live replicas took traffic (127.0.0.3: ${d3}, 127.0.0.4: ${d4})`);
  t.equal(failures(load.between(added)).length, 0, 'no failed request while it joined');
  figure(`replica added at run time: taking traffic from both gateways ${firstTraffic - added} ms after its DNS record appeared (interval 500 ms); next 3 s: 127.0.0.3 ${d3}, 127.0.0.4 ${d4} requests; load: ${describe(load.between(added))}`);
});

t.test('rolling restart of the gateways behind HAProxy under steady load: zero failed requests', async (t) => {
  const load = new Load(loadAccount.rest, LOAD_WORKERS);
  await until('steady load', async () => load.outcomes.length >= 10, 60_000);
  const begin = Date.now();
  const ha0 = { gw1: await haStat('gw1'), gw2: await haStat('gw2') };
  const steps: string[] = [];
  for (const [i, server] of [[0, 'gw1'], [1, 'gw2']] as const) {
    const s0 = Date.now();
    // Kubernetes takes a terminating pod out of the Service's endpoints while its preStop runs.
    await haproxy(`disable server gateways/${server}`);
    await until(`${server} idle in HAProxy`, async () => (await haStat(server)).scur === 0, 15_000);
    await sleep(500); // preStop
    const code = await stop(gateways[i]!);
    t.equal(code, 0, `gateway ${i + 1} drained and exited 0`);
    const s1 = Date.now();
    startGateway(i, 1_000_000);
    await gwReady(i);
    await haproxy(`enable server gateways/${server}`);
    await until(`${server} UP in HAProxy`, async () => (await haStat(server)).status === 'UP', 30_000);
    const before = (await haStat(server)).stot;
    await until(`${server} takes traffic again`, async () => (await haStat(server)).stot > before + 5, 30_000);
    steps.push(`${server}: out of rotation and drained in ${s1 - s0} ms, back and serving ${Date.now() - s1} ms later`);
  }
  await sleep(1000);
  const end = Date.now();
  await load.stop();
  const during = load.between(begin, end);
  t.equal(failures(during).length, 0, `zero failed requests during the rolling restart (${during.length} requests)`);
  t.ok(during.length >= 20, 'under load all along');
  const ha1 = { gw1: await haStat('gw1'), gw2: await haStat('gw2') };
  const retries = ha1.gw1.wretr + ha1.gw2.wretr - ha0.gw1.wretr - ha0.gw2.wretr;
  const redispatches = ha1.gw1.wredis + ha1.gw2.wredis - ha0.gw1.wredis - ha0.gw2.wredis;
  figure(`rolling restart under load (${LOAD_WORKERS} clients through HAProxy): ${describe(during)}; HAProxy retries ${retries}, redispatches ${redispatches}; ${steps.join('; ')}`);
});

t.test('figures', async (t) => {
  figure(`whole run ${((Date.now() - T0) / 1000).toFixed(1)} s on ${(await import('node:os')).cpus().length} cores (load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);
  t.pass();
  process.stdout.write(`\n# test:topology figures\n${figures.map((f) => `#   ${f}`).join('\n')}\n`);
});
