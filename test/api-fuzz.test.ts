/**
 * Property-based OpenAPI fuzzing of a live `facecompute serve` (issue 15, item 16): Schemathesis, pinned
 * with hashes in test/api-fuzz/requirements.txt and installed by scripts/bootstrap.sh into
 * .venvs/schemathesis, reads the document the console serves (its `servers` are this deployment's
 * gateway: FACECOMPUTE_PUBLIC_BASE_URL, else http://HOST:GATEWAY_PORT) and drives every operation with
 * an anonymous agent's key and a large allowance. test/api-fuzz/hooks.py gives its schema-valid cases
 * real images and vectors the server computed, so that they reach compute.
 *
 * Checks: no 5xx; responses, status codes, content types and headers as documented; requests the
 * document forbids are refused (413, the contract's answer for a request over a limit, counts as a
 * refusal: test/api-fuzz/schemathesis.toml); auth is enforced; required headers are required. Not checked, by
 * design: `unsupported_method` (the contract answers any other method with 404 not_found, not 405) and
 * `positive_data_acceptance` (a schema cannot say "an image with a face" or "as many numbers as the
 * model has dimensions": such requests get their documented 4xx).
 *
 * Bounded: API_FUZZ_EXAMPLES examples per operation and phase (default 60; about two to three minutes
 * with serve's start on two cores), a new seed each run (printed; API_FUZZ_SEED replays one).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'tap';
import { REPO_ROOT, ROBUSTNESS_DIR } from './helpers/shared.js';
import { modelServerEnv } from './helpers/real-stack.js';
import { freePort } from './helpers/ports.js';
import { makeUniformPng } from './helpers/images.js';

const ST = resolve(REPO_ROOT, '.venvs', 'schemathesis', 'bin', 'st');
const EXAMPLES = Number(process.env['API_FUZZ_EXAMPLES'] || 60);
const SEED = process.env['API_FUZZ_SEED'] || String(Math.floor(Math.random() * 2 ** 31));
const CHECKS = ['not_a_server_error', 'status_code_conformance', 'content_type_conformance', 'response_headers_conformance', 'response_schema_conformance', 'negative_data_rejection', 'ignored_auth', 'missing_required_header'];

/** Real inputs: faces in several formats (their vectors are computed below), no face, a truncated file, a uniform image. */
const FACES = ['tiny/blazeface_pytorch__1face.png', 'webp/compreface__imgtools_test_files__einstein.webp', 'other_format/compreface__imgtools_test_files__einstein.gif', 'grayscale/face-api.js__examples__images__sheldon__sheldon1.png'].map((p) => join(ROBUSTNESS_DIR, p));
const OTHERS = ['no_face/face-api.js__test__images__white.png', 'corrupt/compreface__imgtools_test_files__truncated.jpg', 'other_format/compreface__imgtools_test_files__einstein.bmp'].map((p) => join(ROBUSTNESS_DIR, p));

test('Schemathesis finds no failure against a live serve', { timeout: 900_000 }, async (t) => {
  if (!existsSync(ST)) {
    t.fail(`${ST} is missing: scripts/bootstrap.sh installs it (python3 -m venv .venvs/schemathesis && .venvs/schemathesis/bin/python -m pip install --require-hashes --no-deps -r test/api-fuzz/requirements.txt)`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'fc-api-fuzz-'));
  const [gateway, mcp, consolePort, modelServer] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, modelServerEnv(modelServer), {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(gateway),
    FACECOMPUTE_MCP_PORT: String(mcp),
    FACECOMPUTE_CONSOLE_PORT: String(consolePort),
    FACECOMPUTE_DATA_DIR: join(dir, 'data'),
    // A key with a large allowance: the fuzzer must not stop at 402 or 429.
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000',
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000',
  });
  const logs: string[] = [];
  const proc = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, 'src/cli/main.ts'), 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d: Buffer) => logs.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => logs.push(d.toString()));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${gateway}`;
  const consoleBase = `http://127.0.0.1:${consolePort}`;
  const deadline = Date.now() + 240_000;
  let ready = false;
  while (Date.now() < deadline && proc.exitCode === null) {
    ready = (await fetch(`${base}/readiness`).catch(() => null))?.status === 200;
    if (ready) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (!ready) {
    t.fail(`serve not ready: ${logs.join('').slice(-4000)}`);
    return;
  }

  // The served document names this deployment's gateway.
  const doc = (await (await fetch(`${consoleBase}/openapi.json`)).json()) as { servers: Array<{ url: string }> };
  t.same(doc.servers.map((s) => s.url), [base], 'servers: http://HOST:GATEWAY_PORT');

  const session = (await (await fetch(`${consoleBase}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const keyRes = await fetch(`${consoleBase}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session.session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'api-fuzz' }) });
  const { key } = (await keyRes.json()) as { key: string };

  // Real vectors: the faces' embeddings under each served model.
  const caps = (await (await fetch(`${base}/capabilities`)).json()) as { allowed_models: string[]; allowed_detectors: string[] };
  const vectors: Record<string, number[][]> = {};
  for (const model of caps.allowed_models) {
    vectors[model] = [];
    for (const face of FACES) {
      const r = await fetch(`${base}/represent`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img: readFileSync(face).toString('base64'), model_name: model, enforce_detection: false }) });
      const body = (await r.json()) as { results: Array<{ embedding: number[] }> };
      t.equal(r.status, 200, `${model} embedding of ${face}`);
      vectors[model]!.push(...(body.results ?? []).map((f) => f.embedding));
    }
  }
  const uniform = join(dir, 'uniform.png');
  writeFileSync(uniform, makeUniformPng(64, 64, 128));
  const fixtures = join(dir, 'fixtures.json');
  writeFileSync(fixtures, JSON.stringify({ images: [...FACES, ...OTHERS, uniform], faces: FACES.length, vectors, models: caps.allowed_models, detectors: caps.allowed_detectors }));

  const har = join(dir, 'run.har');
  const args = [
    '--config-file', resolve(REPO_ROOT, 'test', 'api-fuzz', 'schemathesis.toml'),
    'run', `${consoleBase}/openapi.json`, '--url', doc.servers[0]!.url,
    '-H', `Authorization: Bearer ${key}`,
    '--checks', CHECKS.join(','),
    '--phases', 'examples,coverage,fuzzing',
    '--max-examples', String(EXAMPLES), '--seed', SEED, '--workers', '2',
    '--continue-on-failure', '--generation-database', 'none', '--no-color', '--output-sanitize', 'true',
    '--request-timeout', '120', '--report', 'har', '--report-har-path', har,
  ];
  t.comment(`schemathesis seed ${SEED} (API_FUZZ_SEED=${SEED} replays it), ${EXAMPLES} examples per operation`);
  const out: string[] = [];
  const st = spawn(ST, args, {
    env: { ...env, FC_API_FUZZ_FIXTURES: fixtures, SCHEMATHESIS_HOOKS: 'hooks', PYTHONPATH: resolve(REPO_ROOT, 'test', 'api-fuzz') },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: dir, // its state (.schemathesis/) stays out of the checkout
  });
  st.stdout.on('data', (d: Buffer) => out.push(d.toString()));
  st.stderr.on('data', (d: Buffer) => out.push(d.toString()));
  const killer = setTimeout(() => st.kill('SIGKILL'), 700_000);
  // A spawn that fails (ENOENT: no venv, or a venv moved so that `st`'s shebang points nowhere) emits
  // 'error' and never 'exit': without this the test would wait for the killer instead of failing.
  const rc = await new Promise<number | null>((r) => {
    st.once('exit', (code) => r(code));
    st.once('error', (err) => {
      out.push(`could not run ${ST}: ${err.message}\n`);
      r(null);
    });
  });
  clearTimeout(killer);
  const text = out.join('');
  const summary = text.slice(text.lastIndexOf('SUMMARY'));
  t.equal(rc, 0, `schemathesis exit status (seed ${SEED})\n${rc === 0 ? summary : text.slice(-20_000)}`);
  t.notMatch(text, /Server error|ST1\d\d|ST2\d\d/, 'no failure reported');

  // The hooks did their job: every compute operation reached compute with real inputs, in JSON and in
  // multipart bodies. The examples phase sends one case per operation and media type that must compute
  // (hooks.py, KNOWN_GOOD), so each pair below holds whatever the seed; the fuzzing phase's swapped cases
  // add many more (how many varies with the seed: about 200 in all on 2026-11-26).
  type Entry = { request: { method: string; url: string; headers: Array<{ name: string; value: string }> }; response: { status: number; content?: { text?: string } } };
  const entries = (JSON.parse(readFileSync(har, 'utf8')) as { log: { entries: Entry[] } }).log.entries;
  const kindOf = (e: Entry) => e.request.headers.find((h) => h.name.toLowerCase() === 'content-type')?.value.split(';')[0] ?? '';
  const posts = (path: string, kind: string) => entries.filter((e) => e.request.method === 'POST' && new URL(e.request.url).pathname === path && kindOf(e) === kind);
  /** What the operation's other answers were, so that a failure says why nothing computed. */
  const histogram = (list: Entry[]) => {
    const counts = new Map<string, number>();
    for (const e of list) {
      let code = '';
      try {
        code = (JSON.parse(e.response.content?.text ?? '') as { error?: string }).error ?? '';
      } catch {
        // a non-JSON answer: its status alone
      }
      const key = `${e.response.status} ${code}`.trim();
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} × ${k}`).join(', ');
  };
  let computedInAll = 0;
  for (const path of ['/verify', '/represent', '/compare']) {
    for (const kind of ['application/json', 'multipart/form-data']) {
      const sent = posts(path, kind);
      const ok = sent.filter((e) => e.response.status === 200).length;
      computedInAll += ok;
      t.ok(ok > 0, `POST ${path} as ${kind}: ${ok} answers of 200 (seed ${SEED}; all answers: ${histogram(sent)})`);
    }
  }
  t.ok(computedInAll > 6, `the fuzzing phase reached compute too: ${computedInAll} answers of 200 in all, 6 of them the explicit cases`);
  t.notOk(entries.some((e) => e.response.status >= 500), 'no 5xx in the whole run');
  t.notMatch(logs.join(''), /"level":50/, 'serve logged no error');
  proc.kill('SIGTERM');
});
