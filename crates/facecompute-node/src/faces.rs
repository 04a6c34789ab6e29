//! N-API exports for the RetinaFace and YuNet detectors' pre- and post-processing
//! (core::detect::{retinaface, yunet}). ONNX Runtime runs in JS between prepare and decode.

use crate::task::Job;
use crate::types::{nullable, Detection, NativeImage, RetinafaceVariant};
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

/// Which of a 5-point detector's landmarks DeepFace's wrapper reports.
#[derive(Clone, Copy)]
pub(crate) enum Landmarks {
    /// RetinaFace, YuNet: eyes, nose and mouth corners.
    All,
    /// The MTCNNs: the eyes only.
    Eyes,
}

/// A 5-point detector's face as the binding returns it: DeepFace's integers `int` (landmarks as
/// `raw`'s: right eye, left eye, nose, mouth right, mouth left) and the unrounded `raw` values.
pub(crate) fn detection(raw: &FaceBox, int: IntFace, reported: Landmarks) -> Detection {
    let lm = |i: usize| Some(vec![int.landmarks[i][0] as f64, int.landmarks[i][1] as f64]);
    let all = matches!(reported, Landmarks::All);
    Detection {
        x: int.x as f64,
        y: int.y as f64,
        w: int.w as f64,
        h: int.h as f64,
        confidence: raw.score as f64,
        right_eye: nullable(lm(0)),
        left_eye: nullable(lm(1)),
        nose: if all { lm(2) } else { None },
        mouth_right: if all { lm(3) } else { None },
        mouth_left: if all { lm(4) } else { None },
        raw_box: Some(vec![raw.x1 as f64, raw.y1 as f64, raw.x2 as f64, raw.y2 as f64]),
        raw_landmarks: Some(raw.landmarks.iter().flat_map(|p| p.iter().map(|&v| v as f64)).collect()),
    }
}

fn retinaface_js(faces: Vec<FaceBox>) -> Result<Vec<Detection>> {
    Ok(faces.iter().map(|f| detection(f, f.deepface_retinaface(), Landmarks::All)).collect())
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
#[napi(ts_return_type = "Promise<Array<Detection>>")]
#[allow(clippy::too_many_arguments)]
pub fn retinaface_decode_mobilenet(loc: NativeTensor, conf: NativeTensor, landms: NativeTensor, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> AsyncTask<Job<Vec<FaceBox>, Vec<Detection>>> {
    let tensors = (|| Ok((to_tensor(&loc)?, to_tensor(&conf)?, to_tensor(&landms)?)))();
    AsyncTask::new(Job::new(
        move || {
            let (loc, conf, landms) = tensors?;
            retinaface::decode_mobilenet(&loc, &conf, &landms, width, height, scale, threshold as f32, nms as f32)
        },
        retinaface_js,
    ))
}

/// Decodes DeepFace's ResNet-50 RetinaFace outputs (NHWC, one entry per stride).
#[napi(ts_return_type = "Promise<Array<Detection>>")]
pub fn retinaface_decode_resnet(levels: Vec<ResnetLevelInput>, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> AsyncTask<Job<Vec<FaceBox>, Vec<Detection>>> {
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
        retinaface_js,
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
#[napi(ts_return_type = "Promise<Array<Detection>>")]
pub fn yunet_decode(outputs: Vec<NativeTensor>, width: u32, height: u32, score_threshold: f64, nms: f64, top_k: u32) -> AsyncTask<Job<(yunet::Plan, Vec<yunet::YunetRow>), Vec<Detection>>> {
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
                    detection(&fb, int, Landmarks::All)
                })
                .collect())
        },
    ))
}
