//! N-API exports for core::detect.

use crate::guard;
use crate::padded::{bordered, Padding};
use facecompute_core::detect::opencv::{FaceDetection, OpenCvDetector, OpenCvTrace};
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

/// One window of the face cascade that passed every stage, before OpenCV's groupRectangles.
#[napi(object)]
pub struct HaarWindow {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    /// The last stage's sum (OpenCV's levelWeights entry).
    pub weight: f64,
    /// The group it joins (cv::partition's number, eps 0.2).
    pub group: u32,
}

/// A face of `HaarDetector.trace`: as `detect` gives it, with OpenCV's reject level and level
/// weight, and the group of windows it averages.
#[napi(object)]
pub struct HaarTracedFace {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub confidence: f64,
    pub left_eye: Option<Vec<i32>>,
    pub right_eye: Option<Vec<i32>>,
    pub reject_level: i32,
    pub level_weight: f64,
    pub group: u32,
}

/// `HaarDetector.trace`'s answer: the faces and the raw windows.
#[napi(object)]
pub struct HaarTrace {
    pub faces: Vec<HaarTracedFace>,
    pub windows: Vec<HaarWindow>,
}

fn js_face(f: FaceDetection) -> HaarFace {
    HaarFace {
        x: f.x,
        y: f.y,
        w: f.w,
        h: f.h,
        confidence: f.confidence,
        left_eye: f.left_eye.map(|(x, y)| vec![x, y]),
        right_eye: f.right_eye.map(|(x, y)| vec![x, y]),
    }
}

pub struct HaarTraceTask(HaarDetectTask);

impl Task for HaarTraceTask {
    type Output = OpenCvTrace;
    type JsValue = HaarTrace;

    fn compute(&mut self) -> Result<Self::Output> {
        let t = &self.0;
        let (det, w, h, c, data, pad) = (&t.detector, t.width, t.height, t.channels, &t.data, t.pad);
        guard::catch(|| match pad {
            None => det.detect_traced(w, h, c, data.as_ref(), 0),
            Some(p) => {
                let img = bordered(w, h, c, data, &p)?;
                det.detect_traced(img.width, img.height, img.channels, &img.data, 0)
            }
        })
    }

    fn resolve(&mut self, _env: Env, out: Self::Output) -> Result<Self::JsValue> {
        Ok(HaarTrace {
            faces: out
                .faces
                .into_iter()
                .map(|t| {
                    let f = js_face(t.face);
                    HaarTracedFace {
                        x: f.x,
                        y: f.y,
                        w: f.w,
                        h: f.h,
                        confidence: f.confidence,
                        left_eye: f.left_eye,
                        right_eye: f.right_eye,
                        reject_level: t.reject_level,
                        level_weight: t.level_weight,
                        group: t.group as u32,
                    }
                })
                .collect(),
            windows: out
                .windows
                .into_iter()
                .map(|w| HaarWindow { x: w.rect.x, y: w.rect.y, w: w.rect.w, h: w.rect.h, weight: w.weight, group: w.group as u32 })
                .collect(),
        })
    }
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
        Ok(out.into_iter().map(js_face).collect())
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

    /// `detect` with the face cascade's raw windows before grouping and the group each face
    /// averages: a debugging view (`facecompute debug haar-windows`), on the libuv pool.
    #[napi(ts_return_type = "Promise<HaarTrace>")]
    pub fn trace(&self, image: HaarImage) -> AsyncTask<HaarTraceTask> {
        AsyncTask::new(HaarTraceTask(HaarDetectTask {
            detector: self.inner.clone(),
            width: image.width,
            height: image.height,
            channels: image.channels,
            data: image.data,
            pad: image.pad,
        }))
    }
}
