/**
 * One source for every parity figure the documentation states: the results files the measuring tools
 * write (bench/results/parity-*.json, fallback-rule-*.json, models/calibration/lfw-devtrain.json) and
 * the versions the reference fixtures record (test/fixtures). The README's tables and figure sentences
 * are rendered from them here (tools/docs/blocks.ts puts them between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->` markers), by
 *
 *   node --import tsx scripts/update-readme-figures.ts
 *
 * and test/readme-figures.test.ts fails when a document's block differs from its rendering. The parity
 * tests recompute what CI can afford and hold it to the same files, with the margins below (which the
 * rendered text states). So a figure changes in one place: rerun its tool, then the script above.
 *
 * Why results files rather than a test that parses the README: the tools already write them, the
 * figures outlive the README's layout (the blocks can move to docs/ pages: every Markdown file under
 * docs/ is rendered too), and a rendered table cannot be edited out of step with its data by hand.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isJsonFile, mtcnnFixture, readJsonFile } from './fixture-files.js';

export const REPO = join(import.meta.dirname, '..', '..');

/**
 * How closely CI must reproduce a recorded figure on any x86-64 CPU. Counts of images and pairs are exact;
 * agreements with DeepFace (faces, decisions) at least the recorded ones (test/helpers/parity-rows.ts);
 * IoUs come from integer boxes and are exact. Cosines move with the
 * kernels ONNX Runtime picks by CPU (AVX2, AVX-512: another summation order): a float32 embedding moves
 * by a relative δ of a few roundings (2^-24 each) and a cosine by at most δ. 1e-6 is ~17 roundings, 40×
 * the largest move seen (2.4e-8, Zen 5 against the recording machine); docs/parity.md, "On other CPUs".
 */
export const MARGIN = { cosine: 1e-6, iou: 0 } as const;

/** The documents that may hold rendered blocks. */
export function documents(): string[] {
  const docs = join(REPO, 'docs');
  const pages = existsSync(docs) ? readdirSync(docs).filter((f) => f.endsWith('.md')).map((f) => join('docs', f)) : [];
  return ['README.md', ...pages];
}

export function results<T = any>(rel: string): T {
  return JSON.parse(readFileSync(join(REPO, rel), 'utf8')) as T;
}

export const RESULTS = {
  dlib: 'bench/results/parity-dlib.json',
  dlibMaxSide: 'bench/results/parity-dlib-maxside1024.json',
  dlibChips: 'bench/results/parity-dlib-chips.json',
  facenet: 'bench/results/parity-facenet.json',
  service: 'bench/results/parity-service-dlib.json',
  fallbackDlib: 'bench/results/fallback-rule-dlib.json',
  fallbackFacenet: 'bench/results/fallback-rule-facenet.json',
  calibration: 'models/calibration/lfw-devtrain.json',
  mtcnn: 'bench/results/parity-mtcnn.json',
} as const;

/** Prose is wrapped as the README is, at 110 columns; tables are not. */
export function wrap(text: string, width = 110): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join('\n');
}

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
const thousands = (n: number) => n.toLocaleString('en-US');
const of = (a: number, b: number) => `${a} / ${b}`;
const code = (s: string) => `\`${s}\``;
/** A cosine: 1 − x for the float-noise ones (closer to 1 than 1e-9), else to `decimals`. */
const cos = (c: number, decimals: number) => (1 - c < 1e-9 && c !== 1 ? `1 − ${(1 - c).toExponential(1)}` : c.toFixed(decimals));
/** DeepFace's thresholds as DeepFace writes them: 0.40, 10, 0.80. */
const threshold = (t: number) => (Number.isInteger(t) ? String(t) : t.toFixed(2));
const METRICS = ['cosine', 'euclidean', 'euclidean_l2'] as const;

/** The sentence that says how CI holds the tables below it to their results files. */
function margins(tests: string[], file: string): string {
  return wrap(
    `In CI, ${tests.map(code).join(' and ')} recompute${tests.length === 1 ? 's' : ''} this table from the committed DeepFace outputs and ` +
    `fail${tests.length === 1 ? 's' : ''} when an image or pair count differs from it, when fewer faces, images or pairs agree with DeepFace than it ` +
    `records or others differ (another CPU may agree more: logged), or a cosine moves ` +
    `by more than ${MARGIN.cosine.toExponential(0)} (an IoU by anything) from the value in ${code(file)}, which this table is generated from.`
  );
}

function dlibTable(): string {
  const r = results(RESULTS.dlib).deepface_images;
  const pairs = r.opencv.pairs_all.pairs as number;
  const rows = ['opencv', 'yunet', 'skip'].map((det) => {
    const d = r[det];
    const iou = det === 'skip' ? '(w/h quirk, below)' : `${d.iou_median.toFixed(4)} / ${d.iou_min.toFixed(4)}`;
    return `| ${code(det)} | ${of(d.same_face_count, d.images)} | ${d.faces_matched} faces: ${d.cosine_median.toFixed(7)} / ${d.cosine_min.toFixed(7)} | ${iou} | ${of(d.test_asserted_pairs.same_decision, d.test_asserted_pairs.pairs)} | ${of(d.pairs_all.same_decision, d.pairs_all.pairs)} | ${pct(d.pairs_all.ours_accuracy)} / ${pct(d.pairs_all.deepface_accuracy)} |`;
  });
  return [
    `| Detector | Same face count | Embedding cosine to DeepFace (median / min) | Facial-area IoU (median / min) | Same decision, DeepFace's asserted pairs | Same decision, all ${thousands(pairs)} pairs | Accuracy on those pairs, ours / DeepFace |`,
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    margins(['test/deepface-parity.test.ts'], RESULTS.dlib),
  ].join('\n');
}

function dlibLfw(): string {
  const lfw = results(RESULTS.dlib).lfw_devtrain;
  if (!lfw?.opencv || !lfw?.skip) throw new Error(`${RESULTS.dlib} has no lfw_devtrain: run node --import tsx tools/parity/deepface-parity.ts --lfw`);
  const o = lfw.opencv, s = lfw.skip;
  const same = (d: any) => `the same decision on ${d.same_decision}/${d.pairs} pairs${d.same_decision === d.pairs ? '' : ` (${((d.same_decision / d.pairs) * 100).toFixed(2)}%)`}`;
  return wrap(
    `LFW View 1 training pairs (${code('../shared/data/lfw-devtrain')}, ${thousands(o.pairs)} pairs, ${code('opencv')}, Dlib's calibrated cosine threshold 0.07, ` +
    `${code('enforce_detection=false')} as DeepFace's benchmarks do): our accuracy ${pct(o.ours_accuracy)}, DeepFace's ${pct(o.deepface_accuracy)}, ${same(o)} ` +
    `(${code('tools/parity/deepface-parity.ts --lfw')}, ${code(RESULTS.dlib)}; DeepFace took ${thousands(Math.round(o.deepface_seconds))} s for the run, we took ${thousands(o.seconds)} s, ` +
    `on the same loaded machine but not at the same moment). With ${code('skip')}: ours ${pct(s.ours_accuracy)}, DeepFace's ${pct(s.deepface_accuracy)}, ${same(s)}. ` +
    `${code('test/dlib-lfw.test.ts')} checks in CI that DeepFace's recorded accuracies are what its distances give, and decides a sample of ` +
    `${SAMPLE_NOTE} (${Math.ceil(o.pairs / LFW_SAMPLE_EVERY)} pairs) through our pipeline for both detectors: DeepFace's decision on each, except exactly the pairs listed as differing in that file.`
  );
}

/** The LFW sample the CI tests take (test/dlib-lfw.test.ts, test/facenet-lfw.test.ts): every 44th pair. */
export const LFW_SAMPLE_EVERY = 44;
const SAMPLE_NOTE = `every ${LFW_SAMPLE_EVERY}th pair`;

function dlibChips(): string {
  const r = results(RESULTS.dlibChips);
  return wrap(
    `The converted Dlib network itself equals dlib's ${code('compute_face_descriptor')} (dlib ${r.dlib}) on the same 150×150 chips to a cosine of ` +
    `1 − ${(1 - r.cosine_min).toExponential(2)} at worst (${r.chips} chips, ${r.faces} of them faces; norms within ${r.norm_ratio_max_deviation.toExponential(1)}; ` +
    `${code('test/dlib-parity.test.ts')} recomputes every chip in CI and holds the worst cosine within ${MARGIN.cosine.toExponential(0)} of ${code(RESULTS.dlibChips)}).`
  );
}

function facenetTable(): string {
  const r = results(RESULTS.facenet).deepface_images;
  const pairs = r.opencv.pairs_all.cosine.pairs as number;
  const rows = ['opencv', 'yunet', 'skip'].map((det) => {
    const d = r[det];
    const pa = d.pairs_all;
    const same = METRICS.every((m) => pa[m].ours_accuracy === pa[m].deepface_accuracy);
    const acc = METRICS.map((m) => pct(pa[m].ours_accuracy)).join(' / ') + (same ? '' : ` (DeepFace's: ${METRICS.map((m) => pct(pa[m].deepface_accuracy)).join(' / ')})`);
    const areas = `${of(d.same_facial_area, d.faces)}${det === 'skip' ? ' (w/h quirk, below)' : ' faces'}`;
    return `| ${code(det)} | ${of(d.same_face_count, d.images)} | ${d.faces_matched} faces: ${cos(d.cosine_median, 8)} / ${cos(d.cosine_min, 8)} | ${areas} | ${METRICS.map((m) => pa[m].same_decision).join(' / ')} of ${pa.cosine.pairs} | ${acc} |`;
  });
  return [
    `| Detector | Same face count | Embedding cosine to DeepFace's ${code('represent')}, every face (median / min) | Same facial area (box and eyes) | Same decision as DeepFace's ${code('verify')}, all ${thousands(pairs)} pairs: cosine / euclidean / euclidean_l2 | Accuracy on those pairs, ours = DeepFace's: cosine / euclidean / euclidean_l2 |`,
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    wrap(`${margins(['test/facenet-parity.test.ts'], RESULTS.facenet).replace(/\n/g, ' ')} The 1 − 1e-12 cosines are float noise and differ on another CPU.`),
  ].join('\n');
}

function facenetLfwTable(): string {
  const lfw = results(RESULTS.facenet).lfw_devtrain;
  const o = lfw.opencv;
  return [
    "| Metric (DeepFace's threshold) | Our accuracy | DeepFace's accuracy | Same decision |",
    '|---|---|---|---|',
    ...METRICS.map((m) => `| ${m} (${threshold(o[m].threshold)}) | ${pct(o[m].ours_accuracy)} | ${pct(o[m].deepface_accuracy)} | ${of(o[m].same_decision, o[m].pairs)} |`),
  ].join('\n');
}

function serviceTable(): string {
  const r = results(RESULTS.service);
  const img = r.deepface_images;
  const dets = ['opencv', 'yunet', 'skip'];
  const both = (det: string) => [img[det], img[`${det} detector_fallback=false`]];
  // The first row is one row for three detectors and both settings: say so only where they agree.
  const all = dets.flatMap(both);
  const same = (f: (x: any) => unknown) => new Set(all.map((x) => JSON.stringify(f(x)))).size === 1;
  for (const [what, f] of [['images', (x: any) => [x.images, x.same_face_count]], ['pairs', (x: any) => [x.pairs_all.pairs, x.pairs_all.same_decision, x.test_asserted_pairs.pairs, x.test_asserted_pairs.same_decision]]] as const) {
    if (!same(f)) throw new Error(`${RESULTS.service}: the detectors differ in ${what}; the first row of the table cannot be one row`);
  }
  for (const det of dets) if (JSON.stringify(both(det)[0].cosine) !== JSON.stringify(both(det)[1].cosine)) throw new Error(`${RESULTS.service}: ${det} differs between the two settings`);
  const first = all[0];
  const mins = dets.map((det) => `${img[det].cosine.min.toFixed(7)} (${code(det)})`).join(', ');
  const acc = dets.map((det) => pct(img[det].pairs_all.ours_accuracy)).join(', ');
  const accEqual = dets.every((det) => img[det].pairs_all.ours_accuracy === img[det].pairs_all.deepface_accuracy);
  const below = dets.map((det) => img[det].cosine.below_0_9999).reduce((a: number, b: number) => a + b, 0);
  const lfw = r.lfw_devtrain;
  const lfwRow = (key: string, label: string, bold: boolean) => {
    const d = lfw[key];
    const p = d.pairs_dev_train;
    const dec = of(p.same_decision, p.pairs);
    return `| ${label} | ${of(d.same_face_count, d.images)} | ${d.cosine.median.toFixed(7)} / ${d.cosine.min.toFixed(7)}; ${d.cosine.below_0_9999} | ${bold ? `**${dec}**` : dec} | ${pct(p.ours_accuracy)} / ${pct(p.deepface_accuracy)} |`;
  };
  return [
    '| Through HTTP | Same face count | Embedding cosine to DeepFace (median / min; faces below 0.9999) | Same decision as DeepFace | Accuracy, ours / DeepFace |',
    '|---|---|---|---|---|',
    `| ${code('../shared/data/deepface')}, ${code('opencv')}, ${code('yunet')} or ${code('skip')}, either setting | ${of(first.same_face_count, first.images)} | ${img.opencv.cosine.median.toFixed(7)} / ${mins}; ${below} | ${of(first.pairs_all.same_decision, first.pairs_all.pairs)} pairs, ${of(first.test_asserted_pairs.same_decision, first.test_asserted_pairs.pairs)} asserted | ${acc}, ${accEqual ? 'equal' : 'not equal'} |`,
    lfwRow('opencv detector_fallback=false', `LFW DevTrain, ${code('opencv')}, ${code('detector_fallback=false')}`, true),
    lfwRow('opencv', `LFW DevTrain, ${code('opencv')}, default (fallback and rule)`, false),
    '',
    wrap(`Generated from ${code(RESULTS.service)}, which records the commit it was measured at. Its two LFW runs alone took ${thousands(lfw['opencv detector_fallback=false'].seconds + lfw['opencv'].seconds)} s, so CI does not repeat it: the in-process tests above cover the same pipeline.`),
  ].join('\n');
}

function maxSide(): string {
  const r = results(RESULTS.dlibMaxSide).deepface_images;
  const part = (det: string) => {
    const p = r[det].pairs_all;
    return `${code(det)} ${p.same_decision}/${p.pairs} (${((p.same_decision / p.pairs) * 100).toFixed(1)}%), ${pct(p.ours_accuracy)} against ${pct(p.deepface_accuracy)}`;
  };
  return wrap(
    `Measured with the same tool (${code('PARITY_DETECTOR_MAX_SIDE=1024')}, ${code(RESULTS.dlibMaxSide)}), as pairs decided as DeepFace decides them and our accuracy against DeepFace's: ` +
    `${part('opencv')}; ${part('yunet')}; the same face count as DeepFace on ${r.opencv.same_face_count}/${r.opencv.images} images (${code('opencv')}) and ${r.yunet.same_face_count}/${r.yunet.images} (${code('yunet')}). ` +
    `${code('test/detector-max-side.test.ts')} recomputes these in CI and holds them to that file as the table above is held to its own. The default stays 0 (detect at full size), which is what keeps the figures above.`
  );
}

function fallbackTable(): string {
  const d = results(RESULTS.fallbackDlib), f = results(RESULTS.fallbackFacenet);
  const rule = (file: any, name: string) => {
    const r = (file.rules as any[]).find((x) => x.rule === name);
    if (!r) throw new Error(`fallback rule ${name} missing`);
    return r;
  };
  const accs = (r: any) => METRICS.map((m) => pct(r[m].accuracy)).join(' / ');
  const served = 'min_side_0.2+central_0.5';
  const none = rule(d, 'none').cosine.vs_all;
  const changed = (name: string) => {
    const moved = [d, f].flatMap((file) => METRICS.map((m) => rule(file, name)[m].vs_all)).some((v) => v.better + v.worse > 0);
    return moved ? 'some' : 'none, for either model and any metric';
  };
  const kept = rule(d, served);
  for (const [k, what] of [['images', 'images'], ['images_without_opencv_face', 'images without an opencv face'], ['pairs', 'pairs'], ['pairs_with_a_fallback_image', 'pairs with such an image']] as const) {
    if (d[k] !== f[k]) throw new Error(`the fallback runs differ in ${what}: Dlib ${d[k]}, Facenet ${f[k]}`);
  }
  const fallbackFaces = (d.fallback_faces as unknown[]).length;
  const withFaces = rule(d, 'all').images_using_fallback_faces;
  return [
    wrap(
      `Measured on LFW View 1 DevTrain only (${code('nice -n 10 node --import tsx tools/parity/fallback-rule.ts --model Dlib|Facenet')}, in process, ` +
        `${code('enforce_detection=false')}; ${code('bench/results/fallback-rule-{dlib,facenet}.json')}): ${code('opencv')} finds no face on ` +
        `${d.images_without_opencv_face} of ${thousands(d.images)} images, ${code('retinaface')} then finds ${fallbackFaces} faces on ${withFaces} of them, and ` +
        `${d.pairs_with_a_fallback_image} of the ${thousands(d.pairs)} pairs involve such an image. Accuracy at DeepFace's thresholds (cosine / euclidean / euclidean_l2):`,
    ),
    '',
    '| Fallback faces kept | Dlib | Facenet | Decisions changed against keeping all |',
    '|---|---|---|---|',
    `| none (${code('detector_fallback=false')}, DeepFace) | ${accs(rule(d, 'none'))} | ${accs(rule(f, 'none'))} | Dlib cosine ${none.better} better, ${none.worse} worse (exact McNemar p = ${none.mcnemar_p}) |`,
    `| all (the behaviour before the rule) | ${accs(rule(d, 'all'))} | ${accs(rule(f, 'all'))} | — |`,
    `| the rule (${kept.fallback_faces_kept} kept, ${kept.fallback_faces_dropped} dropped) | ${accs(kept)} | ${accs(rule(f, served))} | ${changed(served)} |`,
    '',
    wrap(
      `${code('test/fallback-figures.test.ts')} holds the rule's row to the per-pair distances ${code('test/calibration.test.ts')} recomputes its file from, ` +
        `and the first row to DeepFace's own LFW accuracies where DeepFace recorded them (Dlib's cosine, Facenet's three metrics); the LFW runs ` +
        'themselves are not repeated in CI.',
    ),
  ].join('\n');
}

function calibrationTable(): string {
  const file = results(RESULTS.calibration);
  const rows: string[] = [];
  for (const [model, byDet] of Object.entries(file.models as Record<string, Record<string, any>>)) {
    for (const det of ['opencv', 'yunet', 'retinaface', 'mtcnn', 'fastmtcnn', 'skip']) {
      const c = byDet[det]?.cosine;
      if (!c) continue;
      rows.push(
        `| ${model} / ${code(det)} | ${c.auc.toFixed(4)} | ${c.deepface.threshold}: ${pct(c.deepface.accuracy)} (${c.deepface.far.toFixed(4)}) | ${c.best_accuracy.threshold}, ${pct(c.best_accuracy.accuracy)} | ${c.far_1e_2.threshold} (${c.far_1e_2.tar.toFixed(4)}) | ${c.far_1e_3.threshold} (${c.far_1e_3.tar.toFixed(4)}) |`,
      );
    }
  }
  return [
    "| Model / detector | AUC | DeepFace's threshold: accuracy (FAR) | Best accuracy: threshold, accuracy | FAR ≤ 1e-2: threshold (TAR) | FAR ≤ 1e-3: threshold (TAR) |",
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** Which rows of the MTCNN table meet issue 29's bars, and what the others miss. */
function bars(r: Record<string, Record<string, any>>): string {
  const out: string[] = [];
  for (const det of ['mtcnn', 'fastmtcnn']) {
    for (const set of ['deepface', 'lfw']) {
      const d = r[det]?.[set];
      if (!d) continue;
      const miss: string[] = [];
      if (d.same_face_count !== d.images) miss.push(`the face count (${of(d.same_face_count, d.images)} images)`);
      if (d.areas_identical / d.faces < 0.995) miss.push(`identical boxes (${(100 * d.areas_identical / d.faces).toFixed(1)}%)`);
      if (d.area_max_px > 2) miss.push(`boxes within 2 px (${d.area_max_px} px)`);
      if (d.eye_max_px > 1) miss.push(`eyes within 1 px (${d.eye_max_px} px)`);
      if (d.confidence_max_diff > 1e-4) miss.push(`confidence within 1e-4 (${d.confidence_max_diff.toExponential(1)})`);
      for (const m of ['Facenet', 'Dlib']) {
        const e = d.embeddings?.[m];
        if (e && e.at_least_0_99999 / e.faces < 0.995) miss.push(`${m} cosines (${(100 * e.at_least_0_99999 / e.faces).toFixed(1)}%)`);
        const p = d.pairs?.[m];
        if (p && (p.same_decision !== p.pairs || p.compared !== p.pairs)) miss.push(`${m}'s decisions (${of(p.same_decision, p.pairs)} pairs)`);
      }
      out.push(`${code(det)} on ${set === 'lfw' ? 'LFW' : 'the DeepFace images'} ${miss.length ? `misses ${miss.join(', ')}` : 'meets them'}`);
    }
  }
  return out.join('; ');
}

/** The LFW pairs decided otherwise than DeepFace decides them, with both distances (cosine), as a paragraph. */
function pairDifferences(r: Record<string, Record<string, any>>): string[] {
  const items: string[] = [];
  for (const det of ['mtcnn', 'fastmtcnn']) {
    for (const model of ['Facenet', 'Dlib']) {
      const p = r[det]?.['lfw']?.pairs?.[model];
      for (const d of (p?.differences ?? []) as string[]) {
        const m = /^(\S+) ~ (\S+): (\S+) vs DeepFace (\S+)$/.exec(d);
        if (!m) throw new Error(`${RESULTS.mtcnn}: unreadable pair difference ${d}`);
        items.push(`${code(det)} with ${model}, ${code(m[1]!)} and ${code(m[2]!)}: ${m[3]} against DeepFace's ${m[4]} (threshold ${p.threshold})`);
      }
    }
  }
  return items.length ? [wrap(`The LFW pairs decided otherwise: ${items.join('; ')}.`), ''] : [];
}

/** DeepFace's MTCNN backends: detector outputs and embeddings against DeepFace's, per detector and image set. */
function mtcnnTable(): string {
  const r = results(RESULTS.mtcnn) as Record<string, Record<string, any>>;
  const sets: Record<string, string> = { deepface: '`../shared/data/deepface`', lfw: 'LFW DevTrain' };
  const emb = (e: any) => (e && e.faces ? `${of(e.at_least_0_99999, e.faces)} (min ${e.cosine_min.toFixed(7)})` : '—');
  const rows: string[] = [];
  for (const det of ['mtcnn', 'fastmtcnn']) {
    for (const set of ['deepface', 'lfw']) {
      const d = r[det]?.[set];
      if (!d) continue;
      const pairs = d.pairs ? `${of(d.pairs.Facenet.same_decision, d.pairs.Facenet.compared)}; ${of(d.pairs.Dlib.same_decision, d.pairs.Dlib.compared)}` : '—';
      // Whether DeepFace's run finished is the committed fixture's to say (mtcnn_reference.py --fixture --partial).
      const fixture = mtcnnFixture(det, set);
      const meta = existsSync(fixture) ? readJsonFile<{ meta: Record<string, any> }>(fixture).meta : d.reference;
      const label = meta?.partial ? `${sets[set]}, the first ${thousands(d.images)} of ${thousands(meta.images_total)} images (the DeepFace run did not finish)` : sets[set];
      rows.push(`| ${code(det)} | ${label} | ${of(d.same_face_count, d.images)} | ${of(d.areas_identical, d.faces)}; ${d.area_max_px} px | ${d.eye_max_px} px | ${d.confidence_max_diff.toExponential(1)} | ${emb(d.embeddings?.Facenet)} | ${emb(d.embeddings?.Dlib)} | ${pairs} |`);
    }
  }
  return [
    '| Detector | Images | Same face count | Identical (x, y, w, h); largest difference | Eyes, largest difference | Confidence, largest difference | Facenet faces at cosine ≥ 0.99999 to DeepFace\'s | Dlib faces at cosine ≥ 0.99999 | Same decision, LFW pairs: Facenet; Dlib |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    wrap(
      `The bars a detector is held to are the same face count on every image, identical boxes on at least 99.5% of faces and within 2 px on all, ` +
      `eyes within 1 px, confidences within 1e-4, embeddings at cosine >= 0.99999 on 99.5% of faces, and on LFW the same decision on every pair: ${bars(r)}.`,
    ),
    '',
    ...pairDifferences(r),
    wrap(
      `In CI, ${code('test/mtcnn-parity.test.ts')} re-detects a sample of these images (every third DeepFace image, every 25th LFW image) and ` +
      `every image that ${code(RESULTS.mtcnn)} (which this table is generated from) lists among the differences, and fails when a sampled image ` +
      `differs from DeepFace's committed output in its face count, a box, an eye, or a confidence by more than 1e-4, when a listed image ` +
      `differs more than listed, or when the largest differences it measures exceed the table's (a confidence by more than 1e-3; a listed ` +
      `difference another CPU does not show is logged, not failed); it also embeds three ` +
      `faces per detector and image set and checks that every row covers its whole fixture. The pair decisions need every LFW image embedded, ` +
      `so they are measured offline only, by the command above.`,
    ),
  ].join('\n');
}

// ---- reference fixtures and the versions they were made with ----------------------------------

/** The libraries whose versions a fixture's outputs depend on, in the table's order. */
export const LIBRARIES = ['DeepFace', 'OpenCV', 'TensorFlow', 'tf-keras', 'dlib', 'numpy', 'retina-face', 'mtcnn', 'facenet-pytorch', 'torch', 'torchvision'] as const;
export type Library = (typeof LIBRARIES)[number];

/** Where each fixture format records a library's version. */
const VERSION_KEYS: Record<string, Library> = {
  deepface: 'DeepFace',
  opencv: 'OpenCV',
  opencv_version: 'OpenCV',
  tensorflow: 'TensorFlow',
  tf_keras: 'tf-keras',
  dlib: 'dlib',
  dlib_version: 'dlib',
  numpy: 'numpy',
  'retina-face': 'retina-face',
  mtcnn: 'mtcnn',
  facenet_pytorch: 'facenet-pytorch',
  torch: 'torch',
  torchvision: 'torchvision',
};

/** Generators of the fixtures that do not name their own. */
const GENERATOR_BY_DIR: Record<string, string> = { 'test/fixtures/deepface': 'tools/reference/deepface_reference.py', 'test/fixtures/mtcnn': 'tools/reference/mtcnn_reference.py' };

export interface FixtureRecord {
  file: string;
  generator: string;
  versions: Partial<Record<Library, string>>;
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

/** Every JSON fixture (gzipped or not) that records a version, with the versions it records (a `?` is no record). */
export function fixtureRecords(): FixtureRecord[] {
  const out: FixtureRecord[] = [];
  for (const abs of walk(join(REPO, 'test', 'fixtures')).filter(isJsonFile).sort()) {
    const file = relative(REPO, abs);
    const j = readJsonFile<Record<string, any>>(abs);
    const versions: Partial<Record<Library, string>> = {};
    for (const where of [j, j['meta'] ?? {}, j['versions'] ?? {}]) {
      for (const [k, lib] of Object.entries(VERSION_KEYS)) if (typeof where[k] === 'string' && where[k] !== '?') versions[lib] = where[k];
    }
    if (Object.keys(versions).length === 0) continue;
    const dir = file.slice(0, file.lastIndexOf('/'));
    out.push({ file, generator: String(j['generator'] ?? GENERATOR_BY_DIR[dir] ?? '?').split(' ')[0]!, versions });
  }
  return out;
}

function fixtureTable(): string {
  // One row per generator and set of versions; the files it covers listed in it.
  const groups = new Map<string, { generator: string; versions: Partial<Record<Library, string>>; files: string[] }>();
  for (const r of fixtureRecords()) {
    const key = `${r.generator} ${JSON.stringify(LIBRARIES.map((l) => r.versions[l] ?? null))}`;
    const g = groups.get(key) ?? { generator: r.generator, versions: r.versions, files: [] };
    g.files.push(r.file.replace(/^test\/fixtures\//, ''));
    groups.set(key, g);
  }
  const used = LIBRARIES.filter((l) => [...groups.values()].some((g) => g.versions[l]));
  return [
    `| Fixtures (${code('test/fixtures/')}) | Made by | ${used.join(' | ')} |`,
    `|---|---|${used.map(() => '---|').join('')}`,
    ...[...groups.values()].map((g) => `| ${g.files.map(code).join(', ')} | ${code(g.generator)} | ${used.map((l) => g.versions[l] ?? '—').join(' | ')} |`),
  ].join('\n');
}

/** The parity blocks; tools/docs/blocks.ts adds the other generated blocks and renders them all. */
export const BLOCKS: Record<string, () => string> = {
  'parity-dlib-table': dlibTable,
  'parity-dlib-lfw': dlibLfw,
  'parity-dlib-chips': dlibChips,
  'parity-facenet-table': facenetTable,
  'parity-facenet-lfw-table': facenetLfwTable,
  'parity-service-table': serviceTable,
  'parity-detector-max-side': maxSide,
  'fallback-rule-table': fallbackTable,
  'calibration-table': calibrationTable,
  'fixture-versions-table': fixtureTable,
  'parity-mtcnn-table': mtcnnTable,
};
