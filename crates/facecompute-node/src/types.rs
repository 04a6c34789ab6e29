//! The binding's JS-facing types, in one place (oxc's and rolldown's idiom): the closed sets the
//! TypeScript side passes in or gets back, as `#[napi(string_enum)]`s, and the one pixel buffer every
//! export takes. index.d.ts types each enum as the union of its values, and the TypeScript code
//! reads the values themselves from the enum objects the addon exports (src/vocabulary/), so every
//! spelling below is the only one in the repository's TypeScript and binding. Conversions to the
//! core's own enums are exhaustive matches on variants: a variant added here or in the core fails to
//! compile until both agree.

use crate::padded::{core_image, Padding};
use facecompute_core::compare::Metric;
use facecompute_core::detect::{mtcnn, retinaface};
use facecompute_core::image::{ChannelOrder as CoreChannelOrder, Format};
use facecompute_core::pixels::{self, Image};
use facecompute_core::CoreError;
use napi::bindgen_prelude::{Buffer, Either, Null};
use napi_derive::napi;

/// DeepFace's four distance metrics (contract §3).
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum DistanceMetric {
    #[napi(value = "cosine")]
    Cosine,
    #[napi(value = "euclidean")]
    Euclidean,
    #[napi(value = "euclidean_l2")]
    EuclideanL2,
    #[napi(value = "angular")]
    Angular,
}

impl From<DistanceMetric> for Metric {
    fn from(m: DistanceMetric) -> Self {
        match m {
            DistanceMetric::Cosine => Metric::Cosine,
            DistanceMetric::Euclidean => Metric::Euclidean,
            DistanceMetric::EuclideanL2 => Metric::EuclideanL2,
            DistanceMetric::Angular => Metric::Angular,
        }
    }
}

/// DeepFace's input normalizations (contract §3), applied to a face tensor.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum Normalization {
    #[napi(value = "base")]
    Base,
    #[napi(value = "raw")]
    Raw,
    #[napi(value = "Facenet")]
    Facenet,
    #[napi(value = "Facenet2018")]
    Facenet2018,
    #[napi(value = "VGGFace")]
    VggFace,
    #[napi(value = "VGGFace2")]
    VggFace2,
    #[napi(value = "ArcFace")]
    ArcFace,
}

impl From<Normalization> for pixels::Normalization {
    fn from(n: Normalization) -> Self {
        match n {
            Normalization::Base => Self::Base,
            Normalization::Raw => Self::Raw,
            Normalization::Facenet => Self::Facenet,
            Normalization::Facenet2018 => Self::Facenet2018,
            Normalization::VggFace => Self::VggFace,
            Normalization::VggFace2 => Self::VggFace2,
            Normalization::ArcFace => Self::ArcFace,
        }
    }
}

/// The order of a 3-channel image's channels.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum ChannelOrder {
    #[napi(value = "bgr")]
    Bgr,
    #[napi(value = "rgb")]
    Rgb,
}

impl From<ChannelOrder> for CoreChannelOrder {
    fn from(o: ChannelOrder) -> Self {
        match o {
            ChannelOrder::Bgr => Self::Bgr,
            ChannelOrder::Rgb => Self::Rgb,
        }
    }
}

/// OpenCV's interpolations that DeepFace uses.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum Interpolation {
    #[napi(value = "linear")]
    Linear,
    #[napi(value = "cubic")]
    Cubic,
    #[napi(value = "area")]
    Area,
}

impl From<Interpolation> for pixels::Interpolation {
    fn from(i: Interpolation) -> Self {
        match i {
            Interpolation::Linear => Self::Linear,
            Interpolation::Cubic => Self::Cubic,
            Interpolation::Area => Self::Area,
        }
    }
}

/// A model input's layout.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum TensorLayout {
    #[napi(value = "nchw")]
    Nchw,
    #[napi(value = "nhwc")]
    Nhwc,
}

impl From<TensorLayout> for pixels::Layout {
    fn from(l: TensorLayout) -> Self {
        match l {
            TensorLayout::Nchw => Self::Nchw,
            TensorLayout::Nhwc => Self::Nhwc,
        }
    }
}

/// How a model's input is scaled before normalization (models/manifest.json `preprocess`).
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum Preprocess {
    #[napi(value = "deepface_float")]
    DeepfaceFloat,
    #[napi(value = "uint8_truncate")]
    Uint8Truncate,
}

impl From<Preprocess> for pixels::Preprocess {
    fn from(p: Preprocess) -> Self {
        match p {
            Preprocess::DeepfaceFloat => Self::DeepfaceFloat,
            Preprocess::Uint8Truncate => Self::Uint8Truncate,
        }
    }
}

/// `float` (the default): divide by 255, then letterbox; `uint8`: letterbox the uint8 image, then
/// divide (DeepFace's `represent` with the detector `skip`).
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum Letterbox {
    #[napi(value = "float")]
    Float,
    #[napi(value = "uint8")]
    Uint8,
}

impl From<Letterbox> for pixels::Letterbox {
    fn from(l: Letterbox) -> Self {
        match l {
            Letterbox::Float => Self::Float,
            Letterbox::Uint8 => Self::Uint8,
        }
    }
}

/// The RetinaFace networks served.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum RetinafaceVariant {
    #[napi(value = "mobilenet")]
    Mobilenet,
    #[napi(value = "resnet50")]
    Resnet50,
}

impl From<RetinafaceVariant> for retinaface::Variant {
    fn from(v: RetinafaceVariant) -> Self {
        match v {
            RetinafaceVariant::Mobilenet => Self::MobileNet,
            RetinafaceVariant::Resnet50 => Self::Resnet50,
        }
    }
}

/// DeepFace's two MTCNN backends, by their DeepFace names: ipazc's mtcnn 1.0.0 (`mtcnn`) and
/// facenet-pytorch 2.6.0's MTCNN (`fastmtcnn`).
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum MtcnnFlavor {
    #[napi(value = "mtcnn")]
    Mtcnn,
    #[napi(value = "fastmtcnn")]
    Fastmtcnn,
}

impl From<MtcnnFlavor> for mtcnn::Flavor {
    fn from(f: MtcnnFlavor) -> Self {
        match f {
            MtcnnFlavor::Mtcnn => Self::Mtcnn,
            MtcnnFlavor::Fastmtcnn => Self::FacenetPytorch,
        }
    }
}

/// The image formats decoded (contract §4), as the header names them.
#[napi(string_enum)]
#[derive(Clone, Copy)]
pub enum ImageFormat {
    #[napi(value = "jpeg")]
    Jpeg,
    #[napi(value = "png")]
    Png,
    #[napi(value = "webp")]
    Webp,
    #[napi(value = "gif")]
    Gif,
    #[napi(value = "bmp")]
    Bmp,
}

impl From<Format> for ImageFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Jpeg => Self::Jpeg,
            Format::Png => Self::Png,
            Format::Webp => Self::Webp,
            Format::Gif => Self::Gif,
            Format::Bmp => Self::Bmp,
        }
    }
}

/// A value or JS `null`: a field the object always carries (napi reads an `Option` field as absent
/// or present, and rejects `null`).
pub type Nullable<T> = Either<T, Null>;

pub fn nullable<T>(v: Option<T>) -> Nullable<T> {
    v.map_or(Either::B(Null), Either::A)
}

pub fn from_nullable<T>(v: Nullable<T>) -> Option<T> {
    match v {
        Either::A(v) => Some(v),
        Either::B(Null) => None,
    }
}

/// A face as a detector found it, in the coordinates of the image it was given: DeepFace's integer
/// box, its confidence and the person's landmarks (`left_eye` is on the image's right): both eyes,
/// null when unknown, and the nose and mouth corners where the detector has them. Every detector export returns it and `extractFaces` takes it back. The
/// ONNX detectors add their unrounded box `[x1, y1, x2, y2]` and landmarks (right eye, left eye, nose,
/// mouth right, mouth left, each x, y), which tests and benches compare with references.
#[napi(object)]
pub struct Detection {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub confidence: f64,
    #[napi(js_name = "left_eye", ts_type = "[number, number] | null")]
    pub left_eye: Nullable<Vec<f64>>,
    #[napi(js_name = "right_eye", ts_type = "[number, number] | null")]
    pub right_eye: Nullable<Vec<f64>>,
    #[napi(ts_type = "[number, number]")]
    pub nose: Option<Vec<f64>>,
    #[napi(js_name = "mouth_left", ts_type = "[number, number]")]
    pub mouth_left: Option<Vec<f64>>,
    #[napi(js_name = "mouth_right", ts_type = "[number, number]")]
    pub mouth_right: Option<Vec<f64>>,
    #[napi(js_name = "raw_box")]
    pub raw_box: Option<Vec<f64>>,
    #[napi(js_name = "raw_landmarks")]
    pub raw_landmarks: Option<Vec<f64>>,
}

/// The contract's `facial_area` (§3), as the responses carry it: the integer box in the original
/// image, both eyes (null when unknown), the nose and mouth corners only where the detector gives
/// them, and the detector that found the face.
#[napi(object)]
pub struct FacialArea {
    pub x: i64,
    pub y: i64,
    pub w: i64,
    pub h: i64,
    #[napi(js_name = "left_eye", ts_type = "[number, number] | null")]
    pub left_eye: Nullable<Vec<i64>>,
    #[napi(js_name = "right_eye", ts_type = "[number, number] | null")]
    pub right_eye: Nullable<Vec<i64>>,
    pub detector: String,
    #[napi(ts_type = "[number, number]")]
    pub nose: Option<Vec<i64>>,
    #[napi(js_name = "mouth_left", ts_type = "[number, number]")]
    pub mouth_left: Option<Vec<i64>>,
    #[napi(js_name = "mouth_right", ts_type = "[number, number]")]
    pub mouth_right: Option<Vec<i64>>,
}

/// One face of `extractFaces`, in the contract's names: the crop, its `facial_area` and DeepFace's
/// `face_confidence` (rounded to 2 decimals).
#[napi(object)]
pub struct ExtractedFace {
    pub face: NativeImage,
    #[napi(js_name = "facial_area")]
    pub facial_area: FacialArea,
    #[napi(js_name = "face_confidence")]
    pub face_confidence: f64,
}

/// 8-bit pixels, rows top to bottom, channels interleaved (3 are BGR unless said otherwise). With
/// `pad`, `data` holds only the inner (width − left − right) × (height − top − bottom) pixels and the
/// export builds the bordered image itself, off the JS thread (see padded.rs). The one pixel buffer
/// of the binding: decode returns it, and every pixel, detector and extraction export takes it.
#[napi(object)]
pub struct NativeImage {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Buffer,
    /// A black border included in width and height but not in data (see padded.rs).
    pub pad: Option<Padding>,
}

impl NativeImage {
    /// The core image this argument stands for (a copy; call it on the worker thread). `mismatch`
    /// is the export's error for a buffer that does not fill an unpadded image.
    pub fn to_core(&self, mismatch: impl FnOnce() -> CoreError) -> Result<Image, CoreError> {
        core_image(self.width, self.height, self.channels, &self.data, self.pad.as_ref(), mismatch)
    }

    pub fn from_core(img: Image) -> Self {
        NativeImage { width: img.width, height: img.height, channels: img.channels, data: img.data.into(), pad: None }
    }
}
