/**
 * The DeepFace flow's rules, on fake engines: fallback, enforce_detection, max_faces, the
 * minimum-distance pair, reuse of identical images, and the thresholds/confidence wiring.
 */
import t from 'tap';
import { Pipeline, keepsFallbackFace, type FallbackRule } from '../src/model-server/pipeline.js';
import type { Detection, ExtractedFace, FaceDetector, ImageOps, NativeImage, Recognizer } from '../src/model-server/engines.js';
import type { DistanceMetric, PipelineOptions } from '../src/model-client/protocol.js';
import { decide } from '../src/deepface/decision.js';

const img = (w: number, h: number, fill = 0): NativeImage => ({ width: w, height: h, channels: 3, data: Buffer.alloc(w * h * 3, fill) });

function fakes(detections: Record<string, Detection[]>, detectorMaxSide = 0, fallbackRule?: FallbackRule) {
  const calls = { border: 0, detect: [] as string[], extract: 0, tensors: 0, embeds: 0, events: [] as string[], letterbox: [] as string[], shrink: [] as Array<[number, number]>, detectedSizes: [] as Array<[number, number]> };
  const image: ImageOps = {
    decode: async () => img(10, 10),
    shrink: async (_i, w, h) => {
      calls.shrink.push([w, h]);
      return img(w, h);
    },
    border: async (i) => {
      calls.border++;
      return { image: img(i.width * 2, i.height * 2), top: Math.floor(i.height / 2), left: Math.floor(i.width / 2) };
    },
    extractFaces: async (_i, dets, opts) => {
      calls.extract++;
      return dets.map(
        (d): ExtractedFace => ({
          // The face's first byte carries its x, so embeddings can be told apart.
          face: img(d.w, d.h, d.x % 256),
          // As the binding reports a face (test/image.test.ts): the detector named, confidence to 2 decimals.
          facial_area: { x: d.x - opts.borderLeft, y: d.y - opts.borderTop, w: d.w, h: d.h, left_eye: d.left_eye ?? null, right_eye: d.right_eye ?? null, detector: opts.detector },
          face_confidence: Math.round(d.confidence * 100) / 100,
        }),
      );
    },
    toTensor: async (faces, spec) => {
      calls.tensors++;
      calls.events.push(`tensor of ${faces.length}`);
      calls.letterbox.push(spec.letterbox ?? 'float');
      // 2 values per face: its fill byte and 1; the fake recognizer reads them.
      const out = new Float32Array(faces.length * 4 * 4 * 3);
      faces.forEach((f, i) => {
        out[i * 48] = f.data[0] ?? 0;
        out[i * 48 + 1] = 1;
      });
      return out;
    },
    // A stand-in "PNG": the crop's size and first byte, enough to tell crops apart.
    encodePng: async (f) => Buffer.from(`${f.width}x${f.height}:${f.data[0] ?? 0}`),
  };
  const detector = (name: string): FaceDetector => ({
    name,
    detect: async (i) => {
      calls.detect.push(name);
      calls.events.push('detect');
      calls.detectedSizes.push([i.width, i.height]);
      return detections[name] ?? [];
    },
  });
  const rec: Recognizer = {
    name: 'Dlib',
    dims: 2,
    input: { width: 4, height: 4, layout: 'nchw', channel_order: 'rgb', preprocess: 'uint8_truncate' },
    embed: async (batch, n) => {
      calls.embeds++;
      calls.events.push(`embed ${n}`);
      return Array.from({ length: n }, (_, i) => Float32Array.of(batch[i * 48] as number, batch[i * 48 + 1] as number));
    },
  };
  const pipeline = new Pipeline({
    image,
    detectors: new Map([
      ['opencv', detector('opencv')],
      ['retinaface', detector('retinaface')],
      ['skip', detector('skip')],
    ]),
    recognizers: new Map([['Dlib', rec]]),
    fallbackDetector: 'retinaface',
    detectorMaxSide,
    ...(fallbackRule ? { fallbackRule } : {}),
  });
  return { pipeline, calls };
}

const opts: PipelineOptions = { model_name: 'Dlib', detector_backend: 'opencv', align: true, enforce_detection: true, expand_percentage: 0, normalization: 'base' };
const det = (x: number, w: number, conf = 0.9): Detection => ({ x, y: 10, w, h: w, confidence: conf, left_eye: null, right_eye: null });

/** The pipeline's verify with the service's decision on top (src/service/compute-service.ts decides). */
async function verifyDecided(pipeline: Pipeline, inputs: Parameters<Pipeline['verify']>[0], opts: PipelineOptions & { distance_metric: DistanceMetric; threshold: number | null }) {
  const r = await pipeline.verify(inputs, opts);
  return { ...r, ...decide(r.distance, opts.model_name, opts.distance_metric, opts.threshold) };
}

t.test('opencv finding nothing falls back to retinaface, and the area says so', async (t) => {
  const { pipeline, calls } = fakes({ opencv: [], retinaface: [det(20, 8, 0.999)] });
  const faces = await pipeline.represent([img(40, 40)], { ...opts, max_faces: null, l2_normalize: false });
  t.same(calls.detect, ['opencv', 'retinaface']);
  t.equal(faces[0]?.[0]?.facial_area.detector, 'retinaface');
  t.equal(faces[0]?.[0]?.face_confidence, 1, 'confidence rounded to 2 decimals');
});

t.test('detector_fallback=false is DeepFace: no retry, so no_face_detected or the whole image', async (t) => {
  const { pipeline, calls } = fakes({ opencv: [], retinaface: [det(20, 8, 0.999)] });
  const off = { ...opts, detector_fallback: false, max_faces: null, l2_normalize: false };
  await t.rejects(pipeline.represent([img(40, 30)], off), { code: 'no_face_detected' });
  const faces = await pipeline.represent([img(40, 30)], { ...off, enforce_detection: false });
  t.same(calls.detect, ['opencv', 'opencv'], 'retinaface never ran');
  t.equal(faces[0]?.length, 1);
  t.match(faces[0]?.[0]?.facial_area, { x: 0, y: 0, w: 39, h: 29, left_eye: null, right_eye: null, detector: 'opencv' });
  t.equal(faces[0]?.[0]?.face_confidence, 0);
  // The whole image is what gets embedded: the fake's embedding carries the face's fill byte (0 here,
  // where the retinaface face at x=20 would give 20).
  t.same(faces[0]?.[0]?.embedding, [0, 1]);

  const on = fakes({ opencv: [], retinaface: [det(20, 8, 0.999)] });
  const r = await on.pipeline.represent([img(40, 30)], { ...opts, detector_fallback: true, enforce_detection: false, max_faces: null, l2_normalize: false });
  t.same(on.calls.detect, ['opencv', 'retinaface'], 'true retries, as an absent field does');
  t.same(r[0]?.[0]?.embedding, [20, 1]);

  // A face opencv finds is the same either way; so is every other detector.
  const found = fakes({ opencv: [det(5, 8)], retinaface: [det(20, 8)] });
  const a = await found.pipeline.represent([img(40, 30)], { ...off });
  t.same(a[0]?.[0]?.embedding, [5, 1]);
  const other = fakes({ retinaface: [] });
  await t.rejects(other.pipeline.represent([img(40, 30)], { ...opts, detector_backend: 'retinaface', max_faces: null, l2_normalize: false }), { code: 'no_face_detected' });
  t.same(other.calls.detect, ['retinaface'], 'only opencv has a fallback');
});

t.test("the fallback rule: a fallback face must be large enough and central, opencv's faces are never filtered", async (t) => {
  // 100×100 image; the fake border adds 50 on each side, so an area (x, y) is detected at (x+50, y+50).
  const at = (x: number, y: number, w: number, conf = 0.99): Detection => ({ x: x + 50, y: y + 50, w, h: w, confidence: conf, left_eye: null, right_eye: null });
  const central = at(35, 35, 30); // side 30 >= 0.2 × 100, centre (50, 50)
  const small = at(45, 45, 10); // side 10 < 20
  const edge = at(0, 0, 30); // centre (15, 15): 35 from the middle, beyond the middle half's 25
  const rule = { minFaceSide: 0.2, centreSpan: 0.5 };
  const run = (dets: Record<string, Detection[]>, o: Partial<PipelineOptions> = {}, r: FallbackRule = rule) =>
    fakes(dets, 0, r).pipeline.represent([img(100, 100)], { ...opts, enforce_detection: false, max_faces: null, l2_normalize: false, ...o });

  const kept = await run({ opencv: [], retinaface: [small, central, edge] });
  t.same(kept[0]?.map((f) => [f.facial_area.x, f.facial_area.y, f.facial_area.w, f.facial_area.detector]), [[35, 35, 30, 'retinaface']], 'only the large central face');

  // Every fallback face dropped: as if the fallback found none (whole image, or no_face_detected).
  const none = await run({ opencv: [], retinaface: [small, edge] });
  t.match(none[0], [{ facial_area: { x: 0, y: 0, w: 99, h: 99 }, face_confidence: 0, embedding: [0, 1] }]);
  await t.rejects(run({ opencv: [], retinaface: [small, edge] }, { enforce_detection: true }), { code: 'no_face_detected' });

  // opencv's own faces are DeepFace's: kept however small or off-centre, with the fallback on or off.
  for (const detector_fallback of [true, false]) {
    const own = await run({ opencv: [small, edge], retinaface: [central] }, { detector_fallback });
    t.equal(own[0]?.length, 2, `opencv's faces kept (detector_fallback=${detector_fallback})`);
  }
  // A rule of 0 and 1 keeps every fallback face.
  const all = await run({ opencv: [], retinaface: [small, central, edge] }, {}, { minFaceSide: 0, centreSpan: 1 });
  t.equal(all[0]?.length, 3);
});

t.test('keepsFallbackFace: the bounds are inclusive', async (t) => {
  const rule = { minFaceSide: 0.2, centreSpan: 0.5 };
  t.ok(keepsFallbackFace(rule, { x: 40, y: 40, w: 20, h: 20 }, 100, 100), 'side exactly 20% of the shorter side');
  t.notOk(keepsFallbackFace(rule, { x: 40, y: 40, w: 19, h: 30 }, 100, 100), 'the shorter side decides');
  t.ok(keepsFallbackFace(rule, { x: 65, y: 40, w: 20, h: 20 }, 100, 100), 'centre at 75: on the middle half');
  t.notOk(keepsFallbackFace(rule, { x: 66, y: 40, w: 20, h: 20 }, 100, 100), 'centre at 76: outside');
  t.notOk(keepsFallbackFace(rule, { x: 140, y: 10, w: 40, h: 40 }, 200, 100), 'each axis on its own scale (y centre 30 of 100)');
  t.ok(keepsFallbackFace(rule, { x: 180, y: 10, w: 40, h: 80 }, 400, 100), "the image's shorter side: 40 against 0.2 × 100, not × 400");
});

t.test('no face anywhere: no_face_detected, or the whole image when enforce_detection is off', async (t) => {
  const { pipeline } = fakes({});
  await t.rejects(pipeline.represent([img(40, 30)], { ...opts, max_faces: null, l2_normalize: false }), { code: 'no_face_detected' });
  const faces = await pipeline.represent([img(40, 30)], { ...opts, enforce_detection: false, max_faces: null, l2_normalize: false });
  t.match(faces[0]?.[0]?.facial_area, { x: 0, y: 0, w: 39, h: 29, left_eye: null, right_eye: null });
  t.equal(faces[0]?.[0]?.face_confidence, 0);
});

t.test('align adds the border before detection; align=false does not', async (t) => {
  const a = fakes({ opencv: [det(30, 8)] });
  await a.pipeline.represent([img(40, 40)], { ...opts, max_faces: null, l2_normalize: false });
  t.equal(a.calls.border, 1);
  const b = fakes({ opencv: [det(30, 8)] });
  const r = await b.pipeline.represent([img(40, 40)], { ...opts, align: false, max_faces: null, l2_normalize: false });
  t.equal(b.calls.border, 0);
  t.equal(r[0]?.[0]?.facial_area.x, 30, 'no border offset without align');
});

t.test('max_faces keeps the largest faces, largest first', async (t) => {
  const { pipeline } = fakes({ opencv: [det(1, 5), det(2, 9), det(3, 7)] });
  const r = await pipeline.represent([img(40, 40)], { ...opts, align: false, max_faces: 2, l2_normalize: false });
  t.same(r[0]?.map((f) => f.facial_area.w), [9, 7]);
  const all = await pipeline.represent([img(40, 40)], { ...opts, align: false, max_faces: null, l2_normalize: false });
  t.same(all[0]?.map((f) => f.facial_area.w), [5, 9, 7], 'detector order without max_faces');
});

t.test('skip uses the whole image', async (t) => {
  const { pipeline, calls } = fakes({});
  const r = await pipeline.represent([img(50, 20)], { ...opts, detector_backend: 'skip', max_faces: null, l2_normalize: false });
  t.same(calls.detect, []);
  t.match(r[0]?.[0]?.facial_area, { x: 0, y: 0, w: 49, h: 19, detector: 'skip' });
});

t.test('l2_normalize gives unit vectors', async (t) => {
  const { pipeline } = fakes({ opencv: [det(3, 8)] });
  const r = await pipeline.represent([img(40, 40)], { ...opts, align: false, max_faces: null, l2_normalize: true });
  const e = r[0]?.[0]?.embedding ?? [];
  t.ok(Math.abs(Math.hypot(...e) - 1) < 1e-9);
});

t.test('a batch embeds every face of every image in one model run', async (t) => {
  const { pipeline, calls } = fakes({ opencv: [det(3, 8), det(9, 8)] });
  const r = await pipeline.represent([img(40, 40), img(40, 40)], { ...opts, align: false, max_faces: null, l2_normalize: false });
  t.equal(r.length, 2);
  t.equal(r[1]?.length, 2);
  t.equal(calls.embeds, 1);
  t.same(r.map((g) => g.map((f) => f.embedding[0])), [[3, 9], [3, 9]], 'each face keeps its own embedding, in order');
});

t.test('represent takes one image at a time, from decoding to tensor rows (issue 24)', async (t) => {
  // A batch of large images must never be decoded all at once: image i+1 is decoded only once
  // image i's faces are tensor rows (its pixels are then no longer referenced).
  const { pipeline, calls } = fakes({ opencv: [det(3, 8), det(9, 8)] });
  const loaders = [0, 1, 2].map((i) => async () => {
    calls.events.push(`decode ${i}`);
    return img(40, 40);
  });
  const r = await pipeline.represent(loaders, { ...opts, align: false, max_faces: null, l2_normalize: false });
  t.equal(r.length, 3);
  t.same(calls.events, ['decode 0', 'detect', 'tensor of 2', 'decode 1', 'detect', 'tensor of 2', 'decode 2', 'detect', 'tensor of 2', 'embed 6']);
});

t.test('verify takes the minimum distance over all face pairs and reports that pair', async (t) => {
  // Embeddings are (x, 1): faces at x=3 and x=9 in img1; img2 gets the same detections.
  const { pipeline } = fakes({ opencv: [det(3, 8), det(9, 8)] });
  const r = await verifyDecided(pipeline, { img1: img(40, 40), img2: [9, 1], sameImage: false }, { ...opts, align: false, distance_metric: 'euclidean', threshold: null });
  t.equal(r.distance, 0);
  t.equal(r.verified, true);
  t.equal((r.areas.img1 as { x: number }).x, 9, 'the closest face of img1');
  t.same(r.areas.img2, { x: null, y: null, w: null, h: null, left_eye: null, right_eye: null });
  t.equal(r.threshold, 0.6, "Dlib's calibrated euclidean threshold");
  t.equal(r.confidence, 100);
});

t.test('a caller threshold changes verified but not confidence (DeepFace semantics)', async (t) => {
  const { pipeline } = fakes({});
  const r = await verifyDecided(pipeline, { img1: [1, 0], img2: [0.8, 0.6], sameImage: false }, { ...opts, distance_metric: 'cosine', threshold: 0.5 });
  t.equal(r.distance, 0.2);
  t.equal(r.verified, true);
  t.equal(r.threshold, 0.5);
  t.ok(r.confidence <= 49, 'confidence follows the calibrated 0.07 threshold');
});

t.test('identical images are detected once', async (t) => {
  const { pipeline, calls } = fakes({ opencv: [det(3, 8)] });
  const same = img(40, 40);
  const r = await verifyDecided(pipeline, { img1: same, img2: same, sameImage: true }, { ...opts, distance_metric: 'cosine', threshold: null });
  t.equal(r.distance, 0);
  t.equal(calls.detect.length, 1);
  t.equal(calls.tensors, 1);
});

t.test('verify detects both images at once, and still reports img1 first when both fail', async (t) => {
  const { pipeline } = fakes({ opencv: [det(3, 8)] });
  // A detector that holds every call until two are in flight: a sequential verify would hang.
  let inFlight = 0;
  let release: () => void = () => undefined;
  const both = new Promise<void>((r) => (release = r));
  const gated: FaceDetector = {
    name: 'opencv',
    detect: async () => {
      inFlight++;
      if (inFlight === 2) release();
      await both;
      return [det(3, 8)];
    },
  };
  const detectors = (pipeline as unknown as { deps: { detectors: Map<string, FaceDetector> } }).deps.detectors;
  detectors.set('opencv', gated);
  const timeout = new Promise<string>((r) => setTimeout(() => r('timed out'), 2000));
  const r = await Promise.race([verifyDecided(pipeline, { img1: img(40, 40), img2: img(40, 40, 1), sameImage: false }, { ...opts, align: false, distance_metric: 'cosine', threshold: null }), timeout]);
  t.not(r, 'timed out', 'both detections ran concurrently');

  // No face anywhere (the fallback finds none either): the error names img1, as DeepFace's would.
  const none = fakes({});
  await t.rejects(verifyDecided(none.pipeline, { img1: img(40, 40), img2: img(40, 40, 1), sameImage: false }, { ...opts, distance_metric: 'cosine', threshold: null }), {
    code: 'no_face_detected',
    detail: /in img1\./,
  });
});

t.test('embedding inputs are checked against the model dimension', async (t) => {
  const { pipeline } = fakes({});
  await t.rejects(verifyDecided(pipeline, { img1: [1, 2, 3], img2: [1, 2], sameImage: false }, { ...opts, distance_metric: 'cosine', threshold: null }), {
    code: 'embedding_dimension_mismatch',
  });
});

t.test('unknown model and detector are refused with the allowed ones listed', async (t) => {
  const { pipeline } = fakes({});
  await t.rejects(pipeline.represent([img(4, 4)], { ...opts, model_name: 'VGG-Face', max_faces: null, l2_normalize: false }), { code: 'model_not_allowed' });
  await t.rejects(pipeline.represent([img(4, 4)], { ...opts, detector_backend: 'mtcnn', max_faces: null, l2_normalize: false }), {
    code: 'detector_not_allowed',
    detail: /opencv, retinaface, skip/,
  });
});

t.test('large images are detected downscaled; boxes map back and faces are cut at full size', async (t) => {
  // A 400x200 image, max side 100: detection sees 100x50 (200x100 with the align border).
  const small: Detection = { x: 60, y: 30, w: 10, h: 10, confidence: 0.9, left_eye: [67, 33], right_eye: [62, 33] };
  const { pipeline, calls } = fakes({ opencv: [small] }, 100);
  let seen: Detection[] = [];
  const r = await new Pipeline({
    image: {
      ...(pipeline as unknown as { deps: { image: ImageOps } }).deps.image,
      extractFaces: async (i, dets, o) => {
        seen = dets;
        t.same([i.width, i.height, o.borderLeft, o.borderTop], [800, 400, 200, 100], 'extraction uses the full-size bordered image');
        return dets.map((d) => ({ face: img(d.w, d.h), facial_area: { x: d.x - o.borderLeft, y: d.y - o.borderTop, w: d.w, h: d.h, left_eye: null, right_eye: null, detector: o.detector }, face_confidence: d.confidence }));
      },
    },
    detectors: (pipeline as unknown as { deps: { detectors: Map<string, FaceDetector> } }).deps.detectors,
    recognizers: (pipeline as unknown as { deps: { recognizers: Map<string, Recognizer> } }).deps.recognizers,
    fallbackDetector: null,
    detectorMaxSide: 100,
  }).represent([img(400, 200)], { ...opts, max_faces: null, l2_normalize: false });
  t.same(calls.shrink, [[100, 50]]);
  t.same(calls.detectedSizes, [[200, 100]], 'the detector saw the small bordered image');
  // (60 - 50) * 4 + 200 = 240; (30 - 25) * 4 + 100 = 120; eyes likewise.
  t.match(seen[0], { x: 240, y: 120, w: 40, h: 40, left_eye: [268, 132], right_eye: [248, 132] });
  t.match(r[0]?.[0]?.facial_area, { x: 40, y: 20, w: 40, h: 40 });
});

t.test('images within the max side are detected as they are', async (t) => {
  const { pipeline, calls } = fakes({ opencv: [det(3, 8)] }, 1000);
  await pipeline.represent([img(40, 40)], { ...opts, max_faces: null, l2_normalize: false });
  t.same(calls.shrink, []);
});

t.test("skip: represent letterboxes the uint8 image, verify and compare divide first (DeepFace's two paths)", async (t) => {
  const { pipeline, calls } = fakes({ opencv: [det(20, 8)] });
  const skip = { ...opts, detector_backend: 'skip' };
  await pipeline.represent([img(40, 30)], { ...skip, max_faces: null, l2_normalize: false });
  await verifyDecided(pipeline, { img1: img(40, 30), img2: img(40, 30, 1), sameImage: false }, { ...skip, distance_metric: 'cosine', threshold: null });
  await pipeline.embedLargest(img(40, 30), skip);
  await pipeline.represent([img(40, 30)], { ...opts, max_faces: null, l2_normalize: false });
  await pipeline.represent([img(40, 30)], { ...opts, enforce_detection: false, detector_backend: 'retinaface', max_faces: null, l2_normalize: false });
  await pipeline.represent([img(40, 30)], { ...skip, max_faces: null, l2_normalize: false, image_dtype: 'float' });
  await pipeline.represent([img(40, 30)], { ...opts, max_faces: null, l2_normalize: false, image_dtype: 'uint8' });
  t.same(
    calls.letterbox,
    ['uint8', 'float', 'float', 'float', 'float', 'float', 'float'],
    'uint8 only for /represent with skip and a uint8 image_dtype; a whole image found by no detector is divided first; a detected face always',
  );
});

// Issue 39: return_face gives each face's crop (as extract_faces has it, before resizing) next to its
// embedding, the whole image where no face was found; without it no crop is encoded or returned.
t.test('return_face: one crop per face, in face order; none without it', async (t) => {
  const two = { opencv: [det(20, 8), det(60, 12)] };
  const on = await fakes(two).pipeline.represent([img(100, 100)], { ...opts, max_faces: null, l2_normalize: false, return_face: true });
  t.same(on[0]?.map((f) => Buffer.from(f.face_png ?? '', 'base64').toString()), ['8x8:20', '12x12:60']);
  const off = await fakes(two).pipeline.represent([img(100, 100)], { ...opts, max_faces: null, l2_normalize: false });
  t.ok(off[0]?.every((f) => !('face_png' in f)), 'no face_png key without return_face');
  const whole = await fakes({ opencv: [] }).pipeline.represent([img(40, 30)], { ...opts, detector_fallback: false, enforce_detection: false, max_faces: null, l2_normalize: false, return_face: true });
  t.match(Buffer.from(whole[0]?.[0]?.face_png ?? '', 'base64').toString(), /^40x30:/, 'the whole image when no face was found');
});
