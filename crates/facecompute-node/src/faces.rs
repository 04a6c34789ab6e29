//! N-API exports for the RetinaFace and YuNet detectors' pre- and post-processing
//! (core::detect::{retinaface, yunet}). ONNX Runtime runs in JS between prepare and decode.

use crate::guard;
use crate::padded::{core_image, Padding};
use facecompute_core::detect::{retinaface, yunet, FaceBox, IntFace, Tensor};
use facecompute_core::pixels::Image;
use facecompute_core::CoreError;
use napi::bindgen_prelude::*;
use napi_derive::napi;

#[napi(object)]
pub struct FaceImage {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    /// BGR (or grey) uint8, rows top to bottom, channels interleaved.
    pub data: Buffer,
    /// A black border included in width and height but not in data (see padded.rs).
    pub pad: Option<Padding>,
}

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

fn to_image(img: &FaceImage) -> Result<Image> {
    core_image(img.width, img.height, img.channels, &img.data, img.pad.as_ref(), || CoreError::invalid_image("pixel buffer length does not match width*height*channels"))
        .map_err(guard::to_napi)
}

fn to_tensor(t: &NativeTensor) -> Result<Tensor> {
    let dims: Option<Vec<usize>> = t.dims.iter().map(|&d| usize::try_from(d).ok()).collect();
    let dims = dims.ok_or_else(|| guard::to_napi(CoreError::invalid_request("tensor dims must be non-negative")))?;
    Tensor::new(dims, t.data.to_vec()).map_err(guard::to_napi)
}

fn variant(name: &str) -> Result<retinaface::Variant> {
    match name {
        "mobilenet" => Ok(retinaface::Variant::MobileNet),
        "resnet50" => Ok(retinaface::Variant::Resnet50),
        _ => Err(guard::to_napi(CoreError::invalid_request("retinaface variant must be 'mobilenet' or 'resnet50'"))),
    }
}

fn face_out(f: &FaceBox, int: IntFace) -> NativeFace {
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

pub struct RetinaPrepareTask {
    img: Image,
    variant: retinaface::Variant,
    rule: retinaface::ScaleRule,
}

impl Task for RetinaPrepareTask {
    type Output = retinaface::Prepared;
    type JsValue = PreparedInput;
    fn compute(&mut self) -> Result<Self::Output> {
        guard::catch(|| retinaface::prepare(&self.img, self.variant, self.rule))
    }
    fn resolve(&mut self, _env: Env, p: Self::Output) -> Result<Self::JsValue> {
        let dims = match self.variant {
            retinaface::Variant::MobileNet => vec![1, 3, p.height, p.width],
            retinaface::Variant::Resnet50 => vec![1, p.height, p.width, 3],
        };
        Ok(PreparedInput { tensor: Float32Array::new(p.tensor), dims, scale: p.scale, resized: p.scale != 1.0 })
    }
}

/// Resizes and lays out the input: 'mobilenet' NCHW BGR-mean, 'resnet50' NHWC RGB. `long_side`
/// scales the long side to that many pixels; without it, serengil's 1024/1980 rule (DeepFace's).
#[napi(ts_return_type = "Promise<PreparedInput>")]
pub fn retinaface_prepare(image: FaceImage, variant_name: String, long_side: Option<u32>) -> Result<AsyncTask<RetinaPrepareTask>> {
    let rule = match long_side {
        Some(n) => retinaface::ScaleRule::LongSide(n),
        None => retinaface::ScaleRule::Serengil,
    };
    Ok(AsyncTask::new(RetinaPrepareTask { img: to_image(&image)?, variant: variant(&variant_name)?, rule }))
}

enum RetinaOutputs {
    MobileNet { loc: Tensor, conf: Tensor, landms: Tensor },
    Resnet(Vec<(u32, Tensor, Tensor, Tensor)>),
}

pub struct RetinaDecodeTask {
    outputs: RetinaOutputs,
    width: u32,
    height: u32,
    scale: f64,
    threshold: f32,
    nms: f32,
}

impl Task for RetinaDecodeTask {
    type Output = Vec<FaceBox>;
    type JsValue = Vec<NativeFace>;
    fn compute(&mut self) -> Result<Self::Output> {
        guard::catch(|| match &self.outputs {
            RetinaOutputs::MobileNet { loc, conf, landms } => retinaface::decode_mobilenet(loc, conf, landms, self.width, self.height, self.scale, self.threshold, self.nms),
            RetinaOutputs::Resnet(levels) => {
                let lv: Vec<retinaface::ResnetLevel<'_>> = levels.iter().map(|(s, c, b, l)| retinaface::ResnetLevel { stride: *s, cls: c, bbox: b, landmark: l }).collect();
                retinaface::decode_resnet(&lv, self.width, self.height, self.scale, self.threshold, self.nms)
            }
        })
    }
    fn resolve(&mut self, _env: Env, faces: Self::Output) -> Result<Self::JsValue> {
        Ok(faces.iter().map(|f| face_out(f, f.deepface_retinaface())).collect())
    }
}

/// Decodes MobileNet-0.25 outputs for a network input of `width x height` made with `scale`.
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
#[allow(clippy::too_many_arguments)]
pub fn retinaface_decode_mobilenet(loc: NativeTensor, conf: NativeTensor, landms: NativeTensor, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> Result<AsyncTask<RetinaDecodeTask>> {
    let outputs = RetinaOutputs::MobileNet { loc: to_tensor(&loc)?, conf: to_tensor(&conf)?, landms: to_tensor(&landms)? };
    Ok(AsyncTask::new(RetinaDecodeTask { outputs, width, height, scale, threshold: threshold as f32, nms: nms as f32 }))
}

/// Decodes DeepFace's ResNet-50 RetinaFace outputs (NHWC, one entry per stride).
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
pub fn retinaface_decode_resnet(levels: Vec<ResnetLevelInput>, width: u32, height: u32, scale: f64, threshold: f64, nms: f64) -> Result<AsyncTask<RetinaDecodeTask>> {
    let mut lv = Vec::with_capacity(levels.len());
    for l in &levels {
        lv.push((l.stride, to_tensor(&l.cls)?, to_tensor(&l.bbox)?, to_tensor(&l.landmark)?));
    }
    Ok(AsyncTask::new(RetinaDecodeTask { outputs: RetinaOutputs::Resnet(lv), width, height, scale, threshold: threshold as f32, nms: nms as f32 }))
}

pub struct YunetPrepareTask {
    img: Image,
}

impl Task for YunetPrepareTask {
    type Output = (yunet::Plan, Vec<f32>);
    type JsValue = PreparedInput;
    fn compute(&mut self) -> Result<Self::Output> {
        guard::catch(|| yunet::prepare(&self.img))
    }
    fn resolve(&mut self, _env: Env, (p, t): Self::Output) -> Result<Self::JsValue> {
        Ok(PreparedInput { tensor: Float32Array::new(t), dims: vec![1, 3, p.pad_height, p.pad_width], scale: p.ratio, resized: p.resized })
    }
}

/// DeepFace's >640 resize, then OpenCV's zero padding to multiples of 32; NCHW raw BGR.
#[napi(ts_return_type = "Promise<PreparedInput>")]
pub fn yunet_prepare(image: FaceImage) -> Result<AsyncTask<YunetPrepareTask>> {
    Ok(AsyncTask::new(YunetPrepareTask { img: to_image(&image)? }))
}

pub struct YunetDecodeTask {
    outputs: Vec<Tensor>,
    width: u32,
    height: u32,
    score_threshold: f32,
    nms: f32,
    top_k: usize,
}

impl Task for YunetDecodeTask {
    type Output = (yunet::Plan, Vec<yunet::YunetRow>);
    type JsValue = Vec<NativeFace>;
    fn compute(&mut self) -> Result<Self::Output> {
        guard::catch(|| {
            let p = yunet::plan(self.width, self.height)?;
            let rows = yunet::decode(&self.outputs, p.pad_width, p.pad_height, self.score_threshold, self.nms, self.top_k)?;
            Ok((p, rows))
        })
    }
    fn resolve(&mut self, _env: Env, (p, rows): Self::Output) -> Result<Self::JsValue> {
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
    }
}

/// OpenCV FaceDetectorYN post-processing + DeepFace's mapping, for an original image of
/// `width x height`. `outputs` in the model's output order (cls, obj, bbox, kps × strides 8/16/32).
#[napi(ts_return_type = "Promise<Array<NativeFace>>")]
pub fn yunet_decode(outputs: Vec<NativeTensor>, width: u32, height: u32, score_threshold: f64, nms: f64, top_k: u32) -> Result<AsyncTask<YunetDecodeTask>> {
    let outputs = outputs.iter().map(to_tensor).collect::<Result<Vec<_>>>()?;
    Ok(AsyncTask::new(YunetDecodeTask { outputs, width, height, score_threshold: score_threshold as f32, nms: nms as f32, top_k: top_k as usize }))
}
