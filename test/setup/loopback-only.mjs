/**
 * The loopback guard: preloaded into every test process (tap's `node-arg`) and, through NODE_OPTIONS
 * and PYTHONPATH, into every Node and Python child a test starts. No test may send a packet beyond
 * loopback, so before any packet leaves:
 *   - `net`/`tls` connects (every HTTP client in Node ends there: http, undici, pg, ioredis) to an
 *     address outside 127.0.0.0/8 and ::1 are refused;
 *   - `dns.lookup` of any name but `localhost` is refused (a lookup asks the system resolver, which is
 *     not on loopback), and a lookup that answers a non-loopback address is refused;
 *   - `dns.resolve*` and `Resolver` queries are refused unless every configured server is on loopback
 *     (the tests' DNS stub is);
 *   - UDP sends and connects (`dgram`) to a non-loopback address are refused.
 * A refusal fails loudly: the caller gets an error whose message starts with `loopback guard:`, the
 * process prints it with a stack, appends it to TEST_LOOPBACK_GUARD_LOG when set (the test
 * runner checks that file), and exits non-zero even if the caller swallowed the error. Where it was
 * asked to go is recorded, so a test can assert on it (test/helpers/loopback-guard.ts).
 *
 * Children inherit the guard: the environment of every spawned process gets NODE_OPTIONS --import of
 * this file, PYTHONPATH with test/setup/python (its sitecustomize does the same for Python), GOPROXY=off
 * with GOSUMDB=off and GOTOOLCHAIN=local (Go builds use only the module cache bootstrap.sh filled), pip
 * without an index unless it is pointed at a loopback one, cargo offline, npm without its update check,
 * test/setup/bin first on PATH (its curl refuses and logs URLs beyond loopback and proxies the rest to a
 * closed loopback port), and no proxy variables. Chromium is fenced by test/helpers/browser.ts, HAProxy
 * by test/helpers/fence.ts; test/fence.test.ts proves each kind of process.
 *
 * Plain JavaScript on purpose: it must load before tsx and in children that have no TypeScript loader.
 */
import net from 'node:net';
import dns from 'node:dns';
import dgram from 'node:dgram';
import childProcess from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { fileURLToPath } from 'node:url';

const STATE_KEY = Symbol.for('facecompute.loopback-guard');
const GUARD_URL = import.meta.url;
const PYTHON_DIR = fileURLToPath(new URL('./python', import.meta.url));
const BIN_DIR = fileURLToPath(new URL('./bin', import.meta.url));
const PREFIX = 'loopback guard:';

/** Shared with test/helpers/loopback-guard.ts through the global symbol registry. */
const state = globalThis[STATE_KEY] ?? {
  /** Every refusal since start: { kind, target, expected }. */
  refused: [],
  /** While > 0 (a test proving the guard), refusals are expected and do not fail the process. */
  expecting: 0,
  /** While expecting, every connect attempt, allowed or not: { host, port, allowed }. */
  attempts: [],
  installed: false,
};
globalThis[STATE_KEY] = state;

export function isLoopbackAddress(address) {
  if (typeof address !== 'string') return false;
  let a = address.trim().toLowerCase();
  if (a.startsWith('[') && a.endsWith(']')) a = a.slice(1, -1);
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  if (net.isIPv4(a)) return a.split('.')[0] === '127';
  if (net.isIPv6(a)) {
    if (a === '::1' || a === '0:0:0:0:0:0:0:1') return true;
    const mapped = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a) ?? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
    return mapped !== null && mapped[1].split('.')[0] === '127';
  }
  return false;
}

/** Names the system resolver answers from /etc/hosts with loopback, without a packet. */
function isLoopbackName(name) {
  const n = String(name).toLowerCase().replace(/\.$/, '');
  return n === 'localhost' || n.endsWith('.localhost');
}

function refusal(kind, target) {
  const expected = state.expecting > 0 || process.env.TEST_LOOPBACK_GUARD_EXPECT === '1';
  const message = `${PREFIX} refused ${kind} ${target} (test processes may reach only 127.0.0.0/8 and ::1)`;
  const err = new Error(message);
  err.code = 'ELOOPBACKGUARD';
  state.refused.push({ kind, target, expected });
  if (!expected) {
    process.stderr.write(`\n${err.stack}\n`);
    const log = process.env.TEST_LOOPBACK_GUARD_LOG;
    if (log) {
      try {
        appendFileSync(log, `${new Date().toISOString()} pid ${process.pid} ${process.argv.slice(1).join(' ')}: ${message}\n`);
      } catch {
        // The log is a second channel; the error and the exit status still report the refusal.
      }
    }
  }
  return err;
}

function unexpectedRefusals() {
  return state.refused.filter((r) => !r.expected);
}

// ---- environment inherited by children --------------------------------------------------------------

const PROXY_VARS = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'FTP_PROXY', 'http_proxy', 'https_proxy', 'all_proxy', 'ftp_proxy'];

function loopbackUrl(value) {
  try {
    const host = new URL(value).hostname;
    return isLoopbackAddress(host) || isLoopbackName(host);
  } catch {
    return false;
  }
}

/** Returns a copy of `env` that carries the guard into a child, whatever its language. */
export function guardedEnv(env) {
  const out = { ...env };
  const importFlag = `--import=${GUARD_URL}`;
  const nodeOptions = out.NODE_OPTIONS ?? '';
  if (!nodeOptions.includes(GUARD_URL)) out.NODE_OPTIONS = `${importFlag} ${nodeOptions}`.trim();
  const pyPath = out.PYTHONPATH ?? '';
  if (!pyPath.split(':').includes(PYTHON_DIR)) out.PYTHONPATH = pyPath ? `${PYTHON_DIR}:${pyPath}` : PYTHON_DIR;
  out.GOPROXY = 'off';
  out.GOSUMDB = 'off';
  out.GOTOOLCHAIN = 'local';
  out.GOFLAGS = '-mod=readonly';
  out.CARGO_NET_OFFLINE = 'true';
  // npm asks its registry for a newer npm after each command; outside the namespace the guard refuses it.
  out.NPM_CONFIG_UPDATE_NOTIFIER = 'false';
  const path = out.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  if (!path.split(':').includes(BIN_DIR)) out.PATH = `${BIN_DIR}:${path}`;
  for (const k of PROXY_VARS) delete out[k];
  out.NO_PROXY = '*';
  out.no_proxy = '*';
  // pip may use an index only on loopback (the tests' local PyPI); otherwise none at all.
  if (!(out.PIP_INDEX_URL && loopbackUrl(out.PIP_INDEX_URL))) {
    delete out.PIP_INDEX_URL;
    out.PIP_NO_INDEX = '1';
  }
  if (out.PIP_EXTRA_INDEX_URL && !loopbackUrl(out.PIP_EXTRA_INDEX_URL)) delete out.PIP_EXTRA_INDEX_URL;
  if (process.env.TEST_LOOPBACK_GUARD_LOG && !out.TEST_LOOPBACK_GUARD_LOG) {
    out.TEST_LOOPBACK_GUARD_LOG = process.env.TEST_LOOPBACK_GUARD_LOG;
  }
  return out;
}

// ---- net and tls -------------------------------------------------------------------------------------

/** Wraps a lookup function so that every address it answers must be on loopback. */
function guardedLookup(original, defaultLookup, allowUnspecified = false) {
  return function lookup(hostname, options, callback) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    if (defaultLookup && !net.isIP(hostname) && !isLoopbackName(hostname)) {
      const err = refusal('a DNS lookup of', JSON.stringify(hostname));
      process.nextTick(callback, err);
      return;
    }
    original(hostname, options, (err, address, family) => {
      if (err) return callback(err, address, family);
      const list = Array.isArray(address) ? address.map((a) => a.address) : [address];
      const bad = list.find((a) => !isLoopbackAddress(a) && !(allowUnspecified && (a === '0.0.0.0' || a === '::')));
      if (bad !== undefined) return callback(refusal('a connection to', `${bad} (the address ${hostname} resolved to)`));
      callback(null, address, family);
    });
  };
}

/** Patches the modules once per process, however many times this file is imported. */
function install() {
  const originalLookup = dns.lookup;
  const originalConnect = net.Socket.prototype.connect;

  net.Socket.prototype.connect = function guardedConnect(...args) {
    const normalized = Array.isArray(args[0]) ? args[0] : net._normalizeArgs(args);
    const options = normalized[0] ?? {};
    const cb = normalized[1];
    // A Unix socket, as net itself decides it (a truthy path): npm's agent passes `path: null` with a host.
    if (options.path || options.fd !== undefined) return originalConnect.apply(this, args);
    const host = options.host ?? 'localhost';
    const port = options.port;
    if (net.isIP(host)) {
      const allowed = isLoopbackAddress(host);
      if (state.expecting > 0) state.attempts.push({ host, port: Number(port), allowed });
      if (!allowed) {
        const err = refusal('a connection to', `${host}:${port}`);
        this.connecting = true;
        process.nextTick(() => this.destroy(err));
        return this;
      }
      return originalConnect.apply(this, args);
    }
    // A name: resolved by the caller's lookup (a test's stub) or the default one, and either way every
    // answer must be on loopback before the socket dials it.
    const lookup = guardedLookup(options.lookup ?? originalLookup, options.lookup === undefined);
    const recording = state.expecting > 0
      ? (h, o, c) => lookup(h, o, (err, address, family) => {
          const list = Array.isArray(address) ? address.map((a) => a.address) : address ? [address] : [];
          for (const a of list) state.attempts.push({ host: a, port: Number(port), allowed: isLoopbackAddress(a) });
          c(err, address, family);
        })
      : lookup;
    const patched = { ...options, lookup: recording };
    return cb ? originalConnect.call(this, patched, cb) : originalConnect.call(this, patched);
  };

  // ---- dns -----------------------------------------------------------------------------------------------

  // The module-level lookups refuse names the system resolver would have to ask about; an IP literal
  // resolves to itself without a packet, and servers also look up the address they listen on.
  dns.lookup = function lookup(hostname, options, callback) {
    if (!net.isIP(hostname) && !isLoopbackName(hostname)) {
      const cb = typeof options === 'function' ? options : callback;
      process.nextTick(cb, refusal('a DNS lookup of', JSON.stringify(hostname)));
      return undefined;
    }
    return originalLookup(hostname, options, callback);
  };
  const originalPromisesLookup = dns.promises.lookup;
  dns.promises.lookup = async function lookup(hostname, options) {
    if (!net.isIP(hostname) && !isLoopbackName(hostname)) throw refusal('a DNS lookup of', JSON.stringify(hostname));
    return originalPromisesLookup(hostname, options);
  };

  function serverHost(server) {
    // getServers() gives "1.2.3.4", "1.2.3.4:53", "::1" or "[::1]:53".
    if (server.startsWith('[')) return server.slice(1, server.indexOf(']'));
    if (net.isIPv6(server)) return server;
    return server.split(':')[0];
  }

  function nonLoopbackServer(servers) {
    return servers.find((s) => !isLoopbackAddress(serverHost(s)));
  }

  const RESOLVE_METHODS = Object.getOwnPropertyNames(dns.Resolver.prototype).filter((k) => /^(resolve|reverse)/.test(k));

  function guardResolverPrototype(proto, isPromise) {
    for (const name of RESOLVE_METHODS) {
      const original = proto[name];
      if (typeof original !== 'function') continue;
      proto[name] = function guardedResolve(...args) {
        const bad = nonLoopbackServer(this.getServers());
        if (bad !== undefined) {
          const err = refusal('a DNS query to', `${bad} (${name} ${JSON.stringify(args[0])})`);
          if (isPromise) return Promise.reject(err);
          const cb = args.findLast((a) => typeof a === 'function');
          if (cb) process.nextTick(cb, err);
          return undefined;
        }
        return original.apply(this, args);
      };
    }
  }
  guardResolverPrototype(dns.Resolver.prototype, false);
  guardResolverPrototype(dns.promises.Resolver.prototype, true);
  // The module-level functions are bound to a default resolver at load time, so they need their own wrap.
  for (const name of RESOLVE_METHODS) {
    for (const [target, isPromise] of [[dns, false], [dns.promises, true]]) {
      const original = target[name];
      if (typeof original !== 'function') continue;
      target[name] = function guardedResolve(...args) {
        const bad = nonLoopbackServer(target.getServers());
        if (bad !== undefined) {
          const err = refusal('a DNS query to', `${bad} (${name} ${JSON.stringify(args[0])})`);
          if (isPromise) return Promise.reject(err);
          const cb = args.findLast((a) => typeof a === 'function');
          if (cb) process.nextTick(cb, err);
          return undefined;
        }
        return original.apply(target, args);
      };
    }
  }

  // ---- dgram ---------------------------------------------------------------------------------------------

  const originalCreateSocket = dgram.createSocket;
  dgram.createSocket = function createSocket(type, listener) {
    const options = typeof type === 'string' ? { type } : { ...type };
    // dgram resolves every send, connect and bind address through this lookup, IP literals included;
    // the unspecified address is what an implicit bind uses, and binding sends nothing.
    options.lookup = guardedLookup(options.lookup ?? originalLookup, false, true);
    return originalCreateSocket.call(this, options, listener);
  };

  // ---- child processes ---------------------------------------------------------------------------------

  const originalSpawn = childProcess.ChildProcess.prototype.spawn;
  childProcess.ChildProcess.prototype.spawn = function guardedSpawn(options) {
    // spawn, fork, exec and execFile all end here with the environment as "KEY=value" pairs.
    if (options && Array.isArray(options.envPairs)) {
      const env = {};
      for (const pair of options.envPairs) {
        const i = pair.indexOf('=');
        if (i > 0) env[pair.slice(0, i)] = pair.slice(i + 1);
      }
      options.envPairs = Object.entries(guardedEnv(env)).map(([k, v]) => `${k}=${v}`);
    }
    return originalSpawn.call(this, options);
  };

  /** spawnSync, execSync and execFileSync take another path: their options get the guarded env here. */
  function wrapSync(name) {
    const original = childProcess[name];
    childProcess[name] = function guardedSync(...args) {
      // execSync(command, options); spawnSync and execFileSync(file, [args], [options]).
      const at = name === 'execSync' || (args.length > 1 && !Array.isArray(args[1]) && typeof args[1] === 'object' && args[1] !== null) ? 1 : 2;
      if (name !== 'execSync' && at === 2 && args.length < 2) args[1] = [];
      const options = args[at] ?? {};
      args[at] = { ...options, env: guardedEnv(options.env ?? process.env) };
      return original.apply(this, args);
    };
  }
  for (const name of ['spawnSync', 'execSync', 'execFileSync']) wrapSync(name);

  // ---- install -------------------------------------------------------------------------------------------

  const env = guardedEnv(process.env);
  for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
  Object.assign(process.env, env);
  syncBuiltinESMExports();

  // For fences that run in this process on another's behalf (Chromium's request routing).
  state.refuse = (kind, target) => refusal(kind, target);
  state.installed = true;
  process.on('exit', (code) => {
    const bad = unexpectedRefusals();
    if (bad.length === 0) return;
    process.stderr.write(`\n${PREFIX} ${bad.length} refused attempt(s) to leave loopback in this process:\n`);
    for (const r of bad) process.stderr.write(`  ${r.kind} ${r.target}\n`);
    if (code === 0) process.exitCode = 1;
  });
}

if (!state.installed) install();
