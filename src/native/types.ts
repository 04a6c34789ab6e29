/**
 * The binding's JS-facing types, generated into index.d.ts from crates/facecompute-node (its
 * `#[napi(object)]` structs and `#[napi(string_enum)]` unions), re-exported in one module as
 * rolldown's `types/` does. Only src/native/ reads the binding; every other file takes its types
 * from here (test/architecture.test.ts checks both).
 *
 * The face travels in the contract's shape from Rust to the response: a detector returns
 * `Detection`s, `extractFaces` takes them back and returns `ExtractedFace`s, whose `facial_area` and
 * `face_confidence` are the wire's fields (contract §3).
 */
export type {
  ChannelOrder,
  CompareOutput,
  DecodeOptions,
  Detection,
  DistanceMetric,
  ExtractedFace,
  ExtractFacesOptions,
  FacialArea,
  HaarTrace,
  HaarTracedFace,
  HaarWindow,
  ImageFormat,
  ImageProbe,
  Interpolation,
  JsonLift,
  JsonLiftedRows,
  JsonLiftedText,
  JsonScan,
  Letterbox,
  ManyOutput,
  MtcnnFlavor,
  MtcnnLevel,
  MtcnnPnetOutput,
  MtcnnStage,
  NativeImage,
  NativeTensor,
  Normalization,
  Padding,
  PreparedInput,
  Preprocess,
  ResnetLevelInput,
  RetinafaceVariant,
  TensorLayout,
  TensorSpecInput,
} from '../../index.js';
