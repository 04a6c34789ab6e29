/**
 * A user's first run, end to end (issue 25): `bash scripts/bootstrap.sh test` ran scripts/first-run.sh
 * in its install step, because bootstrap's model fetch needs the registries and no test may reach
 * beyond loopback. That script ran the real `bash scripts/bootstrap.sh serve` with no mirror and an
 * empty models cache at the default location, stopped it, then ran `npm start`, and recorded what each
 * answered in .first-run/result.json. Here the record is held to the README's promise: both serve
 * Facenet with opencv as the defaults, not degraded, from the one models cache, and the shipped
 * samples verify as they should (same person true, two people false), with the key made before the
 * restart still working after it.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { FIRST_RUN_DIR, REGISTRY_CACHE } from './helpers/no-shared.js';

interface Verify { verified?: boolean; model?: string; detector_backend?: string; distance?: number; error?: string | null }
interface Run {
  readiness: number;
  seconds: number;
  readiness_body?: Record<string, unknown>;
  capabilities?: { default_model?: string; default_detector?: string; default_model_reason?: string | null; default_detector_reason?: string | null; allowed_models?: string[]; allowed_detectors?: string[] };
  verify_same_person?: Verify;
  verify_two_people?: Verify;
  stopped?: boolean;
}
interface FirstRun { bootstrap_serve?: Run; npm_start?: Run; models_where?: string }

const RESULT = join(FIRST_RUN_DIR, 'result.json');

function record(): FirstRun {
  if (!existsSync(RESULT)) throw new Error(`${RESULT} is missing: \`bash scripts/bootstrap.sh test\` writes it in its install step (by hand: bash scripts/first-run.sh)`);
  return JSON.parse(readFileSync(RESULT, 'utf8')) as FirstRun;
}

function servesTheDefaults(t: Tap.Test, run: Run | undefined, what: string, log: string): void {
  const tail = existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : '(no log)';
  if (!t.equal(run?.readiness, 200, `${what}: /readiness 200 (after ${run?.seconds} s); its log ends:\n${tail}`)) return;
  t.notOk(run?.readiness_body?.['degraded'], `${what}: not degraded`);
  t.match(run?.capabilities, { default_model: 'Facenet', default_detector: 'opencv' }, `${what}: Facenet with opencv, the defaults`);
  t.notOk(run?.capabilities?.default_model_reason ?? run?.capabilities?.default_detector_reason, `${what}: no default replaced by another`);
  t.ok(run?.capabilities?.allowed_models?.includes('Dlib'), `${what}: Dlib is served too (the README's example)`);
  t.match(run?.verify_same_person, { verified: true, model: 'Facenet', detector_backend: 'opencv' }, `${what}: samples/img1 and img2, one person, verify`);
  t.match(run?.verify_two_people, { verified: false, model: 'Facenet', detector_backend: 'opencv' }, `${what}: img1 and img3, two people, do not`);
}

t.test('bootstrap.sh serve, from an empty models cache and no mirror, serves the defaults', async (t) => {
  const r = record();
  servesTheDefaults(t, r.bootstrap_serve, 'bootstrap.sh serve', join(FIRST_RUN_DIR, 'bootstrap-serve.log'));
  t.equal(r.bootstrap_serve?.stopped, true, 'it stopped on SIGTERM');
  const log = readFileSync(join(FIRST_RUN_DIR, 'bootstrap-serve.log'), 'utf8');
  t.match(log, /fetch every default model and detector into .*\.first-run\/cache\/facecompute/, 'it fetched into the default location ($XDG_CACHE_HOME/facecompute), nothing of its own');
});

t.test('then npm start serves what bootstrap fetched, with the accounts it made', async (t) => {
  const r = record();
  servesTheDefaults(t, r.npm_start, 'npm start after bootstrap.sh serve', join(FIRST_RUN_DIR, 'npm-start.log'));
  t.equal(r.models_where, REGISTRY_CACHE, '`facecompute models where` is the cache both used');
  t.equal(resolve(REPO_ROOT, '.first-run', 'cache', 'facecompute'), REGISTRY_CACHE);
});
