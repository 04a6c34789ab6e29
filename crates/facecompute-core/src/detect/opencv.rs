//! DeepFace's `opencv` detector (deepface/models/face_detection/OpenCv.py): faces from the frontal
//! cascade with detectMultiScale3(1.1, 10, outputRejectLevels=True), eyes from the eye cascade on
//! each face crop. The caller passes the image DeepFace would: bordered when align=True.

use crate::error::{CoreError, CoreResult};
use crate::pixels::{bordered_size, Image};

use super::haar::{bgr_to_gray_cascade, Cascade, DetectOptions, Detection, Gray, RawWindow, Rect};

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

/// [`OpenCvDetector::detect_traced`]'s answer: the faces, each with what OpenCV reports for it and
/// the group of raw windows it averages, and those windows.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenCvTrace {
    pub faces: Vec<TracedFace>,
    pub windows: Vec<RawWindow>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TracedFace {
    pub face: FaceDetection,
    /// OpenCV's rejectLevels and levelWeights entries (`confidence` is derived from the weight).
    pub reject_level: i32,
    pub level_weight: f64,
    /// The `RawWindow::group` this face averages.
    pub group: usize,
}

const NEEDS_CHANNELS: &str = "the opencv detector needs 1, 3 or 4 channels";

fn gray_of(width: u32, height: u32, channels: u32, data: &[u8]) -> CoreResult<Vec<u8>> {
    let (w, h, c) = (width as usize, height as usize, channels as usize);
    if !matches!(c, 1 | 3 | 4) {
        return Err(CoreError::invalid_image(NEEDS_CHANNELS));
    }
    if w == 0 || h == 0 || w.checked_mul(h).and_then(|n| n.checked_mul(c)) != Some(data.len()) {
        return Err(CoreError::invalid_image("image buffer does not match its size"));
    }
    Ok(bgr_to_gray_cascade(data, w, h, c))
}

/// A black border around an image, in pixels per side: DeepFace's align border
/// (`cv2.copyMakeBorder(..., BORDER_CONSTANT, value=0)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Border {
    pub top: u32,
    pub bottom: u32,
    pub left: u32,
    pub right: u32,
}

/// The grey image of `data` (`width` x `height`) inside a black `border`: the inner pixels are
/// converted, the border is 0 (black's grey), so the bordered colour image is never built.
fn bordered_gray(width: u32, height: u32, channels: u32, data: &[u8], b: Border) -> CoreResult<(usize, usize, Vec<u8>)> {
    // The same checks, in the same order and with the same errors, as bordering the colour image.
    let (bw, bh) = bordered_size(width, height, channels, data.len(), b.top, b.bottom, b.left, b.right)?;
    // An empty inner image leaves only the border, which the bordered image's own checks accept.
    let inner = if width == 0 || height == 0 {
        if !matches!(channels, 1 | 3 | 4) {
            return Err(CoreError::invalid_image(NEEDS_CHANNELS));
        }
        Vec::new()
    } else {
        gray_of(width, height, channels, data)?
    };
    if bw == 0 || bh == 0 {
        return Err(CoreError::invalid_image("image buffer does not match its size"));
    }
    let (w, bw, bh) = (width as usize, bw as usize, bh as usize);
    let mut out = vec![0u8; bw * bh];
    for (y, row) in inner.chunks_exact(w.max(1)).enumerate() {
        let at = (y + b.top as usize) * bw + b.left as usize;
        out[at..at + w].copy_from_slice(row);
    }
    Ok((bw, bh, out))
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
        let gray = gray_of(width, height, channels, data)?;
        self.detect_gray(Gray { width: width as usize, height: height as usize, data: &gray }, threads)
    }

    /// As [`detect_raw`](Self::detect_raw) on `data` inside a black `border`, with the boxes in
    /// the bordered image's coordinates. The same faces as bordering first: grey conversion is per
    /// pixel and black stays 0.
    pub fn detect_bordered(&self, width: u32, height: u32, channels: u32, data: &[u8], border: Border, threads: usize) -> CoreResult<Vec<FaceDetection>> {
        let (w, h, gray) = bordered_gray(width, height, channels, data, border)?;
        self.detect_gray(Gray { width: w, height: h, data: &gray }, threads)
    }

    fn detect_gray(&self, g: Gray, threads: usize) -> CoreResult<Vec<FaceDetection>> {
        let faces = self.face.detect_multi_scale3(g, &DetectOptions { threads, ..FACE_OPTS })?;
        faces.into_iter().map(|f| self.with_eyes(g, f)).collect()
    }

    /// What the face cascade's scan evaluates on `img` (`Cascade::scan_work`), for bench/haar.
    pub fn face_scan_work(&self, img: &Image) -> CoreResult<crate::detect::haar::ScanWork> {
        let gray = gray_of(img.width, img.height, img.channels, &img.data)?;
        let g = Gray { width: img.width as usize, height: img.height as usize, data: &gray };
        self.face.scan_work(g, &FACE_OPTS)
    }

    /// As [`detect_raw`](Self::detect_raw), with the face cascade's raw windows before grouping and
    /// the group each face averages (see `Cascade::detect_multi_scale3_traced`): the debugging view
    /// behind `facecompute debug haar-windows`.
    pub fn detect_traced(&self, width: u32, height: u32, channels: u32, data: &[u8], threads: usize) -> CoreResult<OpenCvTrace> {
        let gray = gray_of(width, height, channels, data)?;
        let g = Gray { width: width as usize, height: height as usize, data: &gray };
        let trace = self.face.detect_multi_scale3_traced(g, &DetectOptions { threads, ..FACE_OPTS })?;
        let faces = trace
            .boxes
            .into_iter()
            .map(|(f, group)| Ok(TracedFace { face: self.with_eyes(g, f)?, reject_level: f.reject_level, level_weight: f.level_weight, group }))
            .collect::<CoreResult<_>>()?;
        Ok(OpenCvTrace { faces, windows: trace.windows })
    }

    fn with_eyes(&self, g: Gray, f: Detection) -> CoreResult<FaceDetection> {
        let r = f.rect;
        let mut crop = Vec::new();
        let (left_eye, right_eye) = match self.find_eyes(g, r, &mut crop)? {
            Some((l, rt)) => (Some((r.x + l.0, r.y + l.1)), Some((r.x + rt.0, r.y + rt.1))),
            None => (None, None),
        };
        Ok(FaceDetection { x: r.x, y: r.y, w: r.w, h: r.h, confidence: (100.0 - f.level_weight) / 100.0, left_eye, right_eye })
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
