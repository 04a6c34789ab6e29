/**
 * Detector speed: ms per image for our RetinaFace (MobileNet-0.25, ONNX Runtime + native pre/post)
 * and YuNet pipelines on DeepFace's test images, against opencv-python's FaceDetectorYN and the torch
 * RetinaFace reference when a reference Python is given. Writes bench/results/detectors.json.
 *
 *   FACECOMPUTE_REFERENCE_PYTHON=/path/to/venv/bin/python npx tsx bench/detectors/run.ts [reps]
 *
 * The reference Python (opencv-python; torch optional) also decodes the JPEGs, since this branch has
 * no decoder of its own. Both sides run single-threaded.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { RetinaFaceDetector } from '../../src/model-server/detectors/retinaface.js';
import { YunetDetector } from '../../src/model-server/detectors/yunet.js';
import { REPO_ROOT, SHARED_DATA_DIR, SHARED_WEIGHTS_DIR } from '../../test/helpers/shared.js';
import { bestIous, convertRetinaface, convertYunet } from '../../test/helpers/detector-fixtures.js';
import { simdInfo } from '../lib/machine.js';

const reps = Number(process.argv[2] ?? 2);
const py = process.env['FACECOMPUTE_REFERENCE_PYTHON'];
if (!py) {
  process.stderr.write('set FACECOMPUTE_REFERENCE_PYTHON to a python with opencv-python (torch optional)\n');
  process.exit(2);
}
const script = resolve(REPO_ROOT, 'bench', 'detectors', 'reference.py');
const cache = resolve(REPO_ROOT, '.cache', 'bench-detectors');
mkdirSync(cache, { recursive: true });
execFileSync(py, [script, 'decode', SHARED_DATA_DIR, cache], { stdio: 'inherit' });
const index: Array<{ name: string; width: number; height: number }> = JSON.parse(readFileSync(resolve(cache, 'index.json'), 'utf8'));
const images = index.map((e) => ({ width: e.width, height: e.height, channels: 3, data: readFileSync(resolve(cache, `${e.name}.bgr`)) }));

const ORT = { intraOpThreads: 1, interOpThreads: 1, provider: 'cpu' as const };

type Boxes = number[][][];

async function time(detect: (img: (typeof images)[number]) => Promise<Array<{ raw_box?: number[] }>>): Promise<{ ms_per_image: number; faces: number; boxes: Boxes }> {
  await detect(images[0]!);
  let boxes: Boxes = [];
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) {
    boxes = [];
    for (const img of images) boxes.push((await detect(img)).map((f) => f.raw_box ?? []));
  }
  return { ms_per_image: (performance.now() - t0) / (reps * images.length), faces: boxes.reduce((a, b) => a + b.length, 0), boxes };
}

/** Per-image agreement with a reference: images whose face counts differ, and the worst best-IoU. */
function parity(ours: Boxes, ref: Boxes | undefined): { images_count_mismatch: number; min_iou: number } | undefined {
  if (!ref) return undefined;
  let mismatch = 0;
  let minIou = 1;
  ours.forEach((o, i) => {
    const r = ref[i] ?? [];
    if (o.length !== r.length) mismatch++;
    for (const v of bestIous(r, o)) minIou = Math.min(minIou, v);
  });
  return { images_count_mismatch: mismatch, min_iou: Number(minIou.toFixed(4)) };
}

const retina = await RetinaFaceDetector.create(convertRetinaface(), ORT);
const yunet = await YunetDetector.create(convertYunet(), ORT);
const oursRetina = await time((i) => retina.detect(i));
const oursYunet = await time((i) => yunet.detect(i));
await retina.release();
await yunet.release();

const ref = JSON.parse(execFileSync(py, [script, 'time', SHARED_WEIGHTS_DIR, cache, String(reps)], { encoding: 'utf8' }).trim().split('\n').pop()!);
const strip = (o: Record<string, unknown> | undefined): Record<string, unknown> | undefined => (o ? Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'boxes')) : o);
const result = {
  date: new Date().toISOString(),
  images: images.length,
  reps,
  threads: 1,
  cpu: cpus()[0]?.model ?? 'unknown',
  simd: simdInfo(),
  note: 'retinaface: MobileNet-0.25 at the default 320-px long side, no DeepFace align border',
  ours: {
    retinaface_mobilenet: { ms_per_image: oursRetina.ms_per_image, faces: oursRetina.faces },
    yunet: { ms_per_image: oursYunet.ms_per_image, faces: oursYunet.faces },
  },
  reference: { opencv: ref.opencv, yunet_opencv: strip(ref.yunet_opencv), retinaface_torch: strip(ref.retinaface_torch) },
  parity: {
    yunet_vs_opencv: parity(oursYunet.boxes, ref.yunet_opencv?.boxes),
    retinaface_vs_torch: parity(oursRetina.boxes, ref.retinaface_torch?.boxes),
  },
};
mkdirSync(resolve(REPO_ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(resolve(REPO_ROOT, 'bench', 'results', 'detectors.json'), JSON.stringify(result, null, 2) + '\n');
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
