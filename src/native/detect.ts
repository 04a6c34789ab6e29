/**
 * Typed wrapper of the native detectors. The `opencv` detector (DeepFace's default) runs OpenCV's
 * Haar cascades in the Rust core, off the JS thread; failures come back as ServiceErrors.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { native } from './addon.js';
import { fromNative } from '../errors/index.js';
import type { NativeImage, Point } from './image.js';

export type { NativeImage, Point };

/** One face in the coordinates of the image given to `detect`. */
export interface HaarDetection {
  x: number;
  y: number;
  w: number;
  h: number;
  /** DeepFace's `(100 - levelWeight) / 100`: inverted and uncapped, not a probability. */
  confidence: number;
  /** The person's left eye, on the image's right. */
  leftEye: Point | null;
  rightEye: Point | null;
}

/** A window of the face cascade that passed every stage, before OpenCV's groupRectangles. */
export interface HaarWindow {
  x: number;
  y: number;
  w: number;
  h: number;
  /** The last stage's sum (OpenCV's levelWeights entry). */
  weight: number;
  /** The group it joins (cv::partition's number, eps 0.2). */
  group: number;
}

/** A face as `detect` gives it, with OpenCV's reject level and level weight and its group of windows. */
export interface HaarTracedFace extends HaarDetection {
  rejectLevel: number;
  levelWeight: number;
  group: number;
}

/** `detect`'s faces with their groups, and the raw windows. */
export interface HaarTrace {
  faces: HaarTracedFace[];
  windows: HaarWindow[];
}

export const HAAR_FACE_FILE = 'haarcascade_frontalface_default.xml';
export const HAAR_EYE_FILE = 'haarcascade_eye.xml';

type NativeHaar = InstanceType<typeof native.HaarDetector>;

function point(p: number[] | undefined | null): Point | null {
  return p && p.length === 2 ? [p[0]!, p[1]!] : null;
}

export class OpenCvDetector {
  private constructor(private readonly inner: NativeHaar) {}

  /** From the XML text of the face and eye cascades. */
  static load(faceXml: string, eyeXml: string): OpenCvDetector {
    try {
      return new OpenCvDetector(native.HaarDetector.load(faceXml, eyeXml));
    } catch (err) {
      throw fromNative(err);
    }
  }

  /** From a weights directory holding OpenCV's two cascade files. */
  static async fromDir(weightsDir: string): Promise<OpenCvDetector> {
    const [face, eye] = await Promise.all([
      readFile(join(weightsDir, HAAR_FACE_FILE), 'utf8'),
      readFile(join(weightsDir, HAAR_EYE_FILE), 'utf8'),
    ]);
    return OpenCvDetector.load(face, eye);
  }

  /**
   * DeepFace's OpenCv.detect_faces on `img` as given: pass the bordered image when align=True
   * (deepface-reference §5.1), and subtract the border from the results.
   */
  async detect(img: NativeImage): Promise<HaarDetection[]> {
    let faces;
    try {
      faces = await this.inner.detect(img);
    } catch (err) {
      throw fromNative(err);
    }
    return faces.map(toDetection);
  }

  /**
   * `detect`, with the face cascade's windows before groupRectangles (a debugging view: a box is
   * the rounded mean of its group, so a box a pixel off OpenCV's is explained by the windows that
   * differ from OpenCV's own, detectMultiScale3 with minNeighbors=0).
   */
  async trace(img: NativeImage): Promise<HaarTrace> {
    let t;
    try {
      t = await this.inner.trace(img);
    } catch (err) {
      throw fromNative(err);
    }
    return {
      faces: t.faces.map((f) => ({ ...toDetection(f), rejectLevel: f.rejectLevel, levelWeight: f.levelWeight, group: f.group })),
      windows: t.windows,
    };
  }
}

function toDetection(f: { x: number; y: number; w: number; h: number; confidence: number; leftEye?: number[] | null; rightEye?: number[] | null }): HaarDetection {
  return { x: f.x, y: f.y, w: f.w, h: f.h, confidence: f.confidence, leftEye: point(f.leftEye), rightEye: point(f.rightEye) };
}

/** The name the model server's adapters use for the `haar` engine. */
export { OpenCvDetector as HaarDetector };
