/**
 * Binds the pipeline's ports to the real engines: the native addon for pixels and the Haar
 * cascade, ONNX Runtime for RetinaFace, YuNet, the MTCNNs and the recognition models.
 */
import { readFile } from 'node:fs/promises';
import type { Config } from '../config/index.js';
import type { Manifest } from '../models/manifest.js';
import * as img from '../native/image.js';
import { OpenCvDetector } from '../native/detect.js';
import { RetinaFaceDetector } from './detectors/retinaface.js';
import { YunetDetector } from './detectors/yunet.js';
import { MtcnnDetector } from './detectors/mtcnn.js';
import { onInferenceFailure } from './inference/inference-thread.js';
import { OrtRecognizer } from './models/ort-recognizer.js';
import type { DetectorEngine, Detection, FaceDetector, ImageOps, NativeImage } from './engines.js';
import type { OrtSettings } from './models/ort-options.js';
import type { EngineFactory } from './registry.js';

export function imageOps(cfg: Config): ImageOps {
  return {
    decode: (bytes) => img.decodeImage(bytes, { maxBytes: cfg.limits.maxImageBytes, maxPixels: cfg.limits.maxImagePixels, order: 'bgr' }),
    shrink: (image, width, height) => img.resizeImage(image, width, height, 'area'),
    border: (image) => img.deepfaceBorder(image),
    extractFaces: (image, detections, opts) => img.extractFaces(image, detections, opts),
    toTensor: (faces, spec) => img.facesToTensor(faces, spec),
    encodePng: (image) => img.encodePng(image),
  };
}

class SkipDetector implements FaceDetector {
  readonly name = 'skip';
  async detect(image: NativeImage): Promise<Detection[]> {
    return [{ x: 0, y: 0, w: image.width, h: image.height, confidence: 0, left_eye: null, right_eye: null }];
  }
}

type DetectorAdapter = (name: string, files: string[]) => Promise<FaceDetector>;

function modelFile(name: string, files: string[]): string {
  const file = files[0];
  if (file === undefined) throw new Error(`${name} has no model file`);
  return file;
}

/** One adapter per detector engine: a mapped type, so an engine without one does not compile. */
export function detectorAdapters(ort: OrtSettings): { readonly [E in DetectorEngine]: DetectorAdapter } {
  const retinaface = (backbone: 'resnet50' | 'mobilenet0.25'): DetectorAdapter => async (name, files) => {
    const d = await RetinaFaceDetector.create(modelFile(name, files), ort, { backbone });
    return { name, detect: (image: NativeImage) => d.detect(image), close: () => d.release() };
  };
  const mtcnn = (flavor: 'mtcnn' | 'fastmtcnn'): DetectorAdapter => async (name, files) => {
    const d = await MtcnnDetector.create(flavor, modelFile(name, files), ort);
    return { name, detect: (image: NativeImage) => d.detect(image), close: () => d.release() };
  };
  return {
    skip: async () => new SkipDetector(),
    haar: async (name, files) => {
      const [face, eye] = await Promise.all(files.map((f) => readFile(f, 'utf8')));
      if (face === undefined || eye === undefined) throw new Error('opencv detector needs the face and eye cascades');
      const haar = OpenCvDetector.load(face, eye);
      return { name, detect: (image: NativeImage) => haar.detect(image) };
    },
    yunet: async (name, files) => {
      const d = await YunetDetector.create(modelFile(name, files), ort);
      return { name, detect: (image: NativeImage) => d.detect(image) };
    },
    mtcnn: mtcnn('mtcnn'),
    fastmtcnn: mtcnn('fastmtcnn'),
    'retinaface:resnet50': retinaface('resnet50'),
    'retinaface:mobilenet0.25': retinaface('mobilenet0.25'),
  };
}

export function engines(cfg: Config): EngineFactory {
  // Recognizers and ONNX detectors share one set of session settings.
  const ort = { intraOpThreads: cfg.models.ort.intraOpThreads, interOpThreads: cfg.models.ort.interOpThreads, provider: cfg.models.ort.provider };
  return {
    async recognizer(name: string, onnxPath: string, manifest: Manifest) {
      const entry = manifest.recognition[name];
      if (!entry) throw new Error(`unknown model ${name}`);
      return OrtRecognizer.load(onnxPath, { name, dims: entry.dims, input: entry.input, onnx: entry.onnx }, ort, {
        windowMs: cfg.models.batchWindowMs,
        maxBatch: cfg.models.batchMax,
      });
    },
    detector(name: string, engine: DetectorEngine, files: string[]) {
      return detectorAdapters(ort)[engine](name, files);
    },
    syntheticImage(): NativeImage {
      // Mid-grey 320×240: exercises every layer without needing an image file.
      return { width: 320, height: 240, channels: 3, data: Buffer.alloc(320 * 240 * 3, 128) };
    },
    onFailure: onInferenceFailure,
  };
}
