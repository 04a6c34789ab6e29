//! N-API exports for DeepFace's MTCNN detectors (core::detect::mtcnn): the pixel and box work
//! between the three networks, which ONNX Runtime runs in JS. The flavour is DeepFace's backend
//! name (types.rs `MtcnnFlavor`). Boxes travel as flat `[x1, y1, x2, y2, score]` rows.

use crate::faces::{detection, to_image, to_tensor, Landmarks, NativeTensor};
use crate::task::Job;
use crate::types::{Detection, MtcnnFlavor, NativeImage};
use facecompute_core::detect::mtcnn::{self, Flavor, Level, Row};
use facecompute_core::detect::Tensor;
use facecompute_core::error::CoreResult;
use napi::bindgen_prelude::*;
use napi_derive::napi;

#[napi(object)]
pub struct MtcnnLevel {
    pub scale: f64,
    pub width: u32,
    pub height: u32,
    /// PNet's input `[1, 3, height, width]`.
    pub tensor: Float32Array,
}

#[napi(object)]
pub struct MtcnnPnetOutput {
    pub scale: f64,
    pub reg: NativeTensor,
    pub prob: NativeTensor,
}

#[napi(object)]
pub struct MtcnnStage {
    /// The boxes the next network is given, flat rows of 5.
    pub boxes: Float64Array,
    /// Their crops, `[n, 3, size, size]`.
    pub crops: Float32Array,
}

fn flat(rows: &[Row]) -> Float64Array {
    Float64Array::new(rows.iter().flatten().copied().collect())
}

fn stage_js((rows, crops): (Vec<Row>, Vec<f32>)) -> Result<MtcnnStage> {
    Ok(MtcnnStage { boxes: flat(&rows), crops: Float32Array::new(crops) })
}

/// The library's pyramid scales for an image of `width`×`height`, largest first.
#[napi]
pub fn mtcnn_scales(flavor: MtcnnFlavor, width: u32, height: u32) -> Vec<f64> {
    mtcnn::scales(flavor.into(), width, height)
}

/// The PNet input of the pyramid level at `scale` (one of `mtcnnScales`), or null when the library
/// skips that level; built one level at a time, so a large image's pyramid is never held whole.
#[napi(ts_return_type = "Promise<MtcnnLevel | null>")]
pub fn mtcnn_pyramid_level(image: NativeImage, flavor: MtcnnFlavor, scale: f64) -> AsyncTask<Job<Option<Level>, Option<MtcnnLevel>>> {
    let flavor: Flavor = flavor.into();
    AsyncTask::new(Job::new(
        move || mtcnn::pyramid_level(&to_image(&image)?, flavor, scale),
        |level| Ok(level.map(|l| MtcnnLevel { scale: l.scale, width: l.width, height: l.height, tensor: Float32Array::new(l.tensor) })),
    ))
}

/// PNet's outputs per level to RNet's boxes and their 24×24 crops.
#[napi(ts_return_type = "Promise<MtcnnStage>")]
pub fn mtcnn_after_pnet(image: NativeImage, flavor: MtcnnFlavor, levels: Vec<MtcnnPnetOutput>) -> AsyncTask<Job<(Vec<Row>, Vec<f32>), MtcnnStage>> {
    let flavor: Flavor = flavor.into();
    let outputs: CoreResult<Vec<(f64, Tensor, Tensor)>> = levels.iter().map(|l| Ok((l.scale, to_tensor(&l.reg)?, to_tensor(&l.prob)?))).collect();
    AsyncTask::new(Job::new(
        move || {
            let (img, outputs) = (to_image(&image)?, outputs?);
            let refs: Vec<(f64, &Tensor, &Tensor)> = outputs.iter().map(|(s, r, p)| (*s, r, p)).collect();
            let rows = mtcnn::after_pnet(flavor, img.width, img.height, &refs)?;
            let crops = mtcnn::crops(&img, flavor, &rows, 24)?;
            Ok((rows, crops))
        },
        stage_js,
    ))
}

/// RNet's outputs on `boxes` to ONet's boxes and their 48×48 crops.
#[napi(ts_return_type = "Promise<MtcnnStage>")]
pub fn mtcnn_after_rnet(image: NativeImage, flavor: MtcnnFlavor, boxes: Float64Array, reg: NativeTensor, prob: NativeTensor) -> AsyncTask<Job<(Vec<Row>, Vec<f32>), MtcnnStage>> {
    let flavor: Flavor = flavor.into();
    let args = (|| CoreResult::Ok((mtcnn::rows_from_flat(&boxes)?, to_tensor(&reg)?, to_tensor(&prob)?)))();
    AsyncTask::new(Job::new(
        move || {
            let (rows, reg, prob) = args?;
            let img = to_image(&image)?;
            let next = mtcnn::after_rnet(flavor, &rows, &reg, &prob)?;
            let crops = mtcnn::crops(&img, flavor, &next, 48)?;
            Ok((next, crops))
        },
        stage_js,
    ))
}

/// ONet's outputs on `boxes` to the faces (the eyes as DeepFace reports them; all five points raw), for an image of `width`×`height`, in the library's order.
#[napi(ts_return_type = "Promise<Array<Detection>>")]
#[allow(clippy::too_many_arguments)]
pub fn mtcnn_faces(
    flavor: MtcnnFlavor,
    width: u32,
    height: u32,
    boxes: Float64Array,
    reg: NativeTensor,
    landmarks: NativeTensor,
    prob: NativeTensor,
) -> AsyncTask<Job<Vec<mtcnn::Face>, Vec<Detection>>> {
    let flavor: Flavor = flavor.into();
    let args = (|| CoreResult::Ok((mtcnn::rows_from_flat(&boxes)?, to_tensor(&reg)?, to_tensor(&landmarks)?, to_tensor(&prob)?)))();
    AsyncTask::new(Job::new(
        move || {
            let (rows, reg, lms, prob) = args?;
            mtcnn::after_onet(flavor, width, height, &rows, &reg, &lms, &prob)
        },
        |faces| Ok(faces.iter().map(|f| detection(&f.raw, f.int.clone(), Landmarks::Eyes)).collect()),
    ))
}
