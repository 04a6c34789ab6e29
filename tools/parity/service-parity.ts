/**
 * Parity with DeepFace through the live HTTP service, not in process: `facecompute serve` (gateway,
 * model-server child; the built bundle, so run `npm run build:ts` first) on loopback ports 20280-20291,
 * an anonymous account and its REST key, then `POST /represent` for every image, once with
 * `detector_fallback=false` (DeepFace's flow) and once with the default (the retinaface retry):
 *
 *   nice -n 10 node --import tsx tools/parity/service-parity.ts [--model Dlib] [--skip-lfw]
 *     → bench/results/parity-service-<model>.json
 *
 * DeepFace's answers: test/fixtures/deepface/represent-<model>.json (every image of
 * ../shared/data/deepface, enforce_detection=True, detectors opencv/yunet/skip) and, for LFW View 1
 * DevTrain (enforce_detection=False, opencv), .cache/deepface-lfw/<Model>-opencv.jsonl from
 * tools/reference/deepface_lfw_images.py. Per run: same face counts, each face's embedding cosine to
 * DeepFace's (faces matched by IoU), the images that used the fallback, and the decisions at DeepFace's
 * cosine threshold on DeepFace's pairs (test_asserted_pairs.csv, pairs_all.csv, pairsDevTrain.txt),
 * with both accuracies.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { THRESHOLDS } from '../../src/deepface/decision.js';
import { LFW, REPO, SHARED_DATA, WEIGHTS, devTrainPairs, median, pairDistance, quantile, type Pair } from './lfw-devtrain.js';

type Area = { x: number; y: number; w: number; h: number; detector?: string };
type Face = { facial_area: Area; face_confidence: number; embedding: number[] };
/** One image's faces, or null when no face was found (enforce_detection=true). */
type Answer = Face[] | null;

const PORTS = { gateway: 20280, mcp: 20281, console: 20282, modelServer: 20290 };

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

function cosineSim(a: number[], b: number[]): number {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return d / Math.sqrt(na * nb);
}

function iou(a: Area, b: Area): number {
  const x1 = Math.max(a.x, b.x), y1 = Math.max(a.y, b.y);
  const x2 = Math.min(a.x + a.w, b.x + b.w), y2 = Math.min(a.y + a.h, b.y + b.h);
  const inter = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  return inter / (a.w * a.h + b.w * b.h - inter);
}

async function startService(model: string): Promise<{ base: string; key: string; stop: () => Promise<void> }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('FACECOMPUTE_')) env[k] = v;
  Object.assign(env, {
    FACECOMPUTE_HOST: '127.0.0.1',
    FACECOMPUTE_GATEWAY_PORT: String(PORTS.gateway),
    FACECOMPUTE_MCP_PORT: String(PORTS.mcp),
    FACECOMPUTE_CONSOLE_PORT: String(PORTS.console),
    FACECOMPUTE_MODEL_SERVER_PORT: String(PORTS.modelServer),
    FACECOMPUTE_DATA_DIR: mkdtempSync(join(tmpdir(), 'fc-service-parity-')),
    FACECOMPUTE_WEIGHTS_DIR: WEIGHTS,
    FACECOMPUTE_MODELS_CACHE: process.env['FACECOMPUTE_MODELS_CACHE'] ?? join(REPO, '.models-cache'),
    FACECOMPUTE_ALLOWED_MODELS: model,
    FACECOMPUTE_DEFAULT_MODEL: model,
    FACECOMPUTE_ALLOWED_DETECTORS: 'opencv,retinaface,yunet,skip',
    // Policy, not capacity: one account makes thousands of calls here.
    FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000',
    FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000',
    FACECOMPUTE_LOG_LEVEL: 'warn',
  });
  const proc: ChildProcess = spawn(process.execPath, [join(REPO, 'bin', 'facecompute.js'), 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${PORTS.gateway}`;
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`facecompute serve exited ${proc.exitCode}`);
    try {
      const r = (await (await fetch(`${base}/readiness`)).json()) as { status: string; error: string };
      if (r.status === 'ready') break;
      if (r.status === 'error') throw new Error(`warmup failed: ${r.error}`);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('warmup')) throw err;
    }
    if (i > 2400) throw new Error('not ready after 10 minutes');
    await new Promise((r) => setTimeout(r, 250));
  }
  const con = `http://127.0.0.1:${PORTS.console}`;
  const { session_token } = (await (await fetch(`${con}/api/signup/anonymous`, { method: 'POST' })).json()) as { session_token: string };
  const { key } = (await (await fetch(`${con}/api/keys`, { method: 'POST', headers: { authorization: `Bearer ${session_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'service-parity' }) })).json()) as { key: string };
  return {
    base,
    key,
    stop: () =>
      new Promise((r) => {
        proc.once('exit', () => r());
        proc.kill('SIGTERM');
      }),
  };
}

/** POST /represent for many images, two at a time (the machine has two cores). */
async function represent(svc: { base: string; key: string }, files: string[], body: Record<string, unknown>): Promise<Map<string, Answer>> {
  const out = new Map<string, Answer>();
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= files.length) return;
      const file = files[i]!;
      const img = `data:image/jpeg;base64,${readFileSync(file).toString('base64')}`;
      const r = await fetch(`${svc.base}/represent`, { method: 'POST', headers: { authorization: `Bearer ${svc.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ img, ...body }) });
      const j = (await r.json()) as { results?: Face[]; error?: string; detail?: string };
      if (r.status === 200) out.set(file, j.results!);
      else if (r.status === 422 && j.error === 'no_face_detected') out.set(file, null);
      else throw new Error(`${file}: HTTP ${r.status} ${JSON.stringify(j).slice(0, 300)}`);
      if (i % 500 === 499) process.stderr.write(`  ${i + 1}/${files.length} ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
    }
  };
  await Promise.all([worker(), worker()]);
  return out;
}

/** Ours against DeepFace's, image by image: counts, cosines of IoU-matched faces, fallback use. */
function compareImages(ours: Map<string, Answer>, theirs: Map<string, Answer>) {
  let same = 0;
  const cos: number[] = [];
  const ious: number[] = [];
  const countDiffs: string[] = [];
  const usedFallback: string[] = [];
  const low: Array<{ image: string; cosine: number; ours: Area; deepface: Area }> = [];
  for (const [file, mine] of ours) {
    const ref = theirs.get(file);
    if (ref === undefined) throw new Error(`no DeepFace answer for ${file}`);
    const name = file.slice(SHARED_DATA.length + 1);
    if ((mine ?? []).some((f) => f.facial_area.detector === 'retinaface')) usedFallback.push(name);
    if ((mine?.length ?? 0) === (ref?.length ?? 0)) same++;
    else countDiffs.push(`${name}: ours ${mine?.length ?? 0}, deepface ${ref?.length ?? 0}`);
    for (const f of ref ?? []) {
      let best: Face | null = null;
      let bestIou = -1;
      for (const m of mine ?? []) {
        const v = iou(m.facial_area, f.facial_area);
        if (v > bestIou) [best, bestIou] = [m, v];
      }
      if (!best) continue;
      ious.push(bestIou);
      const c = cosineSim(best.embedding, f.embedding);
      cos.push(c);
      if (c < 0.9999) low.push({ image: name, cosine: Number(c.toFixed(6)), ours: best.facial_area, deepface: f.facial_area });
    }
  }
  return {
    images: ours.size,
    same_face_count: same,
    face_count_differences: countDiffs,
    images_using_the_fallback: usedFallback.length,
    fallback_images: usedFallback,
    faces_matched: cos.length,
    cosine: { median: median(cos), p01: quantile(cos, 0.01), min: Math.min(...cos), below_0_9999: cos.filter((c) => c < 0.9999).length, below_0_99999: cos.filter((c) => c < 0.99999).length },
    faces_below_0_9999: low.sort((a, b) => a.cosine - b.cosine).slice(0, 60),
    iou: { median: median(ious), min: Math.min(...ious) },
  };
}

function decide(pairs: Pair[], ours: Map<string, Answer>, theirs: Map<string, Answer>, key: (rel: string) => string, threshold: number) {
  let same = 0, oursRight = 0, theirsRight = 0;
  const flips: string[] = [];
  const emb = (m: Map<string, Answer>, rel: string) => m.get(key(rel))?.map((f) => f.embedding);
  for (const [a, b, label] of pairs) {
    const dO = pairDistance(emb(ours, a), emb(ours, b), 'cosine');
    const dT = pairDistance(emb(theirs, a), emb(theirs, b), 'cosine');
    const vO = dO !== null && dO <= threshold;
    const vT = dT !== null && dT <= threshold;
    if (vO === vT) same++;
    else flips.push(`${a} ${b} (${label ? 'same person' : 'different people'}): ours ${dO}, deepface ${dT}${vO === (label === 1) ? ' (ours right)' : ' (deepface right)'}`);
    if (vO === (label === 1)) oursRight++;
    if (vT === (label === 1)) theirsRight++;
  }
  return { pairs: pairs.length, same_decision: same, ours_accuracy: oursRight / pairs.length, deepface_accuracy: theirsRight / pairs.length, differing: flips };
}

function csvPairs(name: string): Pair[] {
  return readFileSync(join(SHARED_DATA, 'deepface', name), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => l.split(','))
    .map((f): Pair => [f[0]!, f[1]!, Number(f[2]) as 0 | 1]);
}

async function main() {
  const model = arg('model', 'Dlib');
  const threshold = THRESHOLDS[model]!.cosine;
  const refPath = join(REPO, 'test', 'fixtures', 'deepface', `represent-${model.toLowerCase()}.json`);
  const ref = JSON.parse(readFileSync(refPath, 'utf8')) as { meta: unknown; images: Record<string, Record<string, { faces?: Face[]; error?: string }>> };
  const lfwRef = join(REPO, '.cache', 'deepface-lfw', `${model}-opencv.jsonl`);
  const doLfw = !process.argv.includes('--skip-lfw');
  if (doLfw && !existsSync(lfwRef)) throw new Error(`${lfwRef} is missing: run tools/reference/deepface_lfw_images.py --model ${model} --detector opencv`);

  const svc = await startService(model);
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO }).toString().trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO }).toString().trim() !== '';
  const report: Record<string, unknown> = { what: 'parity with DeepFace through the live HTTP service (facecompute serve, POST /represent)', model, commit: `${commit}${dirty ? '+dirty' : ''}`, deepface: ref.meta };
  try {
    const dfFiles = Object.keys(ref.images).map((n) => join(SHARED_DATA, 'deepface', n));
    const key = (rel: string) => join(SHARED_DATA, 'deepface', rel);
    const deepfaceImages: Record<string, unknown> = {};
    for (const det of ['opencv', 'yunet', 'skip']) {
      const theirs = new Map<string, Answer>(Object.entries(ref.images).map(([n, r]) => [key(n), r[det]?.faces ?? null]));
      for (const fallback of [false, true]) {
        process.stderr.write(`deepface images, ${det}, detector_fallback=${fallback}\n`);
        const ours = await represent(svc, dfFiles, { model_name: model, detector_backend: det, enforce_detection: true, detector_fallback: fallback });
        deepfaceImages[`${det}${fallback ? '' : ' detector_fallback=false'}`] = {
          ...compareImages(ours, theirs),
          test_asserted_pairs: decide(csvPairs('test_asserted_pairs.csv'), ours, theirs, key, threshold),
          pairs_all: decide(csvPairs('pairs_all.csv'), ours, theirs, key, threshold),
        };
      }
    }
    report['deepface_images'] = deepfaceImages;

    if (doLfw) {
      const theirs = new Map<string, Answer>();
      for (const line of readFileSync(lfwRef, 'utf8').trim().split('\n')) {
        const r = JSON.parse(line) as { path: string; faces?: Face[]; error?: string };
        theirs.set(join(LFW, r.path), r.faces ?? null);
      }
      const files = [...theirs.keys()];
      if (files.length !== 3443) throw new Error(`${lfwRef} holds ${files.length} images, not 3443: let deepface_lfw_images.py finish`);
      const lkey = (rel: string) => join(LFW, rel);
      const lfw: Record<string, unknown> = { deepface: JSON.parse(readFileSync(lfwRef.replace(/\.jsonl$/, '.meta.json'), 'utf8')) };
      for (const fallback of [false, true]) {
        process.stderr.write(`LFW DevTrain, opencv, detector_fallback=${fallback}\n`);
        const t0 = performance.now();
        const ours = await represent(svc, files, { model_name: model, detector_backend: 'opencv', enforce_detection: false, detector_fallback: fallback });
        lfw[`opencv${fallback ? '' : ' detector_fallback=false'}`] = { seconds: Math.round((performance.now() - t0) / 1000), ...compareImages(ours, theirs), pairs_dev_train: decide(devTrainPairs(), ours, theirs, lkey, threshold) };
      }
      report['lfw_devtrain'] = lfw;
    }
  } finally {
    await svc.stop();
  }
  const out = join(REPO, 'bench', 'results', `parity-service-${model.toLowerCase()}.json`);
  writeFileSync(out, `${JSON.stringify(report, null, 1)}\n`);
  const line = (name: string, r: any) =>
    `${name.padEnd(40)} faces ${r.same_face_count}/${r.images}; cosine median ${r.cosine.median.toFixed(7)} min ${r.cosine.min.toFixed(7)}, ${r.cosine.below_0_9999} below 0.9999; fallback used on ${r.images_using_the_fallback}; ` +
    Object.entries(r)
      .filter(([, v]) => (v as any)?.same_decision !== undefined)
      .map(([k, v]: [string, any]) => `${k} ${v.same_decision}/${v.pairs} (acc ${(v.ours_accuracy * 100).toFixed(2)}% vs ${(v.deepface_accuracy * 100).toFixed(2)}%)`)
      .join('; ');
  for (const [k, v] of Object.entries(report['deepface_images'] as object)) console.log(line(`deepface ${k}`, v));
  for (const [k, v] of Object.entries((report['lfw_devtrain'] ?? {}) as object)) if (k !== 'deepface') console.log(line(`lfw ${k}`, v));
  console.log(`wrote ${out}`);
}

await main();
