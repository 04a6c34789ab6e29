//! YuNet (`face_detection_yunet_2023mar.onnx`) as DeepFace runs it through OpenCV:
//! - DeepFace `YuNet.py`: images larger than 640 on either side are resized (cv2 INTER_LINEAR) to
//!   `(int(W*r), int(H*r))` with `r = 640/max(H,W)`; results are mapped back with `int(v / r)`.
//! - OpenCV `FaceDetectorYN`: the input is zero-padded right/bottom to multiples of 32, fed as raw
//!   BGR float NCHW; per stride 8/16/32 each grid cell gives `score = sqrt(clamp(cls)*clamp(obj))`,
//!   a box `(c + dx, r + dy) * s` with size `exp(dw|dh) * s` and 5 keypoints `(kp + (c,r)) * s`;
//!   then `NMSBoxes` on the truncated integer boxes (only when there are 2+ candidates).

use crate::pixels::{resize, Image, Interpolation};
use super::nms::nms_opencv;
use super::{IntFace, Tensor};
use crate::error::{CoreError, CoreResult};

pub const STRIDES: [usize; 3] = [8, 16, 32];
/// DeepFace's default for env `yunet_score_threshold`.
pub const DEFAULT_SCORE_THRESHOLD: f32 = 0.9;
/// OpenCV FaceDetectorYN defaults (DeepFace does not change them).
pub const DEFAULT_NMS_THRESHOLD: f32 = 0.3;
pub const DEFAULT_TOP_K: usize = 5000;
const MAX_SIDE: u32 = 640;
const DIVISOR: u32 = 32;

/// A row of FaceDetectorYN's output: `[x, y, w, h, re_x, re_y, le_x, le_y, nose_x, nose_y,
/// rcm_x, rcm_y, lcm_x, lcm_y, score]` in the coordinates of the (possibly resized) detector input.
pub type YunetRow = [f32; 15];

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub resized: bool,
    pub ratio: f64,
    /// Size handed to `setInputSize` (after DeepFace's resize).
    pub input_width: u32,
    pub input_height: u32,
    pub pad_width: u32,
    pub pad_height: u32,
}

pub fn plan(width: u32, height: u32) -> CoreResult<Plan> {
    if width == 0 || height == 0 {
        return Err(CoreError::invalid_image("yunet: empty image"));
    }
    let (mut iw, mut ih, mut ratio, mut resized) = (width, height, 1.0f64, false);
    if height > MAX_SIDE || width > MAX_SIDE {
        ratio = 640.0 / width.max(height) as f64;
        iw = (width as f64 * ratio) as u32;
        ih = (height as f64 * ratio) as u32;
        resized = true;
        if iw == 0 || ih == 0 {
            return Err(CoreError::invalid_image("yunet: image aspect ratio too extreme to resize"));
        }
    }
    let pad = |v: u32| ((v - 1) / DIVISOR + 1) * DIVISOR;
    Ok(Plan { resized, ratio, input_width: iw, input_height: ih, pad_width: pad(iw), pad_height: pad(ih) })
}

/// The network input `[1, 3, pad_h, pad_w]`, raw BGR values, zeros in the padding.
pub fn prepare(img: &Image) -> CoreResult<(Plan, Vec<f32>)> {
    if img.channels != 3 || img.data.len() != img.stride() * img.height as usize {
        return Err(CoreError::invalid_image("yunet expects a 3-channel BGR image"));
    }
    let p = plan(img.width, img.height)?;
    let resized;
    let src = if p.resized {
        resized = resize(img, p.input_width, p.input_height, Interpolation::Linear)?;
        &resized
    } else {
        img
    };
    let (pw, ph) = (p.pad_width as usize, p.pad_height as usize);
    let plane = pw * ph;
    let mut t = vec![0f32; 3 * plane];
    let sw = src.width as usize;
    for (y, row) in src.data.chunks_exact(sw * 3).enumerate() {
        for (x, px) in row.chunks_exact(3).enumerate() {
            let o = y * pw + x;
            t[o] = px[0] as f32;
            t[plane + o] = px[1] as f32;
            t[2 * plane + o] = px[2] as f32;
        }
    }
    Ok((p, t))
}

/// Outputs in the model's order: `cls_8, cls_16, cls_32, obj_8, obj_16, obj_32, bbox_8, bbox_16,
/// bbox_32, kps_8, kps_16, kps_32`.
pub fn decode(outputs: &[Tensor], pad_width: u32, pad_height: u32, score_threshold: f32, nms_threshold: f32, top_k: usize) -> CoreResult<Vec<YunetRow>> {
    if outputs.len() != 12 {
        return Err(CoreError::invalid_request(format!("yunet decode: expected 12 outputs, got {}", outputs.len())));
    }
    if pad_width == 0 || pad_height == 0 || pad_width % DIVISOR != 0 || pad_height % DIVISOR != 0 {
        return Err(CoreError::invalid_request("yunet decode: padded size must be a positive multiple of 32"));
    }
    if !score_threshold.is_finite() || !nms_threshold.is_finite() {
        return Err(CoreError::invalid_request("yunet decode: thresholds must be finite"));
    }
    let mut faces: Vec<YunetRow> = Vec::new();
    for (i, &s) in STRIDES.iter().enumerate() {
        let cols = pad_width as usize / s;
        let rows = pad_height as usize / s;
        let n = rows * cols;
        let (cls, obj, bbox, kps) = (&outputs[i], &outputs[i + 3], &outputs[i + 6], &outputs[i + 9]);
        cls.expect_shape(&[1, n, 1], "cls")?;
        obj.expect_shape(&[1, n, 1], "obj")?;
        bbox.expect_shape(&[1, n, 4], "bbox")?;
        kps.expect_shape(&[1, n, 10], "kps")?;
        let sf = s as f32;
        for r in 0..rows {
            for c in 0..cols {
                let idx = r * cols + c;
                let cs = cls.data[idx].clamp(0.0, 1.0);
                let os = obj.data[idx].clamp(0.0, 1.0);
                let score = (cs * os).sqrt();
                if score < score_threshold || score.is_nan() {
                    continue;
                }
                let b = &bbox.data[idx * 4..idx * 4 + 4];
                let cx = (c as f32 + b[0]) * sf;
                let cy = (r as f32 + b[1]) * sf;
                let w = b[2].exp() * sf;
                let h = b[3].exp() * sf;
                let mut row = [0f32; 15];
                row[0] = cx - w / 2.0;
                row[1] = cy - h / 2.0;
                row[2] = w;
                row[3] = h;
                let k = &kps.data[idx * 10..idx * 10 + 10];
                for n in 0..5 {
                    row[4 + 2 * n] = (k[2 * n] + c as f32) * sf;
                    row[5 + 2 * n] = (k[2 * n + 1] + r as f32) * sf;
                }
                row[14] = score;
                faces.push(row);
            }
        }
    }
    if faces.len() <= 1 {
        return Ok(faces);
    }
    // Rect2i(int(x), ...) truncates; saturating `as` only differs for absurd values.
    let rects: Vec<[i32; 4]> = faces.iter().map(|f| [f[0] as i32, f[1] as i32, f[2] as i32, f[3] as i32]).collect();
    let scores: Vec<f32> = faces.iter().map(|f| f[14]).collect();
    let keep = nms_opencv(&rects, &scores, score_threshold, nms_threshold, top_k);
    Ok(keep.into_iter().map(|i| faces[i]).collect())
}

/// DeepFace `YuNetClient.detect_faces` on one row: `int()` everything, clamp x/y at 0 (w/h are not
/// adjusted), then `int(v / r)` when the image was resized. The first keypoint pair becomes
/// `right_eye` and the second `left_eye` (the person's), matching DeepFace's assignment.
pub fn deepface_face(row: &YunetRow, p: &Plan) -> (IntFace, f32) {
    let iv = |v: f32| v as i32;
    let back = |v: i32| if p.resized { (v as f64 / p.ratio) as i32 } else { v };
    let x = back(iv(row[0]).max(0));
    let y = back(iv(row[1]).max(0));
    let w = back(iv(row[2]));
    let h = back(iv(row[3]));
    let mut lm = [[0i32; 2]; 5];
    for (n, o) in lm.iter_mut().enumerate() {
        *o = [back(iv(row[4 + 2 * n])), back(iv(row[5 + 2 * n]))];
    }
    (IntFace { x, y, w, h, landmarks: lm }, row[14])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_resizes_like_deepface_and_pads_to_32() {
        let p = plan(300, 200).unwrap();
        assert_eq!((p.resized, p.input_width, p.input_height, p.pad_width, p.pad_height), (false, 300, 200, 320, 224));
        let p = plan(1000, 700).unwrap();
        assert!(p.resized);
        assert_eq!((p.input_width, p.input_height), ((1000.0 * 0.64f64) as u32, (700.0 * 0.64f64) as u32));
        assert_eq!((p.pad_width, p.pad_height), (640, 448));
        let p = plan(640, 640).unwrap();
        assert!(!p.resized);
        assert_eq!(p.pad_width, 640);
        assert!(plan(0, 5).is_err());
        assert!(plan(100_000, 1).is_err());
    }

    #[test]
    fn prepare_pads_with_zeros_in_bgr_planes() {
        let mut img = Image::new(33, 1, 3);
        img.data[0..3].copy_from_slice(&[1, 2, 3]);
        let (p, t) = prepare(&img).unwrap();
        assert_eq!((p.pad_width, p.pad_height), (64, 32));
        let plane = 64 * 32;
        assert_eq!(t.len(), 3 * plane);
        assert_eq!([t[0], t[plane], t[2 * plane]], [1.0, 2.0, 3.0]);
        assert!(t[33..64].iter().all(|&v| v == 0.0));
    }

    fn zero_outputs(pw: usize, ph: usize) -> Vec<Tensor> {
        let mut v = Vec::new();
        for width in [1usize, 1, 4, 10] {
            for s in STRIDES {
                let n = (pw / s) * (ph / s);
                v.push(Tensor::new(vec![1, n, width], vec![0.0; n * width]).unwrap());
            }
        }
        v
    }

    #[test]
    fn decodes_a_known_face_and_applies_nms() {
        let (pw, ph) = (64usize, 32usize);
        let mut o = zero_outputs(pw, ph);
        // stride 8: cols 8. Cell (r=1, c=2), idx 10.
        let idx = 10;
        o[0].data[idx] = 1.0;
        o[3].data[idx] = 0.8281; // sqrt = 0.91
        o[6].data[idx * 4..idx * 4 + 4].copy_from_slice(&[0.5, 0.5, (2f32).ln(), 0.0]);
        o[9].data[idx * 10] = -0.25; // right eye x: (2 - 0.25) * 8 = 14
        o[9].data[idx * 10 + 3] = 0.5; // left eye y: (1 + 0.5) * 8 = 12
        // A duplicate at stride 16 cell (0,1) with a lower score and box near-identical.
        let j = 1;
        o[1].data[j] = 0.96;
        o[4].data[j] = 0.96;
        o[7].data[j * 4..j * 4 + 4].copy_from_slice(&[0.25, 0.75, 0.0, -(2f32).ln()]);
        // Out-of-range cls/obj are clamped: 5.0 * 0.0 → 0.
        o[2].data[0] = 5.0;
        let rows = decode(&o, pw as u32, ph as u32, 0.9, 0.3, 5000).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let r = rows[0];
        assert!((r[14] - 0.96).abs() < 1e-6);
        // stride 16, (c=1 + .25)*16 = 20 cx, (0 + .75)*16 = 12 cy, w 16, h 8
        assert_eq!(&r[0..4], &[12.0, 8.0, 16.0, 8.0]);
        // Without NMS pressure both survive; sorted by score.
        let rows = decode(&o, pw as u32, ph as u32, 0.9, 1.0, 5000).unwrap();
        assert_eq!(rows.len(), 2);
        let f = rows[1];
        // stride 8: cx (2+.5)*8 = 20, cy 12, w 16, h 8
        assert_eq!(&f[0..4], &[12.0, 8.0, 16.0, 8.0]);
        assert_eq!([f[4], f[7]], [14.0, 12.0]);
        assert!((f[14] - 0.91).abs() < 1e-6);
        // top_k = 1 keeps only the best.
        assert_eq!(decode(&o, pw as u32, ph as u32, 0.9, 1.0, 1).unwrap().len(), 1);
        // Higher threshold: only the 0.96 one.
        assert_eq!(decode(&o, pw as u32, ph as u32, 0.95, 1.0, 0).unwrap().len(), 1);
    }

    #[test]
    fn rejects_malformed_outputs() {
        let o = zero_outputs(64, 32);
        assert!(decode(&o[..11], 64, 32, 0.9, 0.3, 10).is_err());
        assert!(decode(&o, 64, 64, 0.9, 0.3, 10).is_err());
        assert!(decode(&o, 60, 32, 0.9, 0.3, 10).is_err());
        let mut bad = o.clone();
        bad[9] = Tensor::new(vec![1, 32, 9], vec![0.0; 32 * 9]).unwrap();
        assert!(decode(&bad, 64, 32, 0.9, 0.3, 10).is_err());
    }

    #[test]
    fn deepface_mapping_truncates_clamps_and_scales_back() {
        let mut row = [0f32; 15];
        row[..4].copy_from_slice(&[-3.7, 10.9, 50.5, 60.2]);
        for n in 0..5 {
            row[4 + 2 * n] = 20.0 + n as f32;
            row[5 + 2 * n] = 30.6;
        }
        row[14] = 0.93;
        let p = plan(100, 100).unwrap();
        let (f, s) = deepface_face(&row, &p);
        assert_eq!((f.x, f.y, f.w, f.h, s), (0, 10, 50, 60, 0.93));
        assert_eq!(f.landmarks[0], [20, 30]);
        let p = plan(1280, 960).unwrap();
        assert_eq!(p.ratio, 0.5);
        let (f, _) = deepface_face(&row, &p);
        assert_eq!((f.x, f.y, f.w, f.h), (0, 20, 100, 120));
        assert_eq!(f.landmarks[4], [48, 60]);
    }
}
