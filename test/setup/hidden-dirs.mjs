/**
 * The hidden-directories fence: where a test cannot hide ../shared behind a private mount (no
 * `unshare --mount`, as in most containers), test/helpers/no-shared.ts preloads this file through
 * NODE_OPTIONS instead. Every `fs` call whose path lies under one of TEST_HIDDEN_DIRS (a
 * path-delimiter list of real paths), directly or through a symlink, fails as if the file were not
 * there (ENOENT; `exists*` answer false), and the path is appended to TEST_HIDDEN_DIRS_LOG, which the
 * test requires to stay empty: a service that starts and answers never reached for them.
 *
 * Children inherit it with NODE_OPTIONS. It sees what goes through Node's `fs`; native code that opens
 * a path itself (ONNX Runtime, the addon) gets that path from JavaScript, which resolved it through
 * `fs` first. Plain JavaScript so it loads before tsx.
 */
import fs from 'node:fs';
import { appendFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { delimiter, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const hidden = (process.env.TEST_HIDDEN_DIRS ?? '').split(delimiter).filter(Boolean);
const logPath = process.env.TEST_HIDDEN_DIRS_LOG;
const realpathSync = fs.realpathSync.bind(fs);

function asPath(p) {
  if (typeof p === 'string') return p;
  if (p instanceof URL) return p.protocol === 'file:' ? fileURLToPath(p) : undefined;
  if (Buffer.isBuffer(p)) return p.toString();
  return undefined;
}

function under(p) {
  return hidden.some((d) => p === d || p.startsWith(`${d}/`));
}

/** The hidden directory `p` would reach, if any: by its name or, when it exists, by its real path. */
function hiddenTarget(arg) {
  const p = asPath(arg);
  if (p === undefined) return undefined;
  const abs = resolve(p);
  if (under(abs)) return abs;
  try {
    const real = realpathSync(abs);
    if (under(real)) return real;
  } catch {
    // Not there: nothing to reach.
  }
  return undefined;
}

function refuse(name, path) {
  const line = `hidden-dirs fence: pid ${process.pid} ${name}(${path})\n`;
  if (logPath) {
    try {
      appendFileSync(logPath, line);
    } catch {
      // The log is the test's; a process that cannot write it still refuses.
    }
  }
  return Object.assign(new Error(`ENOENT: no such file or directory, ${name} '${path}'`), { code: 'ENOENT', errno: -2, syscall: name, path });
}

const ONE_PATH = ['access', 'appendFile', 'chmod', 'chown', 'createReadStream', 'createWriteStream', 'lchown', 'lstat', 'mkdir', 'mkdtemp', 'open', 'openAsBlob', 'opendir', 'readdir', 'readFile', 'readlink', 'realpath', 'rm', 'rmdir', 'stat', 'statfs', 'truncate', 'unlink', 'utimes', 'watch', 'watchFile', 'writeFile'];
const TWO_PATHS = ['copyFile', 'cp', 'link', 'rename', 'symlink'];

function wrap(target, name, kind, paths) {
  const original = target[name];
  if (typeof original !== 'function') return;
  const wrapped = function (...args) {
    for (let i = 0; i < paths; i++) {
      const p = hiddenTarget(args[i]);
      if (p === undefined) continue;
      const err = refuse(name, p);
      if (kind === 'promise') return Promise.reject(err);
      if (name === 'existsSync') return false;
      const cb = args[args.length - 1];
      if (kind === 'callback' && typeof cb === 'function') {
        process.nextTick(name === 'exists' ? () => cb(false) : () => cb(err));
        return undefined;
      }
      throw err;
    }
    return original.apply(this, args);
  };
  Object.defineProperties(wrapped, Object.getOwnPropertyDescriptors(original));
  target[name] = wrapped;
}

if (hidden.length > 0 && !globalThis[Symbol.for('facecompute.hidden-dirs')]) {
  globalThis[Symbol.for('facecompute.hidden-dirs')] = true;
  for (const name of ONE_PATH) {
    wrap(fs, name, 'callback', 1);
    wrap(fs, `${name}Sync`, 'sync', 1);
    wrap(fs.promises, name, 'promise', 1);
  }
  for (const name of TWO_PATHS) {
    wrap(fs, name, 'callback', 2);
    wrap(fs, `${name}Sync`, 'sync', 2);
    wrap(fs.promises, name, 'promise', 2);
  }
  wrap(fs, 'exists', 'callback', 1);
  wrap(fs, 'existsSync', 'sync', 1);
  wrap(fs.realpathSync, 'native', 'sync', 1);
  wrap(fs.realpath, 'native', 'callback', 1);
  syncBuiltinESMExports();
}
