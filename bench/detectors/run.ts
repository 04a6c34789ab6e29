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
import { convertRetinaface, convertYunet } from '../../test/helpers/detector-fixtures.js';

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

const ORT = { intraOpNumThreads: 1, interOpNumThreads: 1 };

async function time(detect: (img: (typeof images)[number]) => Promise<unknown[]>): Promise<{ ms_per_image: number; faces: number }> {
  await detect(images[0]!);
  let faces = 0;
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) for (const img of images) faces += (await detect(img)).length;
  return { ms_per_image: (performance.now() - t0) / (reps * images.length), faces: faces / reps };
}

const retina = await RetinaFaceDetector.create(convertRetinaface(), ORT);
const yunet = await YunetDetector.create(convertYunet(), ORT);
const ours = { retinaface_mobilenet: await time((i) => retina.detect(i)), yunet: await time((i) => yunet.detect(i)) };
await retina.release();
await yunet.release();

const ref = JSON.parse(execFileSync(py, [script, 'time', SHARED_WEIGHTS_DIR, cache, String(reps)], { encoding: 'utf8' }).trim().split('\n').pop()!);
const result = {
  date: new Date().toISOString(),
  images: images.length,
  reps,
  threads: 1,
  cpu: cpus()[0]?.model ?? 'unknown',
  ours,
  reference: ref,
};
mkdirSync(resolve(REPO_ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(resolve(REPO_ROOT, 'bench', 'results', 'detectors.json'), JSON.stringify(result, null, 2) + '\n');
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
