//! ipazc mtcnn 1.0.0 (DeepFace's `mtcnn`), step by step:
//! - the image (RGB uint8) is normalised to `(x - 127.5) / 128` in float64 (exact in float32);
//! - pyramid: `round(-(ln(min/12) / ln(0.709) + 1))` scales `0.6 · 0.709^k`; each level is
//!   `tf.image.resize(AREA)` to `trunc(H·s) × trunc(W·s)`: TensorFlow's ResizeArea kernel in float32;
//! - PNet cells with face probability `> 0.6` become boxes `(2c + 1 + 11·dx1, 2r + 1 + 11·dy1,
//!   2c + 12 + 11·dx2, 2r + 12 + 11·dy2) / s` (float64), sorted by score (numpy 2's argsort on AVX2, reversed: `xss_argsort`);
//! - suppression is mtcnn's `smart_nms_from_bboxes`: a box is dropped when ANY earlier box (kept or
//!   not) overlaps it more than the threshold (IoU "union" or "min", areas without the +1);
//!   per level at 0.5 in the order above, then all levels at 0.7 after a fresh sort;
//! - RNet/ONet crops are `tf.image.crop_and_resize` (bilinear, float32, 0 outside the image) of boxes
//!   given as fractions of the image size; RNet keeps `> 0.7`, ONet `> 0.8`; regression uses the
//!   +1 width and is TensorFlow's float32 arithmetic (the offsets are a tf.Tensor, see `regress`); landmarks are placed on the box before ONet's regression, stored as float32;
//! - the result is clipped to the image, then `np.round` (half to even) to integer x, y, w, h and
//!   landmarks.

use super::xss_argsort::numpy_avx2_argsort;
use super::{square_f64, Face, Level, Row};
use crate::detect::{FaceBox, IntFace, Tensor};
use crate::error::CoreResult;
use crate::pixels::Image;

const MIN_SIZE: f64 = 12.0;
const MIN_FACE: f64 = 20.0;
const FACTOR: f64 = 0.709;
const T_PNET: f32 = 0.6;
const T_RNET: f64 = 0.7;
const T_ONET: f64 = 0.8;

#[inline]
fn norm(v: u8) -> f32 {
    // (x - 127.5) / 128 in float64, then float32 as TensorFlow's kernels read it: exact either way.
    ((v as f64 - 127.5) / 128.0) as f32
}

pub(super) fn scales(width: u32, height: u32) -> Vec<f64> {
    let min_dim = width.min(height) as f64;
    let count = (-((min_dim / MIN_SIZE).ln() / FACTOR.ln() + 1.0)).round_ties_even();
    let m = MIN_SIZE / MIN_FACE;
    (0..count.max(0.0) as i64).map(|k| m * FACTOR.powf(k as f64)).collect()
}

/// TensorFlow's per-axis ResizeArea coverage: for output `i`, the source span and its end weights.
struct Span {
    start: i64,
    end: i64,
    start_scale: f32,
    end_minus_one_scale: f32,
}

fn spans(out: usize, scale: f32) -> Vec<Span> {
    let weight = |v: i64, a: f32, b: f32| -> f32 {
        let vf = v as f32;
        if vf < a {
            if vf + 1.0 > b {
                scale
            } else {
                (v + 1) as f32 - a
            }
        } else if vf + 1.0 > b {
            b - vf
        } else {
            1.0
        }
    };
    (0..out)
        .map(|x| {
            let a = x as f32 * scale;
            let b = (x + 1) as f32 * scale;
            let start = a.floor() as i64;
            let end = b.ceil() as i64;
            Span { start, end, start_scale: weight(start, a, b), end_minus_one_scale: weight(end - 1, a, b) }
        })
        .collect()
}

fn resize_area(img: &Image, ow: usize, oh: usize) -> Vec<f32> {
    let (iw, ih) = (img.width as usize, img.height as usize);
    let hs = ih as f32 / oh as f32;
    let ws = iw as f32 / ow as f32;
    let scale = (1.0f64 / (hs * ws) as f64) as f32;
    let xs = spans(ow, ws);
    let plane = ow * oh;
    let mut out = vec![0f32; 3 * plane];
    let clamp = |v: i64, n: usize| v.clamp(0, n as i64 - 1) as usize;
    // RGB from BGR: channel c of the output reads byte 2 - c.
    let px = |x: usize, row: &[u8], c: usize| norm(row[x * 3 + 2 - c]);
    let mut ys: Vec<(usize, f32)> = Vec::new();
    for y in 0..oh {
        let a = y as f32 * hs;
        let b = (y + 1) as f32 * hs;
        ys.clear();
        for i in a.floor() as i64..b.ceil() as i64 {
            let fi = i as f32;
            let s = if fi < a {
                if fi + 1.0 > b {
                    hs
                } else {
                    (i + 1) as f32 - a
                }
            } else if fi + 1.0 > b {
                b - fi
            } else {
                1.0
            };
            ys.push((clamp(i, ih), s));
        }
        for (x, sp) in xs.iter().enumerate() {
            for c in 0..3 {
                let mut sum = 0f32;
                for &(r, sy) in &ys {
                    let row = &img.data[r * iw * 3..(r + 1) * iw * 3];
                    let mut sum_y = px(clamp(sp.start, iw), row, c) * sp.start_scale;
                    if sp.start + 1 != sp.end {
                        for xi in sp.start + 1..sp.end - 1 {
                            sum_y += px(clamp(xi, iw), row, c);
                        }
                        sum_y += px(clamp(sp.end - 1, iw), row, c) * sp.end_minus_one_scale;
                    }
                    sum += sum_y * sy;
                }
                out[c * plane + y * ow + x] = sum * scale;
            }
        }
    }
    out
}

/// The level of `scale`, or none when it truncates to an empty image.
pub(super) fn level(img: &Image, s: f64) -> Option<Level> {
    let (w, h) = (img.width as f64, img.height as f64);
    // tf.image.resize truncates the float shape to int32.
    let (oh, ow) = ((h * s) as usize, (w * s) as usize);
    (oh > 0 && ow > 0).then(|| Level { scale: s, width: ow as u32, height: oh as u32, tensor: resize_area(img, ow, oh) })
}

fn area(r: &Row) -> f64 {
    (r[2] - r[0]) * (r[3] - r[1])
}

/// mtcnn's `smart_nms_from_bboxes` (one image): optional fresh sort by score (numpy 2's argsort,
/// reversed), then j survives when no i < j overlaps it by more than `threshold`.
fn smart_nms(mut rows: Vec<Row>, threshold: f64, min_mode: bool, initial_sort: bool) -> Vec<Row> {
    if initial_sort {
        rows = sort_desc(&rows);
    }
    let n = rows.len();
    let areas: Vec<f64> = rows.iter().map(area).collect();
    let mut keep = Vec::with_capacity(n);
    for j in 0..n {
        let b = &rows[j];
        let suppressed = (0..j).any(|i| {
            let a = &rows[i];
            let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
            let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
            let inter = iw * ih;
            let denom = if min_mode { areas[i].min(areas[j]) } else { areas[i] + areas[j] - inter };
            inter / denom > threshold
        });
        if !suppressed {
            keep.push(rows[j]);
        }
    }
    keep
}

/// `sort_by_scores(..., ascending=False)`: numpy 2's argsort (x86-simd-sort, AVX2), reversed.
fn sort_desc(rows: &[Row]) -> Vec<Row> {
    let scores: Vec<f64> = rows.iter().map(|r| r[4]).collect();
    numpy_avx2_argsort(&scores).into_iter().rev().map(|i| rows[i]).collect()
}

pub(super) fn after_pnet(levels: &[(f64, &Tensor, &Tensor)]) -> CoreResult<Vec<Row>> {
    let mut all = Vec::new();
    for &(scale, reg, prob) in levels {
        let (h, w) = (reg.dims[2], reg.dims[3]);
        let plane = h * w;
        let mut rows = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let score = prob.data[plane + i];
                if !(score > T_PNET) {
                    continue;
                }
                let d = |k: usize| reg.data[k * plane + i] as f64;
                let (ux, uy) = ((2 * x + 1) as f64, (2 * y + 1) as f64);
                let (bx, by) = ((2 * x + 12) as f64, (2 * y + 12) as f64);
                rows.push([ux + d(0) * 11.0, uy + d(1) * 11.0, bx + d(2) * 11.0, by + d(3) * 11.0, score as f64]);
            }
        }
        super::too_many(rows.len())?;
        let mut rows = sort_desc(&rows);
        for r in &mut rows {
            for v in &mut r[..4] {
                *v /= scale;
            }
        }
        all.extend(smart_nms(rows, 0.5, false, false));
    }
    super::too_many(all.len())?;
    let mut rows = smart_nms(all, 0.7, false, true);
    rows.iter_mut().for_each(square_f64);
    Ok(rows)
}

/// `tf.image.crop_and_resize(bilinear)` of every box, as fractions of the image, in float32.
pub(super) fn crops(img: &Image, boxes: &[Row], size: usize) -> Vec<f32> {
    let (iw, ih) = (img.width as usize, img.height as usize);
    let plane = size * size;
    let mut out = vec![0f32; boxes.len() * 3 * plane];
    let (hm1, wm1) = ((ih - 1) as f32, (iw - 1) as f32);
    let cm1 = (size - 1) as f32;
    let at = |x: usize, y: usize, c: usize| norm(img.data[(y * iw + x) * 3 + 2 - c]);
    for (b, r) in boxes.iter().enumerate() {
        let (y1, x1) = ((r[1] / ih as f64) as f32, (r[0] / iw as f64) as f32);
        let (y2, x2) = ((r[3] / ih as f64) as f32, (r[2] / iw as f64) as f32);
        let hsc = (y2 - y1) * hm1 / cm1;
        let wsc = (x2 - x1) * wm1 / cm1;
        let dst = &mut out[b * 3 * plane..(b + 1) * 3 * plane];
        for y in 0..size {
            let in_y = y1 * hm1 + y as f32 * hsc;
            if in_y < 0.0 || in_y > hm1 {
                continue; // extrapolation value 0
            }
            let (ty, by) = (in_y.floor() as usize, in_y.ceil() as usize);
            let yl = in_y - ty as f32;
            for x in 0..size {
                let in_x = x1 * wm1 + x as f32 * wsc;
                if in_x < 0.0 || in_x > wm1 {
                    continue;
                }
                let (lx, rx) = (in_x.floor() as usize, in_x.ceil() as usize);
                let xl = in_x - lx as f32;
                for c in 0..3 {
                    let (tl, tr) = (at(lx, ty, c), at(rx, ty, c));
                    let (bl, br) = (at(lx, by, c), at(rx, by, c));
                    let top = tl + (tr - tl) * xl;
                    let bottom = bl + (br - bl) * xl;
                    dst[c * plane + y * size + x] = top + (bottom - top) * yl;
                }
            }
        }
    }
    out
}

/// `adjust_bboxes`: `bboxes[:, 1:5] += bboxes_offsets * sizes`, offsets scaled by the +1 width and
/// height, all in float32: the offsets are the network's TensorFlow tensor, so `offsets * sizes` is
/// TensorFlow's product (the float64 sizes cast to float32), and numpy's `+=` defers to the tensor
/// (its `__array_priority__` is higher), so the sum is TensorFlow's float32 add of the box cast to
/// float32; the float32 result is stored back into the float64 array.
fn regress(r: &mut Row, d: &[f32]) {
    let w = (r[2] - r[0] + 1.0) as f32;
    let h = (r[3] - r[1] + 1.0) as f32;
    let size = [w, h, w, h];
    for k in 0..4 {
        r[k] = (r[k] as f32 + d[k] * size[k]) as f64;
    }
}

pub(super) fn after_rnet(boxes: &[Row], reg: &[f32], prob: &[f32]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let mut r = *b;
        r[4] = prob[2 * i + 1] as f64;
        regress(&mut r, &reg[4 * i..4 * i + 4]);
        if r[4] > T_RNET {
            rows.push(r);
        }
    }
    let mut rows = smart_nms(rows, 0.7, false, true);
    rows.iter_mut().for_each(square_f64);
    rows
}

pub(super) fn after_onet(width: u32, height: u32, boxes: &[Row], reg: &[f32], lms: &[f32], prob: &[f32]) -> Vec<Face> {
    // Rows carry their landmarks along (as float32, where adjust_landmarks stores them).
    let mut rows: Vec<(Row, [f32; 10])> = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let w = b[2] - b[0] + 1.0;
        let h = b[3] - b[1] + 1.0;
        let mut lm = [0f32; 10];
        for k in 0..5 {
            lm[k] = (w * lms[10 * i + k] as f64 + b[0] - 1.0) as f32;
            lm[5 + k] = (h * lms[10 * i + 5 + k] as f64 + b[1] - 1.0) as f32;
        }
        let mut r = *b;
        r[4] = prob[2 * i + 1] as f64;
        regress(&mut r, &reg[4 * i..4 * i + 4]);
        if r[4] > T_ONET {
            rows.push((r, lm));
        }
    }
    // smart_nms with the "min" overlap, after a fresh sort; the landmarks follow their box.
    let scores: Vec<f64> = rows.iter().map(|(r, _)| r[4]).collect();
    let order: Vec<usize> = numpy_avx2_argsort(&scores).into_iter().rev().collect();
    let sorted: Vec<Row> = order.iter().map(|&i| rows[i].0).collect();
    let kept = smart_nms_indices(&sorted, 0.7, true);
    let (wm1, hm1) = ((width - 1) as f64, (height - 1) as f64);
    kept.into_iter()
        .map(|k| {
            let (r, lm) = &rows[order[k]];
            // limit_bboxes: x within [0, W-1], y within [0, H-1]; landmarks are left as they are.
            let x1 = r[0].max(0.0).min(wm1);
            let y1 = r[1].max(0.0).min(hm1);
            let x2 = r[2].max(0.0).min(wm1);
            let y2 = r[3].max(0.0).min(hm1);
            let rnd = |v: f64| v.round_ties_even() as i32;
            let mut landmarks = [[0f32; 2]; 5];
            let mut ilm = [[0i32; 2]; 5];
            for p in 0..5 {
                landmarks[p] = [lm[p], lm[5 + p]];
                ilm[p] = [rnd(lm[p] as f64), rnd(lm[5 + p] as f64)];
            }
            let raw = FaceBox { x1: x1 as f32, y1: y1 as f32, x2: x2 as f32, y2: y2 as f32, score: r[4] as f32, landmarks };
            let int = IntFace { x: rnd(x1), y: rnd(y1), w: rnd(x2 - x1), h: rnd(y2 - y1), landmarks: ilm };
            Face { raw, int }
        })
        .collect()
}

/// [`smart_nms`] without the sort, as indices of the kept rows.
fn smart_nms_indices(rows: &[Row], threshold: f64, min_mode: bool) -> Vec<usize> {
    let areas: Vec<f64> = rows.iter().map(area).collect();
    (0..rows.len())
        .filter(|&j| {
            let b = &rows[j];
            !(0..j).any(|i| {
                let a = &rows[i];
                let iw = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
                let ih = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
                let inter = iw * ih;
                let denom = if min_mode { areas[i].min(areas[j]) } else { areas[i] + areas[j] - inter };
                inter / denom > threshold
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_mtcnn_build_scale_pyramid() {
        // min side 250: round(7.83) = 8 scales from 0.6 down by 0.709.
        let s = scales(300, 250);
        assert_eq!(s.len(), 8);
        assert_eq!(s[0], 0.6);
        assert!((s[7] - 0.6 * 0.709f64.powi(7)).abs() < 1e-15);
    }

    #[test]
    fn resize_area_of_a_flat_image_is_flat() {
        let img = Image::from_raw(7, 5, 3, vec![200; 7 * 5 * 3]).unwrap();
        let out = resize_area(&img, 4, 3);
        assert!(out.iter().all(|&v| (v - norm(200)).abs() < 1e-6));
    }

    #[test]
    fn regression_is_tensorflows_float32_arithmetic() {
        // mtcnn 1.0.0's adjust_bboxes on this row, run with TensorFlow 2.19 and numpy 2.1.3: the offsets
        // are a float32 tf.Tensor, so the product and (numpy deferring to the tensor) the sum are float32,
        // even where the offset is 0. In float64 x1 would be 25.365024400694338 and x2 unchanged.
        let mut r = [10.123456789, 20.0, 132.580245801345, 142.456789012345, 0.9];
        regress(&mut r, &[0.1234567, -0.05, 0.0, 0.0]);
        assert_eq!(r[..3], [25.36502456665039, 13.827159881591797, 132.5802459716797]);
        assert_eq!(r[4], 0.9);
    }

    #[test]
    fn smart_nms_suppresses_through_suppressed_boxes() {
        // b overlaps a (IoU 0.43), c overlaps b (0.43) but hardly a (0.11): greedy NMS would keep a
        // and c; mtcnn drops c as well, since any earlier box counts, kept or not.
        let a = [0.0, 0.0, 10.0, 10.0, 0.9];
        let b = [4.0, 0.0, 14.0, 10.0, 0.8];
        let c = [8.0, 0.0, 18.0, 10.0, 0.7];
        assert_eq!(smart_nms(vec![a, b, c], 0.3, false, false), vec![a]);
        assert_eq!(smart_nms(vec![a, b, c], 0.5, false, false), vec![a, b, c]);
    }
}
