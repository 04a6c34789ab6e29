/**
 * What the DeepFace pipeline needs from the native core and ONNX Runtime. The pipeline is written
 * against these ports only, so it can be tested with fakes; adapters.ts binds them to the addon.
 */
import type { ModelInput } from '../models/manifest.js';
import type { Detection, ExtractedFace, ExtractFacesOptions, NativeImage } from '../native/types.js';
import type { TensorSpec } from '../native/image.js';

// The face and pixel types are the binding's own (src/native/types.ts): a detector's `Detection`
// goes to `extractFaces`, whose `ExtractedFace` is the response's face as it is.
export type { Detection, ExtractedFace, ExtractFacesOptions, NativeImage, TensorSpec };


/** RetinaFace's backbones (manifest variants of `retinaface`, FACECOMPUTE_RETINAFACE_BACKBONE). */
export const RETINAFACE_BACKBONES = ['resnet50', 'mobilenet0.25'] as const;
export type RetinafaceBackbone = (typeof RETINAFACE_BACKBONES)[number];

/**
 * Every detector engine the model server implements. The serving plan names detectors by these
 * only (serving-plan.ts), and adapters.ts must implement each (a mapped type over this union).
 */
export const DETECTOR_ENGINES = ['skip', 'haar', 'yunet', 'mtcnn', 'fastmtcnn', ...RETINAFACE_BACKBONES.map((b) => `retinaface:${b}` as const)] as const;
export type DetectorEngine = (typeof DETECTOR_ENGINES)[number];

export interface ImageOps {
  /** Decodes with the byte and pixel limits; BGR like cv2.imdecode(IMREAD_COLOR). */
  decode(bytes: Buffer): Promise<NativeImage>;
  /** Area-averaged downscale, for detection on large images (FACECOMPUTE_DETECTOR_MAX_SIDE). */
  shrink(img: NativeImage, width: number, height: number): Promise<NativeImage>;
  /** DeepFace's align=True border: int(0.5·H) top and bottom, int(0.5·W) left and right. */
  border(img: NativeImage): Promise<{ image: NativeImage; top: number; left: number }>;
  /** The faces of `detections` in the contract's shape, each area naming `opts.detector`. */
  extractFaces(img: NativeImage, detections: Detection[], opts: ExtractFacesOptions): Promise<ExtractedFace[]>;
  /** Letterboxes each face to the model input and applies its preprocessing, as one batch. */
  toTensor(faces: NativeImage[], spec: TensorSpec): Promise<Float32Array>;
  /** Lossless PNG of a face crop (BGR in, RGB PNG out), for /represent's return_face. */
  encodePng(img: NativeImage): Promise<Buffer>;
}

export interface FaceDetector {
  readonly name: string;
  /** Faces in the coordinates of the image given. */
  detect(img: NativeImage): Promise<Detection[]>;
  close?(): Promise<void>;
}

export interface Recognizer {
  readonly name: string;
  readonly dims: number;
  readonly input: ModelInput;
  /** One embedding per row of `batch` (n rows of the model's input). */
  embed(batch: Float32Array, n: number): Promise<Float32Array[]>;
  close?(): Promise<void>;
}
