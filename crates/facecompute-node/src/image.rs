//! N-API exports for core::image, core::pixels and core::align. Everything that touches pixels is
//! an AsyncTask. Input Buffers are moved into the task and copied into the core's `Image` on the
//! worker thread (never on the JS thread); outputs are handed to JS without a copy.

use crate::guard;
use crate::task::Job;
use crate::types::{from_nullable, nullable, ChannelOrder, Detection, ExtractedFace, FacialArea, ImageFormat, Interpolation, Letterbox, NativeImage, Normalization, Preprocess, TensorLayout};
use facecompute_core::align::{self, ExtractOptions};
use facecompute_core::image::{self as core_image, DecodeLimits};
use facecompute_core::pixels::{self, Image, TensorSpec};
use facecompute_core::CoreError;
use napi::bindgen_prelude::{AsyncTask, Buffer, Float32Array};
use napi_derive::napi;

#[napi(object)]
pub struct ImageProbe {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
}

#[napi(object)]
pub struct DecodeOptions {
    pub max_bytes: f64,
    pub max_pixels: f64,
    pub order: ChannelOrder,
}

#[napi(object)]
pub struct ExtractFacesOptions {
    pub align: bool,
    pub expand_percentage: f64,
    pub border_top: f64,
    pub border_left: f64,
    pub original_width: f64,
    pub original_height: f64,
    /// The detector that found the faces, for their `facial_area.detector`.
    pub detector: String,
}

#[napi(object)]
pub struct TensorSpecInput {
    pub width: u32,
    pub height: u32,
    pub layout: TensorLayout,
    pub channel_order: ChannelOrder,
    pub preprocess: Preprocess,
    pub normalization: Normalization,
    /// `float` when absent.
    pub letterbox: Option<Letterbox>,
}

fn bad(detail: impl Into<String>) -> CoreError {
    CoreError::invalid_request(detail)
}

/// The pixel exports' reading of an image: 1 or 3 channels, a buffer that fills it.
pub(crate) fn to_core(img: &NativeImage) -> Result<Image, CoreError> {
    if img.channels != 1 && img.channels != 3 {
        return Err(bad("image must have 1 or 3 channels"));
    }
    img.to_core(|| bad("image data length does not match width × height × channels"))
}

pub(crate) fn image_js(img: Image) -> napi::Result<NativeImage> {
    Ok(NativeImage::from_core(img))
}

/// A non-negative integer limit given as a JS number (it may exceed 2^32).
fn limit(v: f64, what: &str) -> Result<u64, CoreError> {
    if v.is_finite() && v >= 0.0 {
        Ok(v.min(u64::MAX as f64) as u64)
    } else {
        Err(bad(format!("{what} must be a non-negative number")))
    }
}

pub(crate) fn int_arg(v: f64, what: &str) -> Result<i64, CoreError> {
    if v.is_finite() && v.abs() <= 1e9 {
        Ok(v.trunc() as i64)
    } else {
        Err(bad(format!("{what} must be a finite number")))
    }
}

fn point(v: Option<Vec<f64>>, what: &str) -> Result<Option<(f64, f64)>, CoreError> {
    match v {
        None => Ok(None),
        Some(p) if p.len() == 2 => Ok(Some((p[0], p[1]))),
        Some(_) => Err(bad(format!("{what} must be [x, y] or null"))),
    }
}

/// Reads the header only: format and stored size. Enforces no limit.
#[napi]
pub fn probe_image(bytes: Buffer) -> guard::Result<ImageProbe> {
    guard::catch(|| {
        let info = core_image::probe(&bytes)?;
        Ok(ImageProbe { format: info.format.into(), width: info.width, height: info.height })
    })
}

#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn decode_image(bytes: Buffer, opts: DecodeOptions) -> AsyncTask<Job<Image, NativeImage>> {
    let limits = (|| -> Result<_, CoreError> {
        Ok(DecodeLimits { max_bytes: limit(opts.max_bytes, "maxBytes")?.min(usize::MAX as u64) as usize, max_pixels: limit(opts.max_pixels, "maxPixels")? })
    })();
    let order = opts.order.into();
    AsyncTask::new(Job::new(move || core_image::decode(&bytes, limits?, order), image_js))
}

pub(crate) fn pixel_job(img: NativeImage, op: impl FnOnce(Image) -> Result<Image, CoreError> + Send + 'static) -> AsyncTask<Job<Image, NativeImage>> {
    AsyncTask::new(Job::new(move || op(to_core(&img)?), image_js))
}

#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn resize_image(img: NativeImage, width: u32, height: u32, interpolation: Interpolation) -> AsyncTask<Job<Image, NativeImage>> {
    pixel_job(img, move |i| pixels::resize(&i, width, height, interpolation.into()))
}

/// Lossless PNG of an image (BGR or grey), for the face crops /represent returns with `return_face`.
#[napi(ts_return_type = "Promise<Buffer>")]
pub fn encode_png(img: NativeImage) -> AsyncTask<Job<Vec<u8>, Buffer>> {
    AsyncTask::new(Job::new(move || core_image::encode_png(&to_core(&img)?), |bytes| Ok(Buffer::from(bytes))))
}

fn landmark(p: Option<(i64, i64)>) -> Option<Vec<i64>> {
    p.map(|(x, y)| vec![x, y])
}

/// The core's faces in the contract's shape, each area naming `detector`.
fn extracted_js(faces: Vec<align::ExtractedFace>, detector: &str) -> Vec<ExtractedFace> {
    faces
        .into_iter()
        .map(|f| ExtractedFace {
            facial_area: FacialArea {
                x: f.area.x,
                y: f.area.y,
                w: f.area.w,
                h: f.area.h,
                left_eye: nullable(landmark(f.area.left_eye)),
                right_eye: nullable(landmark(f.area.right_eye)),
                detector: detector.to_string(),
                nose: landmark(f.area.nose),
                mouth_left: landmark(f.area.mouth_left),
                mouth_right: landmark(f.area.mouth_right),
            },
            face: NativeImage::from_core(f.face),
            face_confidence: f.confidence,
        })
        .collect()
}

/// Every face of `detections`, cropped (and aligned) from `img` and reported as DeepFace does.
#[napi(ts_return_type = "Promise<Array<ExtractedFace>>")]
pub fn extract_faces(img: NativeImage, detections: Vec<Detection>, opts: ExtractFacesOptions) -> AsyncTask<Job<(Vec<align::ExtractedFace>, String), Vec<ExtractedFace>>> {
    let args = (|| -> Result<_, CoreError> {
        let dets = detections
            .into_iter()
            .map(|d| {
                Ok(align::Detection {
                    x: d.x,
                    y: d.y,
                    w: d.w,
                    h: d.h,
                    left_eye: point(from_nullable(d.left_eye), "left_eye")?,
                    right_eye: point(from_nullable(d.right_eye), "right_eye")?,
                    nose: point(d.nose, "nose")?,
                    mouth_left: point(d.mouth_left, "mouth_left")?,
                    mouth_right: point(d.mouth_right, "mouth_right")?,
                    confidence: d.confidence,
                })
            })
            .collect::<Result<Vec<_>, CoreError>>()?;
        let options = ExtractOptions {
            align: opts.align,
            expand_percentage: opts.expand_percentage,
            border_top: int_arg(opts.border_top, "borderTop")?,
            border_left: int_arg(opts.border_left, "borderLeft")?,
            original_width: int_arg(opts.original_width, "originalWidth")?,
            original_height: int_arg(opts.original_height, "originalHeight")?,
        };
        Ok((dets, options))
    })();
    let detector = opts.detector;
    AsyncTask::new(Job::new(
        move || {
            let (dets, options) = args?;
            Ok((align::extract_faces(&to_core(&img)?, &dets, &options)?, detector))
        },
        |(faces, detector)| Ok(extracted_js(faces, &detector)),
    ))
}

#[napi(ts_return_type = "Promise<Float32Array>")]
pub fn faces_to_tensor(faces: Vec<NativeImage>, spec: TensorSpecInput) -> AsyncTask<Job<Vec<f32>, Float32Array>> {
    let spec = TensorSpec {
        width: spec.width,
        height: spec.height,
        layout: spec.layout.into(),
        channel_order: spec.channel_order.into(),
        preprocess: spec.preprocess.into(),
        normalization: spec.normalization.into(),
        letterbox: spec.letterbox.map_or(pixels::Letterbox::Float, Into::into),
    };
    AsyncTask::new(Job::new(
        move || {
            let faces = faces.iter().map(to_core).collect::<Result<Vec<_>, _>>()?;
            pixels::faces_to_tensor(&faces, &spec)
        },
        |v| Ok(Float32Array::new(v)),
    ))
}
