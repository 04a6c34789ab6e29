/**
 * Typed wrapper of the native Haar detector. The `opencv` detector (DeepFace's default) runs
 * OpenCV's Haar cascades in the Rust core, off the JS thread; failures come back as ServiceErrors.
 */
import { native } from './addon.js';
import { fromNative } from '../errors/index.js';
import type { Detection, HaarTrace, NativeImage } from './types.js';

type NativeHaar = InstanceType<typeof native.HaarDetector>;

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

  /**
   * DeepFace's OpenCv.detect_faces on `img` as given: pass the bordered image when align=True
   * (deepface-reference §5.1). The confidence is DeepFace's `(100 - levelWeight) / 100`: inverted
   * and uncapped, not a probability; the eyes are absent where the eye cascade finds none.
   */
  async detect(img: NativeImage): Promise<Detection[]> {
    try {
      return await this.inner.detect(img);
    } catch (err) {
      throw fromNative(err);
    }
  }

  /**
   * `detect`, with the face cascade's windows before groupRectangles (a debugging view: a box is
   * the rounded mean of its group, so a box a pixel off OpenCV's is explained by the windows that
   * differ from OpenCV's own, detectMultiScale3 with minNeighbors=0).
   */
  async trace(img: NativeImage): Promise<HaarTrace> {
    try {
      return await this.inner.trace(img);
    } catch (err) {
      throw fromNative(err);
    }
  }
}
