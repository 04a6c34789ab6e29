//! facenet-pytorch 2.6.0's MTCNN (DeepFace's `fastmtcnn`), step by step, in float32 like torch:
//! - pyramid: scales `0.6 · 0.709^k` while `min(H, W) · 0.6 · 0.709^k >= 12` (float64, Python);
//!   level size `int(H·s + 1) × int(W·s + 1)`; pixels resampled with `interpolate(mode="area")`, i.e.
//!   adaptive average pooling over `[floor(i·in/out), ceil((i+1)·in/out))`, then `(x - 127.5) / 128`;
//! - PNet cells with probability `>= 0.6` become boxes `floor((2c + 1) / s), floor((2c + 12) / s)`;
//! - suppression is torchvision's `batched_nms` (greedy, areas without +1, drop when IoU > t): per
//!   level at 0.5, all levels at 0.7, after RNet at 0.7; its kernel sorts the scores stably (ties in
//!   index order), and past 1,000 boxes the kept ones are re-sorted the way torchvision's per-class
//!   ("vanilla") path does, with torch's unstable sort (libstdc++ `std::sort`);
//!   then facenet-pytorch's own numpy NMS ("Min" overlap, +1 areas, kept when overlap <= 0.7) after ONet;
//! - regression: after PNet without +1, after RNet/ONet with +1; boxes squared ("rerec");
//! - crops are the part of the truncated box inside the image (no padding), pooled to 24 or 48;
//! - faces come out largest first (numpy argsort of the areas, reversed); DeepFace truncates with int().

use super::sorts::{numpy_argsort, torch_sort_desc, torch_stable_sort_desc};
use super::{Face, Level, Row};
use crate::detect::{FaceBox, IntFace, Tensor};
use crate::error::CoreResult;
use crate::pixels::Image;

const FACTOR: f64 = 0.709;
const T_PNET: f32 = 0.6;
const T_RNET: f32 = 0.7;
const T_ONET: f32 = 0.7;
/// torchvision's batched_nms switches to its per-class loop past 4,000 box coordinates on the CPU.
const VANILLA_ABOVE: usize = 1000;

pub(super) fn scales(width: u32, height: u32) -> Vec<f64> {
    let m = 12.0 / 20.0;
    let mut minl = width.min(height) as f64 * m;
    let mut s = m;
    let mut out = Vec::new();
    while minl >= 12.0 {
        out.push(s);
        s *= FACTOR;
        minl *= FACTOR;
    }
    out
}

/// `[floor(i·n/out), ceil((i+1)·n/out))` for each output index: torch's adaptive pooling windows.
fn windows(n: usize, out: usize) -> Vec<(usize, usize)> {
    (0..out).map(|i| ((i * n) / out, ((i + 1) * n).div_ceil(out))).collect()
}

/// Adaptive average pooling of the region `[x0, x0+w) × [y0, y0+h)` of the BGR image to `ow × oh`,
/// written NCHW RGB after facenet-pytorch's normalisation, into `out`.
fn pool_region(img: &Image, x0: usize, y0: usize, w: usize, h: usize, ow: usize, oh: usize, out: &mut [f32]) {
    let iw = img.width as usize;
    let plane = ow * oh;
    let xs = windows(w, ow);
    let ys = windows(h, oh);
    for (oy, &(ya, yb)) in ys.iter().enumerate() {
        for (ox, &(xa, xb)) in xs.iter().enumerate() {
            let mut sum = [0f32; 3];
            for y in ya..yb {
                let row = (y0 + y) * iw;
                for x in xa..xb {
                    let p = (row + x0 + x) * 3;
                    sum[0] += img.data[p + 2] as f32;
                    sum[1] += img.data[p + 1] as f32;
                    sum[2] += img.data[p] as f32;
                }
            }
            let (kh, kw) = ((yb - ya) as f32, (xb - xa) as f32);
            for c in 0..3 {
                out[c * plane + oy * ow + ox] = (sum[c] / kh / kw - 127.5) * 0.0078125;
            }
        }
    }
}

/// The level of `scale` (facenet-pytorch's `int(h * s + 1)` sizes are never empty).
pub(super) fn level(img: &Image, s: f64) -> Option<Level> {
    let (w, h) = (img.width as f64, img.height as f64);
    let (oh, ow) = ((h * s + 1.0) as usize, (w * s + 1.0) as usize);
    let mut tensor = vec![0f32; 3 * oh * ow];
    pool_region(img, 0, 0, img.width as usize, img.height as usize, ow, oh, &mut tensor);
    Some(Level { scale: s, width: ow as u32, height: oh as u32, tensor })
}

/// A candidate: box, score and the regression it carries until it is applied.
#[derive(Clone, Copy)]
struct Cand {
    b: [f32; 4],
    score: f32,
    reg: [f32; 4],
}

/// torchvision's `nms`: indices kept, in descending score order. Its CPU kernel (torchvision 0.17,
/// csrc/ops/cpu/nms_kernel.cpp) sorts the scores with `sort(/*stable=*/true, 0, /*descending=*/true)`:
/// tied scores in index order.
fn nms(c: &[Cand], iou: f64) -> Vec<usize> {
    let scores: Vec<f32> = c.iter().map(|x| x.score).collect();
    let order = torch_stable_sort_desc(&scores);
    let areas: Vec<f32> = c.iter().map(|x| (x.b[2] - x.b[0]) * (x.b[3] - x.b[1])).collect();
    let mut suppressed = vec![false; c.len()];
    let mut keep = Vec::new();
    for (oi, &i) in order.iter().enumerate() {
        if suppressed[i] {
            continue;
        }
        keep.push(i);
        let a = &c[i].b;
        for &j in &order[oi + 1..] {
            if suppressed[j] {
                continue;
            }
            let b = &c[j].b;
            let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
            let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
            let inter = w * h;
            let ovr = inter / (areas[i] + areas[j] - inter);
            if ovr as f64 > iou {
                suppressed[j] = true;
            }
        }
    }
    keep
}

/// torchvision's `batched_nms` for one image.
fn batched_nms(c: &[Cand], iou: f64) -> Vec<usize> {
    let keep = nms(c, iou);
    if c.len() <= VANILLA_ABOVE {
        return keep;
    }
    // The per-class path: the kept indices in ascending order, re-sorted by score.
    let mut kept = keep;
    kept.sort_unstable();
    let scores: Vec<f32> = kept.iter().map(|&i| c[i].score).collect();
    torch_sort_desc(&scores).into_iter().map(|k| kept[k]).collect()
}

fn rerec(b: &mut [f32; 4]) {
    let h = b[3] - b[1];
    let w = b[2] - b[0];
    let l = w.max(h);
    b[0] = b[0] + w * 0.5 - l * 0.5;
    b[1] = b[1] + h * 0.5 - l * 0.5;
    b[2] = b[0] + l;
    b[3] = b[1] + l;
}

/// `bbreg`: offsets scaled by the +1 width and height.
fn bbreg(b: &mut [f32; 4], d: &[f32]) {
    let w = b[2] - b[0] + 1.0;
    let h = b[3] - b[1] + 1.0;
    let n = [b[0] + d[0] * w, b[1] + d[1] * h, b[2] + d[2] * w, b[3] + d[3] * h];
    *b = n;
}

fn to_row(b: &[f32; 4], score: f32) -> Row {
    [b[0] as f64, b[1] as f64, b[2] as f64, b[3] as f64, score as f64]
}

fn from_row(r: &Row) -> [f32; 4] {
    [r[0] as f32, r[1] as f32, r[2] as f32, r[3] as f32]
}

pub(super) fn after_pnet(_width: u32, _height: u32, levels: &[(f64, &Tensor, &Tensor)]) -> CoreResult<Vec<Row>> {
    let mut all: Vec<Cand> = Vec::new();
    for &(scale, reg, prob) in levels {
        let (h, w) = (reg.dims[2], reg.dims[3]);
        let plane = h * w;
        let s = scale as f32;
        let mut cands = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let score = prob.data[plane + i];
                if !(score >= T_PNET) {
                    continue;
                }
                let (bx, by) = (x as f32, y as f32);
                let b = [((2.0 * bx + 1.0) / s).floor(), ((2.0 * by + 1.0) / s).floor(), ((2.0 * bx + 12.0) / s).floor(), ((2.0 * by + 12.0) / s).floor()];
                let reg = [reg.data[i], reg.data[plane + i], reg.data[2 * plane + i], reg.data[3 * plane + i]];
                cands.push(Cand { b, score, reg });
            }
        }
        super::too_many(cands.len())?;
        for k in batched_nms(&cands, 0.5) {
            all.push(cands[k]);
        }
    }
    super::too_many(all.len())?;
    Ok(batched_nms(&all, 0.7)
        .into_iter()
        .map(|k| {
            let c = &all[k];
            let (regw, regh) = (c.b[2] - c.b[0], c.b[3] - c.b[1]);
            let mut b = [c.b[0] + c.reg[0] * regw, c.b[1] + c.reg[1] * regh, c.b[2] + c.reg[2] * regw, c.b[3] + c.reg[3] * regh];
            rerec(&mut b);
            to_row(&b, c.score)
        })
        .collect())
}

pub(super) fn crops(img: &Image, boxes: &[Row], size: usize) -> Vec<f32> {
    let (w, h) = (img.width as i64, img.height as i64);
    let per = 3 * size * size;
    let mut out = vec![0f32; boxes.len() * per];
    for (k, r) in boxes.iter().enumerate() {
        // pad(): truncated to int32, clamped to [1, W] and [1, H] (1-based corners).
        let t = |v: f64| (v as f32).trunc() as i64;
        let (x, y) = (t(r[0]).max(1), t(r[1]).max(1));
        let (ex, ey) = (t(r[2]).min(w), t(r[3]).min(h));
        if ey > y - 1 && ex > x - 1 {
            let (x0, y0) = ((x - 1) as usize, (y - 1) as usize);
            let (cw, ch) = ((ex - x + 1) as usize, (ey - y + 1) as usize);
            pool_region(img, x0, y0, cw, ch, size, size, &mut out[k * per..(k + 1) * per]);
        }
    }
    out
}

pub(super) fn after_rnet(boxes: &[Row], reg: &[f32], prob: &[f32]) -> Vec<Row> {
    let cands: Vec<Cand> = boxes
        .iter()
        .enumerate()
        .filter(|(i, _)| prob[2 * i + 1] > T_RNET)
        .map(|(i, r)| Cand { b: from_row(r), score: prob[2 * i + 1], reg: [reg[4 * i], reg[4 * i + 1], reg[4 * i + 2], reg[4 * i + 3]] })
        .collect();
    batched_nms(&cands, 0.7)
        .into_iter()
        .map(|k| {
            let c = &cands[k];
            let mut b = c.b;
            bbreg(&mut b, &c.reg);
            rerec(&mut b);
            to_row(&b, c.score)
        })
        .collect()
}

pub(super) fn after_onet(boxes: &[Row], reg: &[f32], lms: &[f32], prob: &[f32]) -> Vec<Face> {
    let mut faces: Vec<([f32; 4], f32, [[f32; 2]; 5])> = Vec::new();
    for (i, r) in boxes.iter().enumerate() {
        let score = prob[2 * i + 1];
        if !(score > T_ONET) {
            continue;
        }
        let mut b = from_row(r);
        let (wi, hi) = (b[2] - b[0] + 1.0, b[3] - b[1] + 1.0);
        let mut pts = [[0f32; 2]; 5];
        for (p, pt) in pts.iter_mut().enumerate() {
            *pt = [wi * lms[10 * i + p] + b[0] - 1.0, hi * lms[10 * i + 5 + p] + b[1] - 1.0];
        }
        bbreg(&mut b, &reg[4 * i..4 * i + 4]);
        faces.push((b, score, pts));
    }
    // facenet-pytorch's nms_numpy, "Min": argsort of the scores, best (last) first, keep overlaps <= 0.7.
    let area = |b: &[f32; 4]| (b[2] - b[0] + 1.0) * (b[3] - b[1] + 1.0);
    let scores: Vec<f64> = faces.iter().map(|f| f.1 as f64).collect();
    let mut order = numpy_argsort(&scores);
    let mut pick = Vec::new();
    while let Some(&i) = order.last() {
        pick.push(i);
        let rest = &order[..order.len() - 1];
        let a = &faces[i].0;
        order = rest
            .iter()
            .copied()
            .filter(|&j| {
                let b = &faces[j].0;
                let w = (a[2].min(b[2]) - a[0].max(b[0]) + 1.0).max(0.0);
                let h = (a[3].min(b[3]) - a[1].max(b[1]) + 1.0).max(0.0);
                w * h / area(a).min(area(b)) <= 0.7f32
            })
            .collect();
    }
    // MTCNN.detect(select_largest=True): largest box first (numpy argsort of float32 areas, reversed).
    let areas: Vec<f64> = pick.iter().map(|&i| {
        let b = &faces[i].0;
        ((b[2] - b[0]) * (b[3] - b[1])) as f64
    }).collect();
    numpy_argsort(&areas)
        .into_iter()
        .rev()
        .map(|k| {
            let (b, score, pts) = &faces[pick[k]];
            let t = |v: f32| v as i32;
            let mut ilm = [[0i32; 2]; 5];
            for (o, p) in ilm.iter_mut().zip(pts.iter()) {
                *o = [t(p[0]), t(p[1])];
            }
            let raw = FaceBox { x1: b[0], y1: b[1], x2: b[2], y2: b[3], score: *score, landmarks: *pts };
            let int = IntFace { x: t(b[0]), y: t(b[1]), w: t(b[2] - b[0]), h: t(b[3] - b[1]), landmarks: ilm };
            Face { raw, int }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nms_keeps_tied_scores_in_index_order_as_torchvision_does() {
        // Forty boxes apart from each other, scores 1.0 and 0.9 (PNet's saturated softmax ties this
        // way): torchvision 0.17's CPU nms sorts stably, so each score's boxes come back in index order
        // (tools/reference/mtcnn_sort_orders.py records the same through nms itself). torch's unstable
        // sort (std::sort) scrambles the ties past 16 elements.
        let c: Vec<Cand> = (0..40)
            .map(|i| {
                let x = 20.0 * i as f32;
                Cand { b: [x, 0.0, x + 10.0, 10.0], score: if i % 3 == 0 { 0.9 } else { 1.0 }, reg: [0.0; 4] }
            })
            .collect();
        let want: Vec<usize> = (0..40).filter(|i| i % 3 != 0).chain((0..40).filter(|i| i % 3 == 0)).collect();
        assert_eq!(nms(&c, 0.5), want);
    }

    #[test]
    fn scales_stop_below_twelve_pixels() {
        let s = scales(250, 300);
        // 250 · 0.6 = 150 -> 150·0.709^k >= 12 for k <= 7.
        assert_eq!(s.len(), 8);
        assert_eq!(s[0], 0.6);
    }

    #[test]
    fn adaptive_windows_cover_the_input() {
        assert_eq!(windows(5, 3), vec![(0, 2), (1, 4), (3, 5)]);
        assert_eq!(windows(3, 5), vec![(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]);
    }

    #[test]
    fn greedy_nms_keeps_what_a_suppressed_box_overlapped() {
        let c = |x: f32, s: f32| Cand { b: [x, 0.0, x + 10.0, 10.0], score: s, reg: [0.0; 4] };
        // a-b IoU 0.43 > 0.3, b-c 0.43, a-c 0.11: greedy keeps a and c.
        let cands = [c(0.0, 0.9), c(4.0, 0.8), c(8.0, 0.7)];
        assert_eq!(nms(&cands, 0.3), vec![0, 2]);
    }
}
