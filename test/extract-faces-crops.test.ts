/**
 * The crops /represent returns with return_face, held to DeepFace 0.0.100's extract_faces on DeepFace's
 * own 65 images (../shared/data/deepface), for every detector DeepFace runs offline that the service
 * serves: opencv, mtcnn, yunet (test/fixtures/extract-faces/crops.json.gz, written by
 * tools/reference/extract_faces_crops.py; retinaface is out: DeepFace's is ResNet-50, absent here).
 *
 * Per image and detector, against one live `serve`: the same faces (or DeepFace's no face as
 * 422 no_face_detected), each crop of the same size, and its pixels within 1 level of DeepFace's at the
 * fixture's sampled rows and columns (every 16th; the sha256 of the whole crop tells an exact match).
 * Faces are paired by box, so a different face order is reported on its own. KNOWN and KNOWN_ORDER list
 * the images whose faces differ, with why: upper bounds (another CPU may match where this one did
 * not), never requirements.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { readJsonFile } from '../tools/parity/fixture-files.js';
import { REPO_ROOT, DEEPFACE_DIR } from './helpers/shared.js';
import { startServe, type LiveServe } from './helpers/clients.js';
import { decodePng } from './helpers/png.js';

interface RefFace {
  facial_area: { x: number; y: number; w: number; h: number };
  confidence: number;
  shape: [number, number, number];
  sha256: string;
  sample: string;
}
interface Fixture {
  versions: Record<string, string>;
  sample_step: number;
  images: string[];
  detectors: Record<string, Record<string, RefFace[] | null>>;
}

const FIXTURE = readJsonFile<Fixture>(join(REPO_ROOT, 'test', 'fixtures', 'extract-faces', 'crops.json.gz'));
const DETECTORS = ['opencv', 'mtcnn', 'yunet'] as const;
/** Pixel tolerance of the issue: within 1 level. */
const LEVELS = 1;

/** `detector/image` whose faces differ from DeepFace's (count, size or pixels), with why. */
const KNOWN: Record<string, string> = {
  'mtcnn/img3.jpg':
    "our box is 1 px shorter (h 922, DeepFace 923) through serve, while the in-process parity run (bench/results/parity-mtcnn.json) matched it: an MTCNN box edge on a float32 rounding boundary, which moves with how ONNX Runtime runs the network (not yet diagnosed further)",
  'mtcnn/img32.jpg': "our box is 1 px wider (w 678, DeepFace 677), as bench/results/parity-mtcnn.json lists it",
};

/**
 * `detector/image` whose faces, the same crops, come in another order than DeepFace's. None: the fixture
 * was made with one OpenCV thread, as opencv-python's face order follows its threads otherwise.
 */
const KNOWN_ORDER: Record<string, string> = {};

let stack: LiveServe;
t.before(async () => {
  stack = await startServe({ FACECOMPUTE_FREE_CALLS_ANONYMOUS: '1000000', FACECOMPUTE_RATE_LIMIT_REQUESTS: '1000000', FACECOMPUTE_LOG_LEVEL: 'warn' });
});
t.teardown(() => stack?.stop());

t.test('the fixture: DeepFace 0.0.100, 65 images, three detectors', async (t) => {
  t.equal(FIXTURE.versions['deepface'], '0.0.100');
  t.equal(FIXTURE.images.length, 65);
  t.same(Object.keys(FIXTURE.detectors).sort(), [...DETECTORS].sort());
});

t.test("/represent's face_png against DeepFace's extract_faces crops", { timeout: 900_000 }, async (t) => {
  const key = await stack.newKey('extract-faces-crops');
  const caps = (await (await fetch(`${stack.gateway}/capabilities`)).json()) as { allowed_detectors: string[]; unavailable?: Record<string, unknown> | string[] };
  const unavailable = new Set(Array.isArray(caps.unavailable) ? caps.unavailable : Object.keys(caps.unavailable ?? {}));
  let faces = 0;
  let exact = 0;
  let sampled = 0;
  const reordered: string[] = [];
  let maxDiff = 0;
  const differing: string[] = [];
  for (const det of DETECTORS) {
    t.ok(caps.allowed_detectors.includes(det) && !unavailable.has(det), `${det} is served`);
    for (const name of FIXTURE.images) {
      const ref = FIXTURE.detectors[det]![name];
      t.ok(ref !== undefined, `${det}/${name} in the fixture`);
      const img = `data:image/${name.endsWith('.png') ? 'png' : 'jpeg'};base64,${readFileSync(join(DEEPFACE_DIR, name)).toString('base64')}`;
      const res = await fetch(`${stack.gateway}/represent`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ img, detector_backend: det, return_face: true, detector_fallback: false, enforce_detection: true, align: true }),
      });
      const body = (await res.json()) as { results?: Array<{ face_png: string; facial_area: { x: number; y: number; w: number; h: number } }>; error?: string };
      const id = `${det}/${name}`;
      const problems: string[] = [];
      if (ref === null || ref === undefined) {
        if (!(res.status === 422 && body.error === 'no_face_detected')) problems.push(`DeepFace finds no face; we answer ${res.status} with ${body.results?.length ?? body.error} faces`);
      } else if (res.status !== 200) {
        problems.push(`DeepFace finds ${ref.length} faces; we answer ${res.status} ${body.error}`);
      } else if (body.results!.length !== ref.length) {
        problems.push(`${body.results!.length} faces, DeepFace ${ref.length}`);
      } else {
        // Each DeepFace face is paired with ours of the same box (x, y, w, h), else the one at its index;
        // the crops are compared pair by pair and the order separately.
        const ours = body.results!;
        const used = new Set<number>();
        const order: number[] = [];
        for (const [k, r] of ref.entries()) {
          const a = r.facial_area;
          let j = ours.findIndex((f, i) => !used.has(i) && f.facial_area.x === a.x && f.facial_area.y === a.y && f.facial_area.w === a.w && f.facial_area.h === a.h);
          if (j < 0) j = used.has(k) ? ours.findIndex((_, i) => !used.has(i)) : k;
          used.add(j);
          order.push(j);
          faces++;
          const got = decodePng(Buffer.from(ours[j]!.face_png, 'base64'));
          const [h, w] = r.shape;
          if (got.height !== h || got.width !== w) {
            const o = ours[j]!.facial_area;
            problems.push(`face ${k}: ${got.width}x${got.height}, DeepFace ${w}x${h}; box ${o.x},${o.y},${o.w},${o.h}, DeepFace ${a.x},${a.y},${a.w},${a.h}`);
            continue;
          }
          const bgr = Buffer.alloc(w * h * 3);
          for (let i = 0; i < w * h; i++) {
            bgr[i * 3] = got.rgb[i * 3 + 2]!;
            bgr[i * 3 + 1] = got.rgb[i * 3 + 1]!;
            bgr[i * 3 + 2] = got.rgb[i * 3]!;
          }
          if (createHash('sha256').update(bgr).digest('hex') === r.sha256) exact++;
          const sample = Buffer.from(r.sample, 'base64');
          const step = FIXTURE.sample_step;
          const sw = Math.ceil(w / step);
          t.equal(sample.length, Math.ceil(h / step) * sw * 3, `${id} face ${k}: sample size`);
          let worst = 0;
          for (let y = 0; y < h; y += step) {
            for (let x = 0; x < w; x += step) {
              for (let c = 0; c < 3; c++) {
                const d = Math.abs(bgr[(y * w + x) * 3 + c]! - sample[((y / step) * sw + x / step) * 3 + c]!);
                if (d > worst) worst = d;
              }
            }
          }
          sampled += Math.ceil(h / step) * sw;
          maxDiff = Math.max(maxDiff, worst);
          if (worst > LEVELS) problems.push(`face ${k}: a sampled pixel ${worst} levels from DeepFace's`);
        }
        if (order.some((j, k) => j !== k)) {
          reordered.push(id);
          t.ok(id in KNOWN_ORDER, `${id}: DeepFace's faces come as our ${order.join(', ')}${id in KNOWN_ORDER ? ` (known: ${KNOWN_ORDER[id]})` : ' (not listed as known)'}`);
        }
      }
      if (problems.length > 0) differing.push(id);
      if (problems.length > 0) t.ok(id in KNOWN, `${id}: ${problems.join('; ')}${id in KNOWN ? ` (known: ${KNOWN[id]})` : ' (not listed as known)'}`);
    }
  }
  for (const id of Object.keys(KNOWN)) if (!differing.includes(id)) t.comment(`listed as differing but matched: ${id}`);
  for (const id of Object.keys(KNOWN_ORDER)) if (!reordered.includes(id)) t.comment(`listed as reordered but in DeepFace's order: ${id}`);
  t.ok(faces > 0, 'faces compared');
  t.comment(
    `${faces} faces compared (${exact} byte-identical; ${sampled} sampled pixels), max sampled difference ${maxDiff} levels; ` +
      `${differing.length} of ${FIXTURE.images.length * DETECTORS.length} image/detector pairs differ, ${reordered.length} in another face order`,
  );
  t.equal(stack.exited(), null, 'serve still running');
});
