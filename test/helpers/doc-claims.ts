/**
 * Checkers for what the documentation claims in prose (test/docs-claims.test.ts runs them on every
 * page and on planted mistakes):
 *
 * - lists of models and detectors: a list that claims to be the whole set (it marks a default, or its
 *   sentence says "served"/"offered") is the set src/config/spec.ts allows by default; a list under
 *   "not offered"/"not served" names nothing that is served;
 * - figures: a measured figure in prose (an AUC, "N of M faces|boxes|decisions|pairs", "N/M …", a
 *   cosine "at worst") sits in a paragraph that names its results file in code, and that file holds
 *   the number at the precision printed;
 * - one machine: no user doc describes the machine a page was written on ("this shared 2-core
 *   machine", "the development VM", "here" as a place);
 * - REST routes: a `METHOD /path` of openapi.json has its method, and a list of them is all of them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { VARS } from '../../src/config/spec.js';
import { REPO_ROOT } from './shared.js';

export interface Doc {
  name: string;
  text: string;
}

const specList = (name: string) => VARS.find((v) => v.name === name)!.default.split(',');
/** What a deployment serves with the release's defaults. */
export const SERVED_MODELS = specList('FACECOMPUTE_ALLOWED_MODELS');
export const SERVED_DETECTORS = specList('FACECOMPUTE_ALLOWED_DETECTORS');
/** DeepFace 0.0.100's model and detector names (deepface/modules/modeling.py, detection.py). */
const DEEPFACE_MODELS = ['VGG-Face', 'Facenet', 'Facenet512', 'OpenFace', 'DeepFace', 'DeepID', 'Dlib', 'ArcFace', 'SFace', 'GhostFaceNet', 'Buffalo_L'];
const DEEPFACE_DETECTORS = ['opencv', 'retinaface', 'mtcnn', 'ssd', 'dlib', 'mediapipe', 'yolov8', 'yolov11n', 'yolov11s', 'yolov11m', 'yolo*', 'yunet', 'fastmtcnn', 'centerface', 'skip'];
const MODELS = new Set([...DEEPFACE_MODELS, ...SERVED_MODELS]);
const DETECTORS = new Set([...DEEPFACE_DETECTORS, ...SERVED_DETECTORS]);

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;
/** Fenced code and generated blocks removed (replaced by blank lines, so line numbers hold). */
const blank = (s: string) => s.replace(/[^\n]/g, ' ');
export function prose(text: string): string {
  return text
    .replace(/^ {0,3}(```|~~~)[\s\S]*?^ {0,3}\1\s*$/gm, blank)
    .replace(/<!-- ([a-z0-9-]+):start -->[\s\S]*?<!-- \1:end -->/g, blank);
}

interface NameList {
  names: string[];
  hasDefault: boolean;
  start: number;
}

/** Runs of three or more backticked names joined by commas, "and", "or" or semicolons. */
function nameLists(text: string): NameList[] {
  const out: NameList[] = [];
  let cur: NameList | undefined;
  let lastEnd = -1;
  for (const m of text.matchAll(/`([A-Za-z0-9_.*-]+)`( \((?:the )?default\))?/g)) {
    const gap = lastEnd < 0 ? '' : text.slice(lastEnd, m.index);
    const joined = cur && /^\s*(?:,|;)?\s*(?:(?:and|or)\s+)?$/.test(gap);
    if (!joined) {
      if (cur && cur.names.length >= 3) out.push(cur);
      cur = { names: [], hasDefault: false, start: m.index };
    }
    cur!.names.push(m[1]!);
    if (m[2]) cur!.hasDefault = true;
    lastEnd = m.index + m[0].length;
  }
  if (cur && cur.names.length >= 3) out.push(cur);
  return out;
}

/** The sentence up to `index`: back to the last full stop, colon-free heading or blank line. */
function sentenceBefore(text: string, index: number): string {
  const before = text.slice(Math.max(0, index - 400), index);
  const cut = Math.max(before.lastIndexOf('. '), before.lastIndexOf('.\n'), before.lastIndexOf('\n\n'), before.lastIndexOf('|'));
  return before.slice(cut + 1);
}

export function wrongNameLists(doc: Doc): string[] {
  const out: string[] = [];
  const text = prose(doc.text);
  for (const list of nameLists(text)) {
    // One list may hold models then detectors ("…, `SFace`; detectors `opencv`, …"): split by kind.
    const groups = [
      { kind: 'models', all: MODELS, served: SERVED_MODELS, names: list.names.filter((n) => MODELS.has(n) && !DETECTORS.has(n)) },
      { kind: 'detectors', all: DETECTORS, served: SERVED_DETECTORS, names: list.names.filter((n) => DETECTORS.has(n)) },
    ];
    if (list.names.some((n) => !MODELS.has(n) && !DETECTORS.has(n))) continue; // not a list of names
    const sentence = sentenceBefore(text, list.start);
    const where = `${doc.name}:${lineOf(doc.text, list.start)}`;
    if (/\bnot (?:offered|served)\b|\bnever served\b/i.test(sentence)) {
      for (const g of groups) for (const n of g.names) if (g.served.includes(n)) out.push(`${where}: ${n} is listed as not offered, but it is served`);
      continue;
    }
    const whole = list.hasDefault || /\b(?:served|offered)\b/i.test(sentence);
    if (!whole) continue;
    for (const g of groups) {
      if (g.names.length < 2) continue;
      const missing = g.served.filter((n) => !g.names.includes(n));
      const extra = g.names.filter((n) => !g.served.includes(n));
      if (missing.length || extra.length) out.push(`${where}: the ${g.kind} listed are not those served (${[...missing.map((n) => `missing ${n}`), ...extra.map((n) => `not served: ${n}`)].join(', ')})`);
    }
  }
  return out;
}

/** Every number a JSON results file holds. */
function numbersOf(rel: string): number[] {
  const out: number[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'number') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(JSON.parse(readFileSync(join(REPO_ROOT, rel), 'utf8')));
  return out;
}

/** `printed` (as written, e.g. "0.9987") is some number of `values` at the precision printed. */
function holds(printed: string, values: number[]): boolean {
  const p = printed.replace(/,/g, '');
  const decimals = p.includes('.') ? p.split('.')[1]!.length : 0;
  const x = Number(p);
  return values.some((v) => Math.abs(v - x) <= 0.5 * 10 ** -decimals + 1e-12 || (decimals === 0 && Math.abs(v * 100 - x) < 0.5));
}

const FIGURES: RegExp[] = [
  /\bAUC (\d\.\d+)/g,
  /\b(\d[\d,]*) (?:of|\/) (\d[\d,]*) (?:[A-Z]\w+ )?(?:faces|boxes|decisions|pairs|images)\b/g,
  /\b(\d[\d,]*)\/(\d[\d,]*) (?:faces|boxes|decisions|pairs|images)\b/g,
  /\bcosine (?:of )?(0\.\d+) at worst\b/g,
  /\btrue-accept rates? (?:of )?(0\.\d+)/g,
];
const RESULTS_FILE = /`((?:bench\/results|models\/calibration)\/[\w.-]+\.json)`/g;

/** Measured figures in prose whose paragraph names no results file holding them. */
export function unsourcedFigures(doc: Doc, exists = (rel: string) => existsSync(join(REPO_ROOT, rel)), numbers = numbersOf): string[] {
  const out: string[] = [];
  const text = prose(doc.text);
  let offset = 0;
  for (const para of text.split(/\n\s*\n/)) {
    const at = text.indexOf(para, offset);
    offset = at + para.length;
    if (/^\s*\|/.test(para)) continue; // tables carry their source in the sentence above them
    const files = [...para.matchAll(RESULTS_FILE)].map((m) => m[1]!).filter((f) => exists(f));
    for (const re of FIGURES) {
      for (const m of para.matchAll(re)) {
        const where = `${doc.name}:${lineOf(doc.text, at + m.index)}`;
        if (!files.length) {
          out.push(`${where}: "${m[0]}" names no results file (\`bench/results/….json\`) in its paragraph`);
          continue;
        }
        const values = files.flatMap((f) => numbers(f));
        for (const n of m.slice(1).filter(Boolean)) if (!holds(n, values)) out.push(`${where}: "${m[0]}": ${n} is not in ${files.join(', ')}`);
      }
    }
  }
  return out;
}

const ONE_MACHINE: RegExp[] = [
  /\bthis (?:shared |busy |loaded |quiet )?(?:\d+-core )?(?:machine|VM|laptop)\b/gi,
  /\b(?:a|the) shared \d+-core machine\b/gi,
  /\b(?:the project's |our )?development (?:machine|VM)\b/gi,
  /\b(?:un)?reachable here\b|\bnot available here\b|\bunreachable from here\b/gi,
  /\bon this CPU\b|\bthis CPU's\b/gi,
];

/** Phrases that describe the one machine a page was written on. */
export function machineSpecific(doc: Doc): string[] {
  const out: string[] = [];
  const text = prose(doc.text);
  for (const re of ONE_MACHINE) for (const m of text.matchAll(re)) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: "${m[0]}" describes one machine`);
  return out;
}

/** The REST operations openapi.json declares, as `METHOD /path`. */
export function restOperations(): string[] {
  const api = JSON.parse(readFileSync(join(REPO_ROOT, 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(api.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
}

/**
 * REST routes in prose: a `METHOD /path` of a path openapi.json declares has its method there, and a
 * list of four or more REST routes (the README's "what it serves") is every operation of openapi.json.
 */
export function wrongRoutes(doc: Doc, operations = restOperations()): string[] {
  const out: string[] = [];
  const text = prose(doc.text);
  const paths = new Set(operations.map((o) => o.split(' ')[1]!));
  const found = [...text.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g)];
  for (const m of found) {
    if (paths.has(m[2]!) && !operations.includes(`${m[1]} ${m[2]}`)) out.push(`${doc.name}:${lineOf(doc.text, m.index)}: ${m[1]} ${m[2]} is not in openapi.json (${operations.filter((o) => o.endsWith(` ${m[2]}`)).join(', ')})`);
  }
  // Runs of REST routes joined by commas: a list of what the service serves.
  let run: RegExpMatchArray[] = [];
  const flush = () => {
    const rest = run.filter((m) => paths.has(m[2]!));
    if (rest.length >= 4) {
      const listed = new Set(rest.map((m) => `${m[1]} ${m[2]}`));
      const missing = operations.filter((o) => !listed.has(o));
      if (missing.length) out.push(`${doc.name}:${lineOf(doc.text, run[0]!.index!)}: a list of the REST routes without ${missing.join(', ')}`);
    }
    run = [];
  };
  for (const m of found) {
    const prev = run.at(-1);
    if (prev && !/^\s*,\s*(?:and\s+)?$/.test(text.slice(prev.index! + prev[0].length, m.index))) flush();
    run.push(m);
  }
  flush();
  return out;
}
