/**
 * What a compute frame costs a model server in memory, estimated from its header and its images'
 * dimensions before anything is decoded. The model server admits work by it (src/model-server/
 * memory-gate.ts); the client uses it to tell which request a dead model server was running the
 * largest job for (client.ts). An upper bound, not a prediction: each term is the largest buffer
 * the pipeline holds at once, and each detector's estimate is kept above the peak that
 * bench/adversary/memory-probe.ts measures (bench/results/model-server-memory.json).
 */
import type { FrameHeader } from './protocol.js';

export interface ImageDims {
  width: number;
  height: number;
}

/** Bytes per pixel of a detector's input and a fixed part, on top of the images themselves. */
interface DetectorCost {
  perPixel: number;
  fixed: number;
  /** Whether the bordered copy of align=True is held whole beside the image (Haar scans without it). */
  bordered: boolean;
}

const MiB = 1024 * 1024;

/**
 * MTCNN holds one pyramid level as float32 RGB (the first is 0.36 of the image: 4.3 B/px), PNet's
 * outputs of every level (6 floats per output cell, 0.73 of the image in cells / 4: 4.4 B/px), and
 * one banded PNet run plus RNet/ONet crops (fixed). Haar scans in stripes: its grey and integral
 * images are small beside the bordered copy (measured: +457 MiB for a verify of two 16 MP images
 * detected at once, where 24 B/px had estimated 3.6 GiB and refused two 40 MP photos). RetinaFace
 * and YuNet resize to at most 1024 and 640 px first: fixed.
 */
const DETECTORS: Record<string, DetectorCost> = {
  skip: { perPixel: 0, fixed: 16 * MiB, bordered: true },
  opencv: { perPixel: 2, fixed: 64 * MiB, bordered: false },
  mtcnn: { perPixel: 10, fixed: 256 * MiB, bordered: true },
  fastmtcnn: { perPixel: 10, fixed: 256 * MiB, bordered: true },
  retinaface: { perPixel: 0, fixed: 384 * MiB, bordered: true },
  yunet: { perPixel: 0, fixed: 128 * MiB, bordered: true },
};

/** A detector this table does not know is costed as the most expensive one it does. */
const UNKNOWN: DetectorCost = { perPixel: 24, fixed: 384 * MiB, bordered: true };

/**
 * The face an image yields, per pixel of the image: at most the whole image (no face found, with
 * enforce_detection false, or detector skip), as 8-bit and as float32 RGB before its resize to the
 * model's input (measured: +1030 MiB for a verify of two 40 MP images with skip).
 */
const FACE_BYTES_PER_PIXEL = 15;

/** The embedding side of a request: one batch of aligned faces through the recognizer. */
const RECOGNIZER_BYTES = 128 * MiB;

export interface CostOptions {
  /** FACECOMPUTE_DETECTOR_MAX_SIDE of the model server (0: detection at full size). */
  detectorMaxSide: number;
}

export interface JobCost {
  /** Peak bytes with the images detected one after another. */
  sequential: number;
  /** Peak bytes with every image of the request detected at once (verify's two images). */
  concurrent: number;
}

/** DeepFace's align=True border: int(0.5·H) top and bottom, int(0.5·W) left and right. */
function bordered(d: ImageDims): ImageDims {
  return { width: d.width + 2 * Math.floor(d.width / 2), height: d.height + 2 * Math.floor(d.height / 2) };
}

/** Bytes one image holds while it is detected and its faces extracted, beyond its decoded pixels. */
function detectionBytes(d: ImageDims, detector: string, align: boolean, opts: CostOptions): number {
  const cost = DETECTORS[detector] ?? UNKNOWN;
  const px = d.width * d.height;
  let held = 0;
  let det = d;
  const long = Math.max(d.width, d.height);
  if (detector !== 'skip' && opts.detectorMaxSide > 0 && long > opts.detectorMaxSide) {
    const f = opts.detectorMaxSide / long;
    det = { width: Math.max(1, Math.round(d.width * f)), height: Math.max(1, Math.round(d.height * f)) };
    held += 3 * det.width * det.height;
  }
  if (align && detector !== 'skip') {
    const b = bordered(d);
    if (cost.bordered) held += 3 * b.width * b.height;
    if (det !== d) {
      det = bordered(det);
      held += 3 * det.width * det.height;
    } else det = b;
  }
  return held + cost.perPixel * det.width * det.height + cost.fixed + FACE_BYTES_PER_PIXEL * px;
}

/**
 * The peak of one frame: every decoded image it holds at once plus what detection adds. Verify
 * holds both images and may detect them at once; represent takes its images one at a time.
 */
export function jobCost(header: Pick<FrameHeader, 'op' | 'detector_backend' | 'align'>, images: ImageDims[], opts: CostOptions): JobCost {
  if (images.length === 0) return { sequential: RECOGNIZER_BYTES, concurrent: RECOGNIZER_BYTES };
  const decoded = images.map((d) => 3 * d.width * d.height);
  const detect = images.map((d) => detectionBytes(d, header.detector_backend, header.align, opts));
  if (header.op === 'represent') {
    const one = Math.max(...decoded.map((b, i) => b + (detect[i] as number)));
    return { sequential: one + RECOGNIZER_BYTES, concurrent: one + RECOGNIZER_BYTES };
  }
  const all = decoded.reduce((a, b) => a + b, 0);
  return {
    sequential: all + Math.max(...detect) + RECOGNIZER_BYTES,
    concurrent: all + detect.reduce((a, b) => a + b, 0) + RECOGNIZER_BYTES,
  };
}
