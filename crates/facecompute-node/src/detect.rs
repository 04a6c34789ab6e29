//! N-API exports for core::detect.

use crate::guard;
use crate::padded::{bordered, Padding};
use facecompute_core::detect::opencv::{FaceDetection, OpenCvDetector};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

/// 8-bit interleaved pixels, rows top to bottom; 3 channels are BGR (1: grey, 4: BGRA).
#[napi(object)]
pub struct HaarImage {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Buffer,
    /// A black border included in width and height but not in data (see padded.rs).
    pub pad: Option<Padding>,
}

#[napi(object)]
pub struct HaarFace {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub confidence: f64,
    pub left_eye: Option<Vec<i32>>,
    pub right_eye: Option<Vec<i32>>,
}

pub struct HaarDetectTask {
    detector: Arc<OpenCvDetector>,
    width: u32,
    height: u32,
    channels: u32,
    data: Buffer,
    pad: Option<Padding>,
}

impl Task for HaarDetectTask {
    type Output = Vec<FaceDetection>;
    type JsValue = Vec<HaarFace>;

    fn compute(&mut self) -> Result<Self::Output> {
        let (det, w, h, c, data, pad) = (&self.detector, self.width, self.height, self.channels, &self.data, self.pad);
        guard::catch(|| match pad {
            // Unpadded pixels are scanned in place; a padded view is built here, off the JS thread.
            None => det.detect_raw(w, h, c, data.as_ref(), 0),
            Some(p) => {
                let img = bordered(w, h, c, data, &p)?;
                det.detect_raw(img.width, img.height, img.channels, &img.data, 0)
            }
        })
    }

    fn resolve(&mut self, _env: Env, out: Self::Output) -> Result<Self::JsValue> {
        Ok(out
            .into_iter()
            .map(|f| HaarFace {
                x: f.x,
                y: f.y,
                w: f.w,
                h: f.h,
                confidence: f.confidence,
                left_eye: f.left_eye.map(|(x, y)| vec![x, y]),
                right_eye: f.right_eye.map(|(x, y)| vec![x, y]),
            })
            .collect())
    }
}

/// DeepFace's `opencv` detector over OpenCV's two Haar cascades, parsed once and shared by every
/// detection.
#[napi]
pub struct HaarDetector {
    inner: Arc<OpenCvDetector>,
}

#[napi]
impl HaarDetector {
    /// From the XML text of haarcascade_frontalface_default.xml and haarcascade_eye.xml.
    #[napi(factory)]
    pub fn load(face_xml: String, eye_xml: String) -> Result<Self> {
        guard::catch(|| OpenCvDetector::from_xml(&face_xml, &eye_xml)).map(|d| Self { inner: Arc::new(d) })
    }

    /// Faces of the image, on the libuv pool.
    #[napi(ts_return_type = "Promise<HaarFace[]>")]
    pub fn detect(&self, image: HaarImage) -> AsyncTask<HaarDetectTask> {
        AsyncTask::new(HaarDetectTask {
            detector: self.inner.clone(),
            width: image.width,
            height: image.height,
            channels: image.channels,
            data: image.data,
            pad: image.pad,
        })
    }
}
