//! DeepFace's `opencv` detector (deepface/models/face_detection/OpenCv.py): faces from the frontal
//! cascade with detectMultiScale3(1.1, 10, outputRejectLevels=True), eyes from the eye cascade on
//! each face crop. The caller passes the image DeepFace would: bordered when align=True.

use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;

use super::haar::{bgr_to_gray_cascade, Cascade, DetectOptions, Gray, Rect};

#[derive(Clone, Debug, PartialEq)]
pub struct FaceDetection {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    /// `(100 - levelWeight) / 100`, DeepFace's inverted, uncapped score (not a probability).
    pub confidence: f64,
    /// The person's left eye (on the image's right), in input-image coordinates.
    pub left_eye: Option<(i32, i32)>,
    pub right_eye: Option<(i32, i32)>,
}

#[derive(Clone, Debug)]
pub struct OpenCvDetector {
    face: Cascade,
    eye: Cascade,
}

const FACE_OPTS: DetectOptions =
    DetectOptions { scale_factor: 1.1, min_neighbors: 10, min_size: (0, 0), max_size: (0, 0), threads: 0 };
// Face crops are small: the eye scan stays on the calling thread.
const EYE_OPTS: DetectOptions =
    DetectOptions { scale_factor: 1.1, min_neighbors: 10, min_size: (0, 0), max_size: (0, 0), threads: 1 };

impl OpenCvDetector {
    pub fn new(face: Cascade, eye: Cascade) -> Self {
        Self { face, eye }
    }

    /// From the XML text of haarcascade_frontalface_default.xml and haarcascade_eye.xml.
    pub fn from_xml(face_xml: &str, eye_xml: &str) -> CoreResult<Self> {
        Ok(Self::new(Cascade::from_xml(face_xml)?, Cascade::from_xml(eye_xml)?))
    }

    /// Faces of a BGR (or grey, or BGRA) image, in its coordinates and in OpenCV's order.
    pub fn detect(&self, img: &Image) -> CoreResult<Vec<FaceDetection>> {
        self.detect_with_threads(img, 0)
    }

    /// As [`detect`](Self::detect), with the number of scan threads (0: from the machine).
    pub fn detect_with_threads(&self, img: &Image, threads: usize) -> CoreResult<Vec<FaceDetection>> {
        self.detect_raw(img.width, img.height, img.channels, &img.data, threads)
    }

    /// As [`detect`](Self::detect) on borrowed pixels, so that a binding need not copy them.
    pub fn detect_raw(&self, width: u32, height: u32, channels: u32, data: &[u8], threads: usize) -> CoreResult<Vec<FaceDetection>> {
        let (w, h, c) = (width as usize, height as usize, channels as usize);
        if !matches!(c, 1 | 3 | 4) {
            return Err(CoreError::invalid_image("the opencv detector needs 1, 3 or 4 channels"));
        }
        if w == 0 || h == 0 || w.checked_mul(h).and_then(|n| n.checked_mul(c)) != Some(data.len()) {
            return Err(CoreError::invalid_image("image buffer does not match its size"));
        }
        let gray = bgr_to_gray_cascade(data, w, h, c);
        let g = Gray { width: w, height: h, data: &gray };
        let faces = self.face.detect_multi_scale3(g, &DetectOptions { threads, ..FACE_OPTS })?;
        let mut out = Vec::with_capacity(faces.len());
        let mut crop = Vec::new();
        for f in faces {
            let r = f.rect;
            let (left_eye, right_eye) = match self.find_eyes(g, r, &mut crop)? {
                Some((l, rt)) => (Some((r.x + l.0, r.y + l.1)), Some((r.x + rt.0, r.y + rt.1))),
                None => (None, None),
            };
            out.push(FaceDetection {
                x: r.x,
                y: r.y,
                w: r.w,
                h: r.h,
                confidence: (100.0 - f.level_weight) / 100.0,
                left_eye,
                right_eye,
            });
        }
        Ok(out)
    }

    /// DeepFace's `find_eyes` on the face crop: the two largest eye boxes, the one more to the
    /// image's left being the person's right eye. Returns (left, right) in crop coordinates.
    #[allow(clippy::type_complexity)]
    fn find_eyes(&self, g: Gray, r: Rect, crop: &mut Vec<u8>) -> CoreResult<Option<((i32, i32), (i32, i32))>> {
        // Grey of the crop is the crop of the grey: the conversion is per pixel.
        let (cw, ch) = (r.w as usize, r.h as usize);
        crop.clear();
        for y in r.y as usize..r.y as usize + ch {
            crop.extend_from_slice(&g.data[y * g.width + r.x as usize..y * g.width + r.x as usize + cw]);
        }
        let mut eyes = self.eye.detect_multi_scale(Gray { width: cw, height: ch, data: crop }, &EYE_OPTS)?;
        if eyes.len() < 2 {
            return Ok(None);
        }
        // Python's sorted(..., reverse=True) is stable, as is sort_by_key.
        eyes.sort_by_key(|e| std::cmp::Reverse((e.w as i64 * e.h as i64).abs()));
        let (e1, e2) = (eyes[0], eyes[1]);
        let (right, left) = if e1.x < e2.x { (e1, e2) } else { (e2, e1) };
        // int(ex + ew / 2) on non-negative values.
        let centre = |e: Rect| ((2 * e.x + e.w) / 2, (2 * e.y + e.h) / 2);
        Ok(Some((centre(left), centre(right))))
    }
}
