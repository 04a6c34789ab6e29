//! N-API exports for core::detect.

use crate::guard;
use crate::padded::{bordered, inner_size};
use crate::task::Job;
use crate::types::{nullable, Detection, NativeImage, Nullable};
use facecompute_core::detect::opencv::{Border, FaceDetection, OpenCvDetector, OpenCvTrace};
use facecompute_core::CoreError;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

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

/// A face of `HaarDetector.trace`: as `detect` gives it (the same fields, named alike), with OpenCV's reject level and level
/// weight, and the group of windows it averages.
#[napi(object)]
pub struct HaarTracedFace {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub confidence: f64,
    #[napi(js_name = "left_eye", ts_type = "[number, number] | null")]
    pub left_eye: Nullable<Vec<i32>>,
    #[napi(js_name = "right_eye", ts_type = "[number, number] | null")]
    pub right_eye: Nullable<Vec<i32>>,
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

/// A Haar face as every detector's: eyes where the eye cascade found them, no raw values.
fn detection(f: FaceDetection) -> Detection {
    let eye = |p: Option<(i32, i32)>| p.map(|(x, y)| vec![x as f64, y as f64]);
    Detection {
        x: f.x as f64,
        y: f.y as f64,
        w: f.w as f64,
        h: f.h as f64,
        confidence: f.confidence,
        left_eye: nullable(eye(f.left_eye)),
        right_eye: nullable(eye(f.right_eye)),
        nose: None,
        mouth_left: None,
        mouth_right: None,
        raw_box: None,
        raw_landmarks: None,
    }
}

fn traced_js(out: OpenCvTrace) -> Result<HaarTrace> {
    Ok(HaarTrace {
        faces: out
            .faces
            .into_iter()
            .map(|t| {
                let f = t.face;
                HaarTracedFace {
                    x: f.x,
                    y: f.y,
                    w: f.w,
                    h: f.h,
                    confidence: f.confidence,
                    left_eye: nullable(f.left_eye.map(|(x, y)| vec![x, y])),
                    right_eye: nullable(f.right_eye.map(|(x, y)| vec![x, y])),
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

/// Runs `scan` over the image's pixels: in place when unpadded, else over the bordered image built
/// here, off the JS thread. Haar takes 1, 3 or 4 channels; the core refuses anything else.
fn scan<T>(image: &NativeImage, scan: impl FnOnce(u32, u32, u32, &[u8]) -> std::result::Result<T, CoreError>) -> std::result::Result<T, CoreError> {
    match image.pad {
        None => scan(image.width, image.height, image.channels, image.data.as_ref()),
        Some(p) => {
            let img = bordered(image.width, image.height, image.channels, &image.data, &p)?;
            scan(img.width, img.height, img.channels, &img.data)
        }
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
    pub fn load(face_xml: String, eye_xml: String) -> guard::Result<Self> {
        guard::catch(|| OpenCvDetector::from_xml(&face_xml, &eye_xml)).map(|d| Self { inner: Arc::new(d) })
    }

    /// Faces of the image, on the libuv pool.
    #[napi(ts_return_type = "Promise<Detection[]>")]
    pub fn detect(&self, image: NativeImage) -> AsyncTask<Job<Vec<FaceDetection>, Vec<Detection>>> {
        let det = self.inner.clone();
        let run = move || match image.pad {
            None => det.detect_raw(image.width, image.height, image.channels, &image.data, 0),
            // The grey image is bordered, not the colour one: a third of the bytes, and only the
            // inner pixels converted.
            Some(p) => {
                let (w, h) = inner_size(image.width, image.height, &p)?;
                let border = Border { top: p.top, bottom: p.bottom, left: p.left, right: p.right };
                det.detect_bordered(w, h, image.channels, &image.data, border, 0)
            }
        };
        AsyncTask::new(Job::new(run, |out| Ok(out.into_iter().map(detection).collect())))
    }

    /// `detect` with the face cascade's raw windows before grouping and the group each face
    /// averages: a debugging view (`facecompute debug haar-windows`), on the libuv pool.
    #[napi(ts_return_type = "Promise<HaarTrace>")]
    pub fn trace(&self, image: NativeImage) -> AsyncTask<Job<OpenCvTrace, HaarTrace>> {
        let det = self.inner.clone();
        AsyncTask::new(Job::new(move || scan(&image, |w, h, c, data| det.detect_traced(w, h, c, data, 0)), traced_js))
    }
}
