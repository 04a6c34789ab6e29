/**
 * DeepFace's represent / verify / extract_faces flow (reference §2.2, §2.3, §5.1), on the ports of
 * engines.ts. Orchestration only: pixels, detection and inference happen off the JS thread.
 */
import { ServiceError } from '../errors/index.js';
import { distance, l2normalize } from '../deepface/distance.js';
import type { DistanceMetric, FacialArea, NullArea, Normalization, PipelineOptions, RepresentFace } from '../model-client/protocol.js';
import type { Detection, ExtractedFace, FaceDetector, ImageOps, NativeImage, Recognizer, TensorSpec } from './engines.js';

/** A decoded image, or how to decode it when its turn comes (Pipeline.represent). */
export type ImageInput = NativeImage | (() => Promise<NativeImage>);

export interface PipelineDeps {
  image: ImageOps;
  detectors: ReadonlyMap<string, FaceDetector>;
  recognizers: ReadonlyMap<string, Recognizer>;
  /** Detector tried when `opencv` finds nothing (contract §3), if installed and allowed. */
  fallbackDetector: string | null;
  /**
   * Longest side detection runs at (FACECOMPUTE_DETECTOR_MAX_SIDE); 0 detects at full size, which is
   * what DeepFace does. Boxes are mapped back and faces are cropped from the full-resolution image.
   */
  detectorMaxSide?: number;
  /** Which faces found only by the fallback are kept (FACECOMPUTE_FALLBACK_*); absent keeps all. */
  fallbackRule?: FallbackRule;
}

/**
 * A face the fallback found is kept when its shorter side is at least `minFaceSide` × the image's
 * shorter side and its centre lies in the central `centreSpan` of each axis. The fallback exists for
 * portraits opencv misses; a small face near the edge of such an image is usually someone else.
 */
export interface FallbackRule {
  minFaceSide: number;
  centreSpan: number;
}

export function keepsFallbackFace(rule: FallbackRule, area: { x: number; y: number; w: number; h: number }, width: number, height: number): boolean {
  if (Math.min(area.w, area.h) < rule.minFaceSide * Math.min(width, height)) return false;
  const cx = area.x + area.w / 2;
  const cy = area.y + area.h / 2;
  return Math.abs(cx - width / 2) <= (rule.centreSpan * width) / 2 && Math.abs(cy - height / 2) <= (rule.centreSpan * height) / 2;
}

/** Faces of one image, as the binding's extractFaces reports them (the response's shape). */
export interface ImageFaces {
  faces: ExtractedFace[];
}

/** A face and its embedding; `facial_area` and `face_confidence` go to the response as they are. */
export type EmbeddedFace = Pick<ExtractedFace, 'facial_area' | 'face_confidence'> & { embedding: Float32Array };

export function nullArea(): NullArea {
  return { x: null, y: null, w: null, h: null, left_eye: null, right_eye: null };
}

function noFace(imgName: string): ServiceError {
  return new ServiceError(
    'no_face_detected',
    `Face could not be detected in ${imgName}. Please confirm that the picture is a face photo or consider to set enforce_detection param to False.`,
  );
}

/** The whole image as the one face: DeepFace reports it as (0, 0, W-1, H-1) with confidence 0. */
function wholeImage(img: NativeImage, detector: string): ExtractedFace {
  return {
    face: img,
    facial_area: { x: 0, y: 0, w: img.width - 1, h: img.height - 1, left_eye: null, right_eye: null, detector },
    face_confidence: 0,
  };
}

export class Pipeline {
  constructor(private readonly deps: PipelineDeps) {}

  recognizer(model: string): Recognizer {
    const r = this.deps.recognizers.get(model);
    if (!r) throw new ServiceError('model_not_allowed', `model ${model} is not available; allowed: ${[...this.deps.recognizers.keys()].join(', ')}`);
    return r;
  }

  private detector(name: string): FaceDetector {
    const d = this.deps.detectors.get(name);
    if (!d) throw new ServiceError('detector_not_allowed', `detector ${name} is not available; allowed: ${[...this.deps.detectors.keys()].join(', ')}`);
    return d;
  }

  /** extract_faces: every face of one decoded image, or the whole image per enforce_detection. */
  async extractFaces(img: NativeImage, opts: PipelineOptions, imgName: string, maxFaces: number | null = null): Promise<ImageFaces> {
    const requested = opts.detector_backend;
    if (requested === 'skip') {
      this.detector('skip'); // honours the allowlist
      return { faces: [wholeImage(img, 'skip')] };
    }
    // Detection may run on a smaller copy; extraction always uses the full-resolution image.
    const maxSide = this.deps.detectorMaxSide ?? 0;
    let small = img;
    if (maxSide > 0 && Math.max(img.width, img.height) > maxSide) {
      const f = maxSide / Math.max(img.width, img.height);
      small = await this.deps.image.shrink(img, Math.max(1, Math.round(img.width * f)), Math.max(1, Math.round(img.height * f)));
    }
    let bordered = img;
    let top = 0;
    let left = 0;
    let detInput = small;
    let dTop = 0;
    let dLeft = 0;
    if (opts.align) {
      const b = await this.deps.image.border(img);
      bordered = b.image;
      top = b.top;
      left = b.left;
      if (small === img) {
        detInput = bordered;
        dTop = top;
        dLeft = left;
      } else {
        const sb = await this.deps.image.border(small);
        detInput = sb.image;
        dTop = sb.top;
        dLeft = sb.left;
      }
    }
    let used = requested;
    let detections: Detection[] = await this.detector(requested).detect(detInput);
    const fallback = this.deps.fallbackDetector;
    // detector_fallback=false is DeepFace's own flow: what `opencv` found, or nothing.
    if (detections.length === 0 && requested === 'opencv' && opts.detector_fallback !== false && fallback && this.deps.detectors.has(fallback)) {
      detections = await this.detector(fallback).detect(detInput);
      used = fallback;
    }
    if (small !== img) {
      const sx = img.width / small.width;
      const sy = img.height / small.height;
      const pt = (p: [number, number]): [number, number] => [Math.round((p[0] - dLeft) * sx) + left, Math.round((p[1] - dTop) * sy) + top];
      detections = detections.map((d) => ({
        ...d,
        x: Math.round((d.x - dLeft) * sx) + left,
        y: Math.round((d.y - dTop) * sy) + top,
        w: Math.round(d.w * sx),
        h: Math.round(d.h * sy),
        left_eye: d.left_eye && pt(d.left_eye),
        right_eye: d.right_eye && pt(d.right_eye),
        ...(d.nose ? { nose: pt(d.nose) } : {}),
        ...(d.mouth_left ? { mouth_left: pt(d.mouth_left) } : {}),
        ...(d.mouth_right ? { mouth_right: pt(d.mouth_right) } : {}),
      }));
    }
    if (maxFaces !== null && maxFaces < detections.length) {
      // heapq.nlargest by area: largest first, ties in detector order.
      detections = detections
        .map((d, i) => ({ d, i }))
        .sort((a, b) => b.d.w * b.d.h - a.d.w * a.d.h || a.i - b.i)
        .slice(0, maxFaces)
        .map((x) => x.d);
    }
    if (detections.length === 0) {
      if (opts.enforce_detection) throw noFace(imgName);
      return { faces: [wholeImage(img, used)] };
    }
    const extracted = await this.deps.image.extractFaces(bordered, detections, {
      align: opts.align,
      expandPercentage: opts.expand_percentage,
      borderTop: top,
      borderLeft: left,
      originalWidth: img.width,
      originalHeight: img.height,
      detector: used,
    });
    const rule = this.deps.fallbackRule;
    const faces = extracted
      .filter((f) => f.face.width > 0 && f.face.height > 0)
      // Only with detector_fallback on (`used` differs from the request only then), on the facial
      // area in the original image's coordinates, as tools/parity/fallback-rule.ts measured it.
      .filter((f) => used === requested || !rule || keepsFallbackFace(rule, f.facial_area, img.width, img.height));
    if (faces.length === 0) {
      if (opts.enforce_detection) throw noFace(imgName);
      return { faces: [wholeImage(img, used)] };
    }
    return { faces };
  }

  /** How `rec`'s input is made of faces. */
  private tensorSpec(rec: Recognizer, normalization: Normalization, letterbox: 'float' | 'uint8'): TensorSpec {
    return {
      width: rec.input.width,
      height: rec.input.height,
      layout: rec.input.layout,
      channelOrder: rec.input.channel_order,
      preprocess: rec.input.preprocess,
      normalization,
      letterbox,
    };
  }

  /** One model run over the rows of `tensors` (`count` faces in all), embeddings in row order. */
  private async embedRows(rec: Recognizer, tensors: Float32Array[], count: number): Promise<Float32Array[]> {
    if (count === 0) return [];
    let batch = tensors[0] as Float32Array;
    if (tensors.length > 1) {
      batch = new Float32Array(tensors.reduce((n, x) => n + x.length, 0));
      let at = 0;
      for (const x of tensors) {
        batch.set(x, at);
        at += x.length;
      }
    }
    return rec.embed(batch, count);
  }

  /**
   * Embeds faces of several images in one batch (one model run for all of them). `letterbox`: see
   * TensorSpec; `uint8` only for /represent's whole images with the detector `skip`.
   */
  async embedFaces(model: string, normalization: Normalization, groups: ExtractedFace[][], letterbox: 'float' | 'uint8' = 'float'): Promise<EmbeddedFace[][]> {
    const rec = this.recognizer(model);
    const all = groups.flat();
    if (all.length === 0) return groups.map(() => []);
    const tensor = await this.deps.image.toTensor(
      all.map((f) => f.face),
      this.tensorSpec(rec, normalization, letterbox),
    );
    const embeddings = await this.embedRows(rec, [tensor], all.length);
    let at = 0;
    return groups.map((g) =>
      g.map((f) => {
        const embedding = embeddings[at++] as Float32Array;
        return { embedding, facial_area: f.facial_area, face_confidence: f.face_confidence };
      }),
    );
  }

  /**
   * represent for several images (a batch request gives one list per image). The images are taken
   * one at a time, from decoding (an ImageInput may be a loader) to their faces' tensor rows: a
   * decoded image is dropped before the next is decoded, so a batch of 16 large images holds one of
   * them at a time, not 16. The faces of all images still go through one model run.
   */
  async represent(
    images: ReadonlyArray<ImageInput>,
    opts: PipelineOptions & { max_faces: number | null; l2_normalize: boolean; return_face?: boolean; image_dtype?: 'uint8' | 'float' },
  ): Promise<RepresentFace[][]> {
    const rec = this.recognizer(opts.model_name);
    // DeepFace's represent letterboxes a uint8 `skip` image as uint8 before dividing by 255, and a
    // float one (image_dtype `float`) as floats; its verify (and find) divide first, as for every
    // detected face: the embeddings differ at the 1e-5 level.
    const skip8 = opts.detector_backend === 'skip' && opts.image_dtype !== 'float';
    const spec = this.tensorSpec(rec, opts.normalization, skip8 ? 'uint8' : 'float');
    const groups: Array<Array<Pick<ExtractedFace, 'facial_area' | 'face_confidence'> & { png?: Buffer }>> = [];
    const tensors: Float32Array[] = [];
    for (const [i, input] of images.entries()) {
      const img = typeof input === 'function' ? await input() : input;
      const { faces } = await this.extractFaces(img, opts, images.length === 1 ? 'img' : `img[${i}]`, opts.max_faces);
      // return_face: each crop as extract_faces has it (before resizing), encoded losslessly.
      const pngs = opts.return_face ? await Promise.all(faces.map((f) => this.deps.image.encodePng(f.face))) : null;
      groups.push(faces.map((f, k) => ({ facial_area: f.facial_area, face_confidence: f.face_confidence, ...(pngs ? { png: pngs[k] } : {}) })));
      if (faces.length > 0) tensors.push(await this.deps.image.toTensor(faces.map((f) => f.face), spec));
    }
    const embeddings = await this.embedRows(rec, tensors, groups.reduce((n, g) => n + g.length, 0));
    let at = 0;
    return groups.map((g) =>
      g.map((f) => {
        const embedding = embeddings[at++] as Float32Array;
        return {
          embedding: opts.l2_normalize ? l2normalize(embedding) : Array.from(embedding),
          facial_area: f.facial_area,
          face_confidence: f.face_confidence,
          ...(f.png ? { face_png: f.png.toString('base64') } : {}),
        };
      }),
    );
  }

  /** The largest face of one image: the source side of an image /compare. */
  async embedLargest(img: NativeImage, opts: PipelineOptions): Promise<EmbeddedFace> {
    this.recognizer(opts.model_name);
    const { faces } = await this.extractFaces(img, opts, 'source', 1);
    const [group] = await this.embedFaces(opts.model_name, opts.normalization, [faces]);
    const first = group?.[0];
    if (!first) throw noFace('source');
    return first;
  }

  /**
   * verify's part here: the unrounded minimum distance over every face pair (§2.2) and that pair's
   * areas. The decision (threshold, verified, confidence) is the service's, made once for every
   * input. Inputs are decoded images or caller-supplied embeddings; identical images are decoded and
   * detected once by the caller.
   */
  async verify(
    inputs: { img1: NativeImage | number[]; img2: NativeImage | number[]; sameImage: boolean; oneAtATime?: boolean },
    opts: PipelineOptions & { distance_metric: DistanceMetric },
  ): Promise<{ distance: number; areas: { img1: FacialArea | NullArea; img2: FacialArea | NullArea } }> {
    const rec = this.recognizer(opts.model_name);
    const sides: Array<{ embeddings: ArrayLike<number>[]; areas: Array<FacialArea | NullArea> }> = [];
    const pending: ExtractedFace[][] = [];
    const pendingSide: number[] = [];
    // Both images are detected at once (a verify at concurrency 1 then uses both cores), or one
    // after the other when the memory budget says so; errors are still reported for img1 before
    // img2, as DeepFace raises them in that order.
    const reuse = inputs.sameImage && !Array.isArray(inputs.img1);
    const detect = (input: NativeImage | number[], i: number): Promise<ImageFaces | null> | null =>
      Array.isArray(input) || (i === 1 && reuse) ? null : this.extractFaces(input, opts, i === 0 ? 'img1' : 'img2');
    const extracted: PromiseSettledResult<ImageFaces | null>[] = [];
    if (inputs.oneAtATime) {
      for (const [i, input] of [inputs.img1, inputs.img2].entries()) {
        const [r] = await Promise.allSettled([detect(input, i)]);
        extracted.push(r as PromiseSettledResult<ImageFaces | null>);
        if (r?.status === 'rejected') break;
      }
    } else extracted.push(...(await Promise.allSettled([inputs.img1, inputs.img2].map(detect))));
    for (const [i, input] of [inputs.img1, inputs.img2].entries()) {
      const name = i === 0 ? 'img1' : 'img2';
      const result = extracted[i] as PromiseSettledResult<ImageFaces | null>;
      if (result.status === 'rejected') throw result.reason;
      if (Array.isArray(input)) {
        if (input.length !== rec.dims) {
          throw new ServiceError('embedding_dimension_mismatch', `embeddings of ${opts.model_name} should have ${rec.dims} dimensions, but ${name} has ${input.length}`);
        }
        sides.push({ embeddings: [input], areas: [nullArea()] });
      } else if (i === 1 && reuse) {
        // Same bytes as img1: reuse its faces and embeddings.
        sides.push({ embeddings: [], areas: [] });
        pendingSide.push(-1);
      } else {
        const faces = result.value?.faces ?? [];
        pending.push(faces);
        pendingSide.push(i);
        sides.push({ embeddings: [], areas: [] });
      }
    }
    const embedded = await this.embedFaces(opts.model_name, opts.normalization, pending);
    let k = 0;
    for (const side of pendingSide) {
      if (side === -1) continue;
      const group = embedded[k++] ?? [];
      const target = sides[side] as (typeof sides)[number];
      target.embeddings = group.map((f) => f.embedding);
      target.areas = group.map((f) => f.facial_area);
    }
    if (pendingSide.includes(-1)) {
      const s0 = sides[0] as (typeof sides)[number];
      sides[1] = { embeddings: s0.embeddings, areas: s0.areas };
    }
    const [a, b] = sides as [(typeof sides)[number], (typeof sides)[number]];
    let best = Number.POSITIVE_INFINITY;
    let bi = 0;
    let bj = 0;
    for (let i = 0; i < a.embeddings.length; i++) {
      for (let j = 0; j < b.embeddings.length; j++) {
        const d = distance(a.embeddings[i] as ArrayLike<number>, b.embeddings[j] as ArrayLike<number>, opts.distance_metric);
        if (d < best) {
          best = d;
          bi = i;
          bj = j;
        }
      }
    }
    return { distance: best, areas: { img1: a.areas[bi] as FacialArea | NullArea, img2: b.areas[bj] as FacialArea | NullArea } };
  }
}
