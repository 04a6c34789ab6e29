import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { freePort } from './helpers/ports.js';

const BIN = resolve(REPO_ROOT, 'bin', 'facecompute.js');

function start(env: Record<string, string>) {
  const { FACECOMPUTE_TEST_DATABASE_URL: _a, FACECOMPUTE_TEST_REDIS_URL: _b, ...base } = process.env;
  const child = spawn(process.execPath, [BIN, 'console'], { env: { ...base, FACECOMPUTE_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, exited, output: () => out };
}

t.test('`facecompute console` serves, migrates its SQLite file, and stops on SIGTERM', async (t) => {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'fc-cli-'));
  const p = start({ FACECOMPUTE_CONSOLE_PORT: String(port), FACECOMPUTE_DATA_DIR: dir });
  t.teardown(() => { if (p.child.exitCode === null) p.child.kill('SIGKILL'); });
  const url = `http://127.0.0.1:${port}`;
  let res: Response | undefined;
  for (let i = 0; i < 200 && !res; i++) {
    res = await fetch(`${url}/api/signup/anonymous`, { method: 'POST' }).catch(() => undefined);
    if (!res) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(res?.status, 201, p.output());
  const { session_token } = (await res!.json()) as { session_token: string };
  const key = await fetch(`${url}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session_token}`, 'content-type': 'application/json' }, body: '{"name":"cli"}' });
  t.equal(key.status, 201);
  const { key: secret } = (await key.json()) as { key: string };
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
  t.notOk(p.output().includes(session_token) || p.output().includes(secret), 'no secret in the process output');
});

t.test('`facecompute console` refuses an unusable database URL with a clear message', async (t) => {
  const p = start({ FACECOMPUTE_CONSOLE_PORT: '0', FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-cli-')), FACECOMPUTE_DATABASE_URL: 'mysql://nope' });
  t.equal(await p.exited, 1);
  t.match(p.output(), /FACECOMPUTE_DATABASE_URL must be a postgres:\/\/ URL/);
});
