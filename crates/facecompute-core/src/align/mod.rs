//! DeepFace's face extraction (detection.py `detect_faces` / `extract_face` / `extract_faces`),
//! reproduced step by step so that crops and reported areas match the reference: the detection
//! border, `expand_percentage`, the padded sub-image, eye-angle rotation with INTER_CUBIC, the
//! projected crop, border removal, and the final clipping of the reported box and landmarks.

mod project;

use crate::error::{CoreError, CoreResult};
use crate::pixels::{copy_make_border, crop_clipped, crop_padded, rotate_roi, Image};
pub use project::project_facial_area;

pub type Point = (f64, f64);

/// One detector box in the coordinates of the image it was found in (bordered when `align`).
#[derive(Clone, Debug, Default)]
pub struct Detection {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    /// The person's left eye (on the image's right for a frontal face).
    pub left_eye: Option<Point>,
    pub right_eye: Option<Point>,
    pub nose: Option<Point>,
    pub mouth_left: Option<Point>,
    pub mouth_right: Option<Point>,
    pub confidence: f64,
}

#[derive(Clone, Copy, Debug)]
pub struct ExtractOptions {
    pub align: bool,
    pub expand_percentage: f64,
    /// Border added before detection (see [`deepface_border`]); 0 when none was added.
    pub border_top: i64,
    pub border_left: i64,
    /// Size of the image before any border: the reported box is clipped to it.
    pub original_width: i64,
    pub original_height: i64,
}

/// The box as DeepFace reports it: ints, clipped, landmarks outside the image set to None.
#[derive(Clone, Debug, PartialEq)]
pub struct FacialArea {
    pub x: i64,
    pub y: i64,
    pub w: i64,
    pub h: i64,
    pub left_eye: Option<(i64, i64)>,
    pub right_eye: Option<(i64, i64)>,
    pub nose: Option<(i64, i64)>,
    pub mouth_left: Option<(i64, i64)>,
    pub mouth_right: Option<(i64, i64)>,
}

#[derive(Clone, Debug)]
pub struct ExtractedFace {
    /// BGR uint8 crop.
    pub face: Image,
    pub area: FacialArea,
    /// Detector confidence rounded to 2 decimals, as DeepFace reports it.
    pub confidence: f64,
}

/// The black border DeepFace adds before detecting with align=True: `int(0.5*H)` above and below,
/// `int(0.5*W)` left and right. Returns the bordered image and (top, left).
pub fn deepface_border(img: &Image) -> CoreResult<(Image, u32, u32)> {
    let top = img.height / 2;
    let left = img.width / 2;
    Ok((copy_make_border(img, top, top, left, left)?, top, left))
}

/// Python's `int()` on a float: truncation toward zero.
#[inline]
fn py_int(v: f64) -> i64 {
    v.trunc() as i64
}

/// Python slice bounds `[start:stop]` over `len` items.
fn py_slice(start: i64, stop: i64, len: i64) -> (i64, i64) {
    let norm = |i: i64| if i < 0 { (i + len).max(0) } else { i.min(len) };
    let (s, e) = (norm(start), norm(stop));
    (s, e.max(s))
}

/// `img[y0:y1, x0:x1]` with numpy's slicing semantics.
fn np_crop(img: &Image, x0: i64, y0: i64, x1: i64, y1: i64) -> Image {
    let (xs, xe) = py_slice(x0, x1, img.width as i64);
    let (ys, ye) = py_slice(y0, y1, img.height as i64);
    crop_clipped(img, xs, ys, xe, ye)
}

fn finite(v: f64, what: &str) -> CoreResult<f64> {
    if v.is_finite() && v.abs() < 1e9 {
        Ok(v)
    } else {
        Err(CoreError::invalid_request(format!("detection {what} must be a finite coordinate")))
    }
}

fn check_point(p: Option<Point>, what: &str) -> CoreResult<Option<Point>> {
    match p {
        None => Ok(None),
        Some((x, y)) => Ok(Some((finite(x, what)?, finite(y, what)?))),
    }
}

/// `extract_face` for one detection: returns the crop and the box/landmarks after border removal.
fn extract_one(img: &Image, det: &Detection, opts: &ExtractOptions) -> CoreResult<(Image, [i64; 4], [Option<Point>; 5])> {
    let (iw, ih) = (img.width as i64, img.height as i64);
    let mut x = py_int(finite(det.x, "x")?);
    let mut y = py_int(finite(det.y, "y")?);
    let mut w = py_int(finite(det.w, "w")?);
    let mut h = py_int(finite(det.h, "h")?);
    if w < 0 || h < 0 {
        return Err(CoreError::invalid_request("detection width and height must not be negative"));
    }
    let le = check_point(det.left_eye, "left_eye")?;
    let re = check_point(det.right_eye, "right_eye")?;
    let p = opts.expand_percentage;
    if p > 0.0 {
        let ew = w + py_int(w as f64 * p / 100.0);
        let eh = h + py_int(h as f64 * p / 100.0);
        x = (x - py_int((ew - w) as f64 / 2.0)).max(0);
        y = (y - py_int((eh - h) as f64 / 2.0)).max(0);
        // A box that starts past the image's edge has nothing left: an empty face, skipped below
        // as DeepFace skips empty crops (numpy's slice is empty there; its align path would raise).
        w = (iw - x).min(ew).max(0);
        h = (ih - y).min(eh).max(0);
    }
    let face = if opts.align {
        // extract_sub_image: the box with half its size on each side, black where outside.
        let (rx, ry) = (py_int(0.5 * w as f64), py_int(0.5 * h as f64));
        let sub = crop_padded(img, x - rx, y - ry, w + 2 * rx, h + 2 * ry)?;
        let angle = match (le, re) {
            (Some(l), Some(r)) if sub.width > 0 && sub.height > 0 => (l.1 - r.1).atan2(l.0 - r.0).to_degrees(),
            _ => 0.0,
        };
        // The rotated sub-image has the sub-image's size, so the crop is known before rotating:
        // only its pixels are warped (a quarter of the sub-image), the same values as DeepFace's.
        let (x1, y1, x2, y2) = project_facial_area((rx, ry, rx + w, ry + h), angle, (sub.height as i64, sub.width as i64));
        if le.is_some() && re.is_some() && sub.width > 0 && sub.height > 0 {
            let (xs, xe) = py_slice(x1, x2, sub.width as i64);
            let (ys, ye) = py_slice(y1, y2, sub.height as i64);
            rotate_roi(&sub, (sub.width / 2) as f64, (sub.height / 2) as f64, angle, (xs as usize, ys as usize, xe as usize, ye as usize))?
        } else {
            np_crop(&sub, x1, y1, x2, y2)
        }
    } else {
        np_crop(img, x, y, x + w, y + h)
    };
    let (bl, bt) = (opts.border_left as f64, opts.border_top as f64);
    let shift = |p: Option<Point>| p.map(|(px, py)| (px - bl, py - bt));
    let marks = [
        shift(le),
        shift(re),
        shift(check_point(det.nose, "nose")?),
        shift(check_point(det.mouth_left, "mouth_left")?),
        shift(check_point(det.mouth_right, "mouth_right")?),
    ];
    Ok((face, [x - opts.border_left, y - opts.border_top, w, h], marks))
}

/// Python's `round(v, 2)` (correctly rounded from the exact binary value).
fn round2(v: f64) -> f64 {
    format!("{v:.2}").parse().unwrap_or(0.0)
}

/// Every face of one image, in detection order; empty crops are skipped as DeepFace does.
pub fn extract_faces(img: &Image, detections: &[Detection], opts: &ExtractOptions) -> CoreResult<Vec<ExtractedFace>> {
    if img.channels != 3 || img.data.len() != img.width as usize * img.height as usize * 3 {
        return Err(CoreError::invalid_request("extract_faces needs a 3-channel image"));
    }
    if !opts.expand_percentage.is_finite() {
        return Err(CoreError::invalid_request("expand_percentage must be finite"));
    }
    let (ow, oh) = (opts.original_width, opts.original_height);
    let mut out = Vec::with_capacity(detections.len());
    for det in detections {
        let (face, [x, y, w, h], marks) = extract_one(img, det, opts)?;
        if face.width == 0 || face.height == 0 {
            continue;
        }
        let x = x.max(0);
        let y = y.max(0);
        let w = (ow - x - 1).min(w);
        let h = (oh - y - 1).min(h);
        let clip = |p: Option<Point>| {
            p.map(|(px, py)| (py_int(px), py_int(py))).filter(|&(px, py)| 0 <= px && px < ow && 0 <= py && py < oh)
        };
        let area = FacialArea {
            x,
            y,
            w,
            h,
            left_eye: clip(marks[0]),
            right_eye: clip(marks[1]),
            nose: clip(marks[2]),
            mouth_left: clip(marks[3]),
            mouth_right: clip(marks[4]),
        };
        let conf = if det.confidence.is_finite() { round2(det.confidence) } else { 0.0 };
        out.push(ExtractedFace { face, area, confidence: conf });
    }
    Ok(out)
}
