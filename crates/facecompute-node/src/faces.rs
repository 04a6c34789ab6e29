//! N-API exports for the RetinaFace and YuNet detectors' pre- and post-processing
//! (core::detect::{retinaface, yunet}). ONNX Runtime runs in JS between prepare and decode.

use crate::task::Job;
use crate::types::{NativeImage, RetinafaceVariant};
use facecompute_core::detect::{retinaface, yunet, FaceBox, IntFace, Tensor};
use facecompute_core::pixels::Image;
use facecompute_core::CoreError;
use napi::bindgen_prelude::*;
use napi_derive::napi;

#[napi(object)]
pub struct NativeTensor {
    pub data: Float32Array,
    pub dims: Vec<i64>,
}

#[napi(object)]
pub struct ResnetLevelInput {
    pub stride: u32,
    pub cls: NativeTensor,
    pub bbox: NativeTensor,
    pub landmark: NativeTensor,
}

#[napi(object)]
pub struct PreparedInput {
    /// The network input, laid out as the detector expects (see each prepare function).
    pub tensor: Float32Array,
    pub dims: Vec<u32>,
    /// retinaface: the resize factor (boxes are divided by it); yunet: DeepFace's ratio (1 if not resized).
    pub scale: f64,
    pub resized: bool,
}

#[napi(object)]
pub struct NativeFace {
    /// DeepFace's integer box as its detector wrapper builds it.
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub confidence: f64,
    /// 10 integers: the person's right eye, left eye, nose, mouth right, mouth left, each (x, y).
    pub landmarks: Vec<i32>,
    /// The unrounded box `[x1, y1, x2, y2]` in original-image pixels.
    pub raw_box: Vec<f64>,
    /// The unrounded landmarks (same order as `landmarks`).
    pub raw_landmarks: Vec<f64>,
}

/// The detectors' reading of an image: any channel count the core accepts, a buffer that fills it.
pub(crate) fn to_image(img: &NativeImage) -> std::result::Result<Image, CoreError> {
    img.to_core(|| CoreError::invalid_image("pixel buffer length does not match width*height*channels"))
}

/// A tensor argument, copied out of JS (on the JS thread: it is a view of a JS typed array).
pub(crate) fn to_tensor(t: &NativeTensor) -> std::result::Result<Tensor, CoreError> {
    let dims: Option<Vec<usize>> = t.dims.iter().map(|&d| usize::try_from(d).ok()).collect();
    let dims = dims.ok_or_else(|| CoreError::invalid_request("tensor dims must be non-negative"))?;
    Tensor::new(dims, t.data.to_vec())
}

pub(crate) fn face_out(f: &FaceBox, int: IntFace) -> NativeFace {
    NativeFace {
        x: int.x,
        y: int.y,
        w: int.w,
        h: int.h,
        confidence: f.score as f64,
        landmarks: int.landmarks.iter().flat_map(|p| p.iter().copied()).collect(),
        raw_box: vec![f.x1 as f64, f.y1 as f64, f.x2 as f64, f.y2 as f64],
        raw_landmarks: f.landmarks.iter().flat_map(|p| p.iter().map(|&v| v as f64)).collect(),
    }
}

fn faces_js(faces: Vec<FaceBox>) -> Result<Vec<NativeFace>> {
    Ok(faces.iter().map(|f| face_out(f, f.deepface_retinaface())).collect())
}

/// Resizes and lays out the input: 'mobilenet' NCHW BGR-mean, 'resnet50' NHWC RGB. `long_side`
/// scales the long side to that many pixels; without it, serengil's 1024/1980 rule (DeepFace's).
#[napi(ts_return_type = "Promise<PreparedInput>")]
pub fn retinaface_prepare(image: NativeImage, variant: RetinafaceVariant, long_side: Option<u32>) -> AsyncTask<Job<(retinaface::Prepared, retinaface::Variant), PreparedInput>> {
    let rule = match long_side {
        Some(n) => retinaface::ScaleRule::LongSide(n),
        None => retinaface::ScaleRule::Serengil,
    };
    let variant: retinaface::Variant = variant.into();
    AsyncTask::new(Job::new(
        move || Ok((retinaface::prepare(&to_image(&image)?, variant, rule)?, variant)),
        |(p, variant)| {
            let dims = match variant {
                retinaface::Variant::MobileNet => vec![1, 3, p.height, p.width],
                retinaface::Variant::Resnet50 => vec![1, p.height, p.width, 3],
            };
            Ok(PreparedInput { tensor: Float32Array::new(p.tensor), dims, scale: p.scale, resized: p.scale != 1.0 })
        },
    ))
}

/// Decodes MobileNet-0.25 outputs for a network input of `width x height` made with `scale`.
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
#[allow(clippy::too_many_arguments)]
pub fn retinaface_decode_mobilenet(loc: NativeTensor, conf: NativeTensor, landms: NativeTensor, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> AsyncTask<Job<Vec<FaceBox>, Vec<NativeFace>>> {
    let tensors = (|| Ok((to_tensor(&loc)?, to_tensor(&conf)?, to_tensor(&landms)?)))();
    AsyncTask::new(Job::new(
        move || {
            let (loc, conf, landms) = tensors?;
            retinaface::decode_mobilenet(&loc, &conf, &landms, width, height, scale, threshold as f32, nms as f32)
        },
        faces_js,
    ))
}

/// Decodes DeepFace's ResNet-50 RetinaFace outputs (NHWC, one entry per stride).
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
pub fn retinaface_decode_resnet(levels: Vec<ResnetLevelInput>, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> AsyncTask<Job<Vec<FaceBox>, Vec<NativeFace>>> {
    let tensors = levels
        .iter()
        .map(|l| Ok((l.stride, to_tensor(&l.cls)?, to_tensor(&l.bbox)?, to_tensor(&l.landmark)?)))
        .collect::<std::result::Result<Vec<_>, CoreError>>();
    AsyncTask::new(Job::new(
        move || {
            let levels = tensors?;
            let lv: Vec<retinaface::ResnetLevel<'_>> = levels.iter().map(|(s, c, b, l)| retinaface::ResnetLevel { stride: *s, cls: c, bbox: b, landmark: l }).collect();
            retinaface::decode_resnet(&lv, width, height, scale, threshold as f32, nms as f32)
        },
        faces_js,
    ))
}

/// DeepFace's >640 resize, then OpenCV's zero padding to multiples of 32; NCHW raw BGR.
#[napi(ts_return_type = "Promise<PreparedInput>")]
pub fn yunet_prepare(image: NativeImage) -> AsyncTask<Job<(yunet::Plan, Vec<f32>), PreparedInput>> {
    AsyncTask::new(Job::new(
        move || yunet::prepare(&to_image(&image)?),
        |(p, t)| Ok(PreparedInput { tensor: Float32Array::new(t), dims: vec![1, 3, p.pad_height, p.pad_width], scale: p.ratio, resized: p.resized }),
    ))
}

/// OpenCV FaceDetectorYN post-processing + DeepFace's mapping, for an original image of
/// `width x height`. `outputs` in the model's output order (cls, obj, bbox, kps × strides 8/16/32).
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
pub fn yunet_decode(outputs: Vec<NativeTensor>, width: u32, height: u32, score_threshold: f64, nms: f64, top_k: u32) -> AsyncTask<Job<(yunet::Plan, Vec<yunet::YunetRow>), Vec<NativeFace>>> {
    let tensors = outputs.iter().map(to_tensor).collect::<std::result::Result<Vec<_>, CoreError>>();
    AsyncTask::new(Job::new(
        move || {
            let outputs = tensors?;
            let p = yunet::plan(width, height)?;
            let rows = yunet::decode(&outputs, p.pad_width, p.pad_height, score_threshold as f32, nms as f32, top_k as usize)?;
            Ok((p, rows))
        },
        |(p, rows)| {
            let r = p.ratio as f32;
            Ok(rows
                .iter()
                .map(|row| {
                    let (int, score) = yunet::deepface_face(row, &p);
                    let mut lm = [[0f32; 2]; 5];
                    for (n, o) in lm.iter_mut().enumerate() {
                        *o = [row[4 + 2 * n] / r, row[5 + 2 * n] / r];
                    }
                    let fb = FaceBox { x1: row[0] / r, y1: row[1] / r, x2: (row[0] + row[2]) / r, y2: (row[1] + row[3]) / r, score, landmarks: lm };
                    face_out(&fb, int)
                })
                .collect())
        },
    ))
}
