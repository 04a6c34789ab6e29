/**
 * What the documentation claims in prose, held to the code and the results files (checkers in
 * test/helpers/doc-claims.ts): lists of models and detectors, measured figures, and no page that
 * describes one machine. Each checker first runs on planted mistakes, so it cannot pass by finding
 * nothing. Links, variables, codes, paths and commands are test/docs.test.ts's.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/shared.js';
import { SERVED_DETECTORS, machineSpecific, unsourcedFigures, wrongNameLists, wrongRoutes, type Doc } from './helpers/doc-claims.js';
import { llmsTxt, skillMd } from '../src/console/agent-docs.js';

const read = (rel: string) => readFileSync(join(REPO_ROOT, rel), 'utf8');
const pages = readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const files: Doc[] = ['README.md', ...pages, 'clients/python/README.md', 'clients/js/README.md'].map((name) => ({ name, text: read(name) }));
const urls = { console: 'http://localhost:8082', base: 'http://localhost:8080', mcp: 'http://localhost:8081/mcp' };
const calls = { anonymous: 10, account: 50, card: 100 };
const docs: Doc[] = [...files, { name: '/llms.txt', text: llmsTxt(urls, calls) }, { name: '/skill.md', text: skillMd(urls, calls) }];

const rest = (x: string) => x.split(': ').slice(1).join(': ');

t.test('the checkers find planted mistakes', async (t) => {
  t.ok(SERVED_DETECTORS.includes('mtcnn') && SERVED_DETECTORS.includes('fastmtcnn'), 'the served detectors come from src/config/spec.ts');
  const lists: Doc = {
    name: 'docs/planted.md',
    text: [
      'Served: models `Facenet` (default), `Facenet512`, `OpenFace`, `Dlib`, `SFace`; detectors `opencv` (default), `retinaface`, `yunet`, `skip`.',
      '',
      'Not offered: `VGG-Face`, `ArcFace`, `GhostFaceNet`; `mtcnn`, `ssd`, `centerface`.',
      '',
      'Measured with `opencv`, `yunet` and `skip` only.',
    ].join('\n'),
  };
  t.same(wrongNameLists(lists).map(rest), [
    'the detectors listed are not those served (missing mtcnn, missing fastmtcnn)',
    'mtcnn is listed as not offered, but it is served',
  ], 'a wrong detector list, and a served detector listed as not offered; a partial list that claims nothing passes');

  const figures: Doc = {
    name: 'docs/planted.md',
    text: [
      'Facenet with `yunet` separates people best (AUC 0.9875).',
      '',
      'With `mtcnn` 73 of 74 faces have the same box (`bench/results/parity-mtcnn.json`).',
      '',
      'With `fastmtcnn` 2199 of 2201 decisions agree (`bench/results/parity-mtcnn.json`).',
      '',
      'Facenet with `yunet` has an AUC 0.9875 (`models/calibration/lfw-devtrain.json`).',
    ].join('\n'),
  };
  t.same(unsourcedFigures(figures).map(rest), [
    '"AUC 0.9875" names no results file (`bench/results/….json`) in its paragraph',
    '"2199 of 2201 decisions": 2201 is not in bench/results/parity-mtcnn.json',
  ], 'a figure without its results file, and one its file does not hold');

  const routes: Doc = {
    name: 'docs/planted.md',
    text: 'It serves `POST /verify`, `POST /represent`, `GET /capabilities`, `GET /health`, `GET /readiness`.\n\nSend `GET /verify` with two images; `POST /api/keys` makes a key.',
  };
  t.same(wrongRoutes(routes).map(rest), [
    'GET /verify is not in openapi.json (POST /verify)',
    'a list of the REST routes without POST /compare',
  ], 'a route with the wrong method, and a route list that leaves one out');

  const machine: Doc = {
    name: 'docs/planted.md',
    text: 'It took 500 s on this shared 2-core machine; the development VM was idle; the canonical URL is unreachable here.\n\n```sh\necho "this machine" is code, not prose\n```',
  };
  t.same(machineSpecific(machine).map(rest), [
    '"this shared 2-core machine" describes one machine',
    '"development VM" describes one machine',
    '"unreachable here" describes one machine',
  ], 'phrases that describe one machine');
});

t.test('lists of models and detectors are the served ones', async (t) => {
  for (const doc of docs) t.same(wrongNameLists(doc), [], doc.name);
});

t.test('every measured figure in prose names its results file, which holds it', async (t) => {
  for (const doc of docs) t.same(unsourcedFigures(doc), [], doc.name);
});

t.test('REST routes are openapi.json\'s, and a list of them is all of them', async (t) => {
  for (const doc of docs) t.same(wrongRoutes(doc), [], doc.name);
});

t.test('no user doc describes one machine', async (t) => {
  for (const doc of docs) t.same(machineSpecific(doc), [], doc.name);
});

t.test("the changelog's entries are dated, newest first, none in the future", async (t) => {
  const changelog = read('docs/changelog.md');
  const releases = changelog.split(/^## /m).filter((s) => /^\d+\.\d+\.\d+/.test(s));
  t.ok(releases.length >= 1, `${releases.length} release(s)`);
  const today = new Date().toISOString().slice(0, 10);
  for (const release of releases) {
    const entries = [...release.matchAll(/^- (.*)$/gm)].map((m) => m[1]!);
    t.ok(entries.length >= 3, `${release.split('\n')[0]}: ${entries.length} entries`);
    const dates = entries.map((e) => /^\*\*(\d{4}-\d{2}-\d{2})\.\*\*/.exec(e)?.[1]);
    t.same(entries.filter((_, i) => !dates[i]), [], 'every entry starts with its date');
    const ds = dates.filter((d): d is string => !!d);
    t.same(ds, [...ds].sort().reverse(), 'newest first');
    t.ok(ds.every((d) => d <= today), `none after ${today}`);
  }
});
