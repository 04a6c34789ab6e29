/**
 * models/manifest.keras.json must agree with ../shared/weights/SOURCES.md (URLs, sizes, sha256) and with
 * what the converter and the parity fixtures say about each model.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT, SHARED_WEIGHTS_DIR } from './helpers/shared.js';

interface WeightFile { file: string; url: string; size: number; sha256: string }
interface Entry {
  name: string;
  kind: 'recognition' | 'detector';
  embedding_dim?: number;
  input_size: { w: number; h: number } | null;
  layout: string;
  color_order: string;
  normalization: string;
  weights: WeightFile[];
  converter: { script: string; args: string[]; output: string } | null;
}

const manifest = JSON.parse(readFileSync(resolve(REPO_ROOT, 'models', 'manifest.keras.json'), 'utf8')) as { models: Entry[] };

/** Rows of the "Not obtainable" table: | file | model | url | size | sha256 | */
function sources(): Map<string, WeightFile> {
  const md = readFileSync(resolve(SHARED_WEIGHTS_DIR, 'SOURCES.md'), 'utf8');
  const out = new Map<string, WeightFile>();
  for (const line of md.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 7) continue;
    const [, file, , url, size, sha] = cells;
    if (!file || !/^[0-9a-f]{64}$/.test(sha ?? '') || !url?.startsWith('http')) continue;
    out.set(file, { file, url, size: Number(size!.replace(/,/g, '')), sha256: sha! });
  }
  return out;
}

t.test('weight files match SOURCES.md exactly', async (t) => {
  const src = sources();
  t.ok(src.size >= 5, 'SOURCES.md parsed');
  for (const m of manifest.models) {
    t.ok(m.weights.length > 0, `${m.name} has weights`);
    for (const w of m.weights) t.same(w, src.get(w.file), `${m.name}: ${w.file}`);
  }
});

t.test('per-model facts', async (t) => {
  const by = new Map(manifest.models.map((m) => [m.name, m]));
  t.same([...by.keys()].sort(), ['Facenet', 'Facenet512', 'OpenFace', 'SFace', 'retinaface'].sort());
  const facts: [string, number, number, string, string][] = [
    ['Facenet', 128, 160, 'BGR', 'facenet128'],
    ['Facenet512', 512, 160, 'BGR', 'facenet512'],
    ['OpenFace', 128, 96, 'BGR', 'openface'],
  ];
  for (const [name, dim, size, colour, arch] of facts) {
    const m = by.get(name)!;
    t.equal(m.kind, 'recognition');
    t.equal(m.embedding_dim, dim, `${name} dim`);
    t.same(m.input_size, { w: size, h: size }, `${name} size`);
    t.equal(m.color_order, colour);
    t.equal(m.layout, 'NHWC');
    t.equal(m.converter?.script, 'models/converters/keras_to_onnx.py');
    t.same(m.converter?.args, ['--arch', arch, '{in}', '{out}']);
  }
  const sface = by.get('SFace')!;
  t.equal(sface.converter, null, 'SFace is ONNX already');
  t.same([sface.embedding_dim, sface.input_size, sface.layout, sface.color_order], [128, { w: 112, h: 112 }, 'NCHW', 'RGB']);
  const rf = by.get('retinaface')!;
  t.equal(rf.kind, 'detector');
  t.same(rf.converter?.args, ['--arch', 'retinaface_r50', '{in}', '{out}']);
});
