//! RetinaFace pre- and post-processing for two weight sets:
//! - `MobileNet`: biubug6's MobileNet-0.25 (PyTorch, converted to ONNX by
//!   models/converters/retinaface_mobilenet_to_onnx.py): prior boxes + variance decoding.
//! - `Resnet50`: DeepFace's insightface R50 (`retinaface.h5`, serengil/retinaface): base anchors per
//!   stride, `bbox_pred` with the +1 width convention and clipping, `landmark_pred`.
//!
//! Both use DeepFace's threshold 0.9 and NMS IoU 0.4 and cv2 INTER_LINEAR (fx = fy) scaling.
//! The scale differs ([`ScaleRule`]): ResNet-50 uses serengil's rule (`1024/min(H,W)`, capped so
//! that `round(s*max(H,W)) <= 1980`). The MobileNet weights we have are from biubug6's
//! Face-Detector-1MB-with-landmark, trained on 300-px crops with anchors of at most 256 px: at
//! serengil's ~1024-px scale large faces fall outside its anchors and it misses or multiplies them
//! (13 DeepFace portraits with DeepFace's border: 17 wrong face counts with that rule vs 1 at a
//! 320-px long side), so its detector defaults to [`ScaleRule::LongSide`] 320.

use crate::pixels::{resize_factor, Image, Interpolation};
use super::nms::nms_plus_one;
use super::{FaceBox, Tensor};
use crate::error::{CoreError, CoreResult};

pub const DEFAULT_THRESHOLD: f32 = 0.9;
pub const DEFAULT_NMS_IOU: f32 = 0.4;
const TARGET_SIZE: f64 = 1024.0;
const MAX_SIZE: f64 = 1980.0;
/// biubug6 cfg_mnet: BGR mean subtracted before the network.
pub const MOBILENET_MEAN_BGR: [f32; 3] = [104.0, 117.0, 123.0];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// NCHW float32, BGR minus (104,117,123).
    MobileNet,
    /// NHWC float32, RGB 0..255 (what the Keras model of `retinaface.h5` takes).
    Resnet50,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleRule {
    /// serengil/retinaface `resize_image` (DeepFace's ResNet-50).
    Serengil,
    /// Scale (up or down) so that the long side is this many pixels.
    LongSide(u32),
}

pub const MOBILENET_DEFAULT_LONG_SIDE: u32 = 320;

impl ScaleRule {
    pub fn scale(self, width: u32, height: u32) -> f64 {
        match self {
            ScaleRule::Serengil => im_scale(width, height),
            ScaleRule::LongSide(n) => n as f64 / width.max(height) as f64,
        }
    }
}

/// serengil/retinaface `resize_image` with allow_upscaling=True.
pub fn im_scale(width: u32, height: u32) -> f64 {
    let (mn, mx) = (width.min(height) as f64, width.max(height) as f64);
    let mut s = TARGET_SIZE / mn;
    if (s * mx).round_ties_even() > MAX_SIZE {
        s = MAX_SIZE / mx;
    }
    s
}

pub struct Prepared {
    pub tensor: Vec<f32>,
    /// Size of the network input (the resized image).
    pub width: u32,
    pub height: u32,
    pub scale: f64,
}

pub fn prepare(img: &Image, variant: Variant, rule: ScaleRule) -> CoreResult<Prepared> {
    if img.channels != 3 || img.width == 0 || img.height == 0 || img.data.len() != img.stride() * img.height as usize {
        return Err(CoreError::invalid_image("retinaface expects a non-empty 3-channel BGR image"));
    }
    if let ScaleRule::LongSide(n) = rule {
        if !(16..=8192).contains(&n) {
            return Err(CoreError::invalid_request("retinaface: long side must be 16..8192"));
        }
    }
    let scale = rule.scale(img.width, img.height);
    let resized;
    let src = if scale != 1.0 {
        resized = resize_factor(img, scale, scale, Interpolation::Linear)?;
        &resized
    } else {
        img
    };
    let (w, h) = (src.width as usize, src.height as usize);
    let mut tensor = vec![0f32; w * h * 3];
    match variant {
        Variant::MobileNet => {
            let plane = w * h;
            for (i, px) in src.data.chunks_exact(3).enumerate() {
                for c in 0..3 {
                    tensor[c * plane + i] = px[c] as f32 - MOBILENET_MEAN_BGR[c];
                }
            }
        }
        Variant::Resnet50 => {
            for (i, px) in src.data.chunks_exact(3).enumerate() {
                tensor[i * 3] = px[2] as f32;
                tensor[i * 3 + 1] = px[1] as f32;
                tensor[i * 3 + 2] = px[0] as f32;
            }
        }
    }
    Ok(Prepared { tensor, width: w as u32, height: h as u32, scale })
}

/// biubug6 PriorBox: per level `ceil(H/step) x ceil(W/step)` cells, two sizes per cell,
/// `[cx, cy, w, h]` normalised to the input size. The sizes are those the weights were trained with:
/// Face-Detector-1MB-with-landmark's cfg_mnet ([[10,20],[32,64],[128,256]]), not
/// Pytorch_Retinaface's ([[16,32],[64,128],[256,512]]), which decodes these weights' deltas against
/// the wrong anchors (boxes land off the face).
pub fn mobilenet_priors(width: u32, height: u32) -> Vec<[f32; 4]> {
    const MIN_SIZES: [[f32; 2]; 3] = [[10.0, 20.0], [32.0, 64.0], [128.0, 256.0]];
    const STEPS: [u32; 3] = [8, 16, 32];
    let (wf, hf) = (width as f32, height as f32);
    let mut out = Vec::new();
    for (k, &step) in STEPS.iter().enumerate() {
        let fh = height.div_ceil(step);
        let fw = width.div_ceil(step);
        for i in 0..fh {
            for j in 0..fw {
                for &ms in &MIN_SIZES[k] {
                    let cx = (j as f32 + 0.5) * step as f32 / wf;
                    let cy = (i as f32 + 0.5) * step as f32 / hf;
                    out.push([cx, cy, ms / wf, ms / hf]);
                }
            }
        }
    }
    out
}

fn finish(mut cands: Vec<FaceBox>, iou: f32) -> Vec<FaceBox> {
    let boxes: Vec<[f32; 4]> = cands.iter().map(|f| [f.x1, f.y1, f.x2, f.y2]).collect();
    let scores: Vec<f32> = cands.iter().map(|f| f.score).collect();
    let keep = nms_plus_one(&boxes, &scores, iou);
    let mut out = Vec::with_capacity(keep.len());
    for i in keep {
        out.push(std::mem::take(&mut cands[i]));
    }
    out
}

fn check_params(width: u32, height: u32, scale: f64, threshold: f32, iou: f32) -> CoreResult<()> {
    if width == 0 || height == 0 || !(scale.is_finite() && scale > 0.0) || !threshold.is_finite() || !iou.is_finite() {
        return Err(CoreError::invalid_request("retinaface decode: bad input size, scale or thresholds"));
    }
    Ok(())
}

/// Decodes the MobileNet-0.25 outputs `loc [1,N,4]`, `conf [1,N,2]` (softmaxed), `landms [1,N,10]`
/// for an input of `width x height`, mapping back to the original image by `1/scale`.
pub fn decode_mobilenet(loc: &Tensor, conf: &Tensor, landms: &Tensor, width: u32, height: u32, scale: f64, threshold: f32, iou: f32) -> CoreResult<Vec<FaceBox>> {
    check_params(width, height, scale, threshold, iou)?;
    let priors = mobilenet_priors(width, height);
    let n = priors.len();
    loc.expect_shape(&[1, n, 4], "loc")?;
    conf.expect_shape(&[1, n, 2], "conf")?;
    landms.expect_shape(&[1, n, 10], "landms")?;
    const V0: f32 = 0.1;
    const V1: f32 = 0.2;
    let (wf, hf) = (width as f32, height as f32);
    let inv = (1.0 / scale) as f32;
    let mut cands = Vec::new();
    for (p, pr) in priors.iter().enumerate() {
        let score = conf.data[p * 2 + 1];
        // NaN never passes.
        if !(score >= threshold) {
            continue;
        }
        let l = &loc.data[p * 4..p * 4 + 4];
        let cx = pr[0] + l[0] * V0 * pr[2];
        let cy = pr[1] + l[1] * V0 * pr[3];
        let bw = pr[2] * (l[2] * V1).exp();
        let bh = pr[3] * (l[3] * V1).exp();
        let x1 = cx - bw / 2.0;
        let y1 = cy - bh / 2.0;
        let mut lm = [[0f32; 2]; 5];
        let d = &landms.data[p * 10..p * 10 + 10];
        for k in 0..5 {
            lm[k] = [(pr[0] + d[2 * k] * V0 * pr[2]) * wf * inv, (pr[1] + d[2 * k + 1] * V0 * pr[3]) * hf * inv];
        }
        cands.push(FaceBox { x1: x1 * wf * inv, y1: y1 * hf * inv, x2: (x1 + bw) * wf * inv, y2: (y1 + bh) * hf * inv, score, landmarks: lm });
    }
    Ok(finish(cands, iou))
}

/// serengil/retinaface base anchors `[x1,y1,x2,y2]` per stride.
pub fn resnet_base_anchors(stride: u32) -> Option<[[f32; 4]; 2]> {
    match stride {
        32 => Some([[-248.0, -248.0, 263.0, 263.0], [-120.0, -120.0, 135.0, 135.0]]),
        16 => Some([[-56.0, -56.0, 71.0, 71.0], [-24.0, -24.0, 39.0, 39.0]]),
        8 => Some([[-8.0, -8.0, 23.0, 23.0], [0.0, 0.0, 15.0, 15.0]]),
        _ => None,
    }
}

/// One FPN level of the ResNet-50 model, NHWC as the Keras graph returns them:
/// `cls [1,H,W,4]` (bg for both anchors, then fg for both), `bbox [1,H,W,8]`, `landmark [1,H,W,20]`.
pub struct ResnetLevel<'a> {
    pub stride: u32,
    pub cls: &'a Tensor,
    pub bbox: &'a Tensor,
    pub landmark: &'a Tensor,
}

/// serengil/retinaface `detect_faces` after the forward pass. `width x height` is the network input
/// (the resized image): boxes are clipped to it before scaling back by `1/scale`.
pub fn decode_resnet(levels: &[ResnetLevel<'_>], width: u32, height: u32, scale: f64, threshold: f32, iou: f32) -> CoreResult<Vec<FaceBox>> {
    check_params(width, height, scale, threshold, iou)?;
    if levels.is_empty() {
        return Err(CoreError::invalid_request("retinaface decode: no output levels"));
    }
    const A: usize = 2;
    let mut cands = Vec::new();
    for lv in levels {
        let base = resnet_base_anchors(lv.stride).ok_or_else(|| CoreError::invalid_request(format!("retinaface decode: unsupported stride {}", lv.stride)))?;
        let d = &lv.bbox.dims;
        if d.len() != 4 || d[0] != 1 {
            return Err(CoreError::invalid_request("retinaface decode: bbox output must be [1,H,W,8]"));
        }
        let (fh, fw) = (d[1], d[2]);
        lv.cls.expect_shape(&[1, fh, fw, 2 * A], "cls")?;
        lv.bbox.expect_shape(&[1, fh, fw, 4 * A], "bbox")?;
        lv.landmark.expect_shape(&[1, fh, fw, 10 * A], "landmark")?;
        let s = lv.stride as f32;
        for h in 0..fh {
            for w in 0..fw {
                let cell = h * fw + w;
                for a in 0..A {
                    let score = lv.cls.data[cell * 2 * A + A + a];
                    if !(score >= threshold) {
                        continue;
                    }
                    let an = base[a];
                    let ax1 = an[0] + w as f32 * s;
                    let ay1 = an[1] + h as f32 * s;
                    let ax2 = an[2] + w as f32 * s;
                    let ay2 = an[3] + h as f32 * s;
                    let aw = ax2 - ax1 + 1.0;
                    let ah = ay2 - ay1 + 1.0;
                    let cx = ax1 + 0.5 * (aw - 1.0);
                    let cy = ay1 + 0.5 * (ah - 1.0);
                    let bd = &lv.bbox.data[(cell * A + a) * 4..(cell * A + a) * 4 + 4];
                    let pcx = bd[0] * aw + cx;
                    let pcy = bd[1] * ah + cy;
                    let pw = bd[2].exp() * aw;
                    let ph = bd[3].exp() * ah;
                    let xmax = width as f32 - 1.0;
                    let ymax = height as f32 - 1.0;
                    let clip = |v: f32, m: f32| v.min(m).max(0.0);
                    let inv = (1.0 / scale) as f32;
                    let x1 = clip(pcx - 0.5 * (pw - 1.0), xmax) * inv;
                    let y1 = clip(pcy - 0.5 * (ph - 1.0), ymax) * inv;
                    let x2 = clip(pcx + 0.5 * (pw - 1.0), xmax) * inv;
                    let y2 = clip(pcy + 0.5 * (ph - 1.0), ymax) * inv;
                    let ld = &lv.landmark.data[(cell * A + a) * 10..(cell * A + a) * 10 + 10];
                    let mut lm = [[0f32; 2]; 5];
                    for k in 0..5 {
                        lm[k] = [(ld[2 * k] * aw + cx) * inv, (ld[2 * k + 1] * ah + cy) * inv];
                    }
                    cands.push(FaceBox { x1, y1, x2, y2, score, landmarks: lm });
                }
            }
        }
    }
    Ok(finish(cands, iou))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(dims: &[usize], data: Vec<f32>) -> Tensor {
        Tensor::new(dims.to_vec(), data).unwrap()
    }

    #[test]
    fn scale_rule_matches_serengil() {
        assert_eq!(im_scale(1024, 768), 1024.0 / 768.0);
        // 500x100: 1024/100*500 = 5120 > 1980 → capped by the long side.
        assert_eq!(im_scale(500, 100), 1980.0 / 500.0);
        assert_eq!(im_scale(2048, 2048), 0.5);
    }

    #[test]
    fn prepare_layouts() {
        // 1024x1024 so that no resize happens.
        let mut img = Image::new(1024, 1024, 3);
        img.data[0] = 10; // B
        img.data[1] = 20; // G
        img.data[2] = 30; // R
        let m = prepare(&img, Variant::MobileNet, ScaleRule::Serengil).unwrap();
        assert_eq!((m.width, m.height, m.scale), (1024, 1024, 1.0));
        let plane = 1024 * 1024;
        assert_eq!([m.tensor[0], m.tensor[plane], m.tensor[2 * plane]], [10.0 - 104.0, 20.0 - 117.0, 30.0 - 123.0]);
        let r = prepare(&img, Variant::Resnet50, ScaleRule::Serengil).unwrap();
        assert_eq!(&r.tensor[0..3], &[30.0, 20.0, 10.0]);
        assert!(prepare(&Image::new(4, 4, 1), Variant::MobileNet, ScaleRule::Serengil).is_err());
        let small = prepare(&Image::new(100, 50, 3), Variant::MobileNet, ScaleRule::Serengil).unwrap();
        assert_eq!((small.width, small.height), (1980, 990));
        let ls = prepare(&Image::new(640, 427, 3), Variant::MobileNet, ScaleRule::LongSide(320)).unwrap();
        assert_eq!((ls.width, ls.height, ls.scale), (320, 214, 0.5));
        assert!(prepare(&img, Variant::MobileNet, ScaleRule::LongSide(0)).is_err());
    }

    #[test]
    fn priors_count_and_first() {
        let p = mobilenet_priors(64, 32);
        assert_eq!(p.len(), 2 * (8 * 4 + 4 * 2 + 2 * 1));
        assert_eq!(p[0], [4.0 / 64.0, 4.0 / 32.0, 10.0 / 64.0, 10.0 / 32.0]);
        assert_eq!(p[1][2], 20.0 / 64.0);
        // First prior of the stride-32 level: 128 px, centre 16.
        let last_level = 2 * (8 * 4 + 4 * 2);
        assert_eq!(p[last_level], [16.0 / 64.0, 16.0 / 32.0, 128.0 / 64.0, 128.0 / 32.0]);
        // ceil for sizes not divisible by the step
        assert_eq!(mobilenet_priors(65, 33).len(), 2 * (9 * 5 + 5 * 3 + 3 * 2));
    }

    fn mobilenet_zero(w: u32, h: u32) -> (Tensor, Tensor, Tensor, usize) {
        let n = mobilenet_priors(w, h).len();
        (t(&[1, n, 4], vec![0.0; n * 4]), t(&[1, n, 2], vec![0.0; n * 2]), t(&[1, n, 10], vec![0.0; n * 10]), n)
    }

    #[test]
    fn mobilenet_decodes_a_known_box() {
        let (w, h) = (64u32, 64u32);
        let (mut loc, mut conf, mut lm, _) = mobilenet_zero(w, h);
        // Prior 0: cell (0,0) stride 8, centre (4,4), size 10. Shift centre by +1 prior-width*0.1
        // → +1 px, double the width: exp(dw*0.2)=2 → dw = ln2/0.2.
        loc.data[0] = 1.0;
        loc.data[2] = (2f32).ln() / 0.2;
        conf.data[1] = 0.95;
        lm.data[0] = 1.0; // right eye x: 4 + 1
        lm.data[9] = -1.0; // mouth left y: 4 - 1
        // A weaker overlapping duplicate and a below-threshold one.
        conf.data[3] = 0.93; // prior 1: same centre, size 20
        conf.data[5] = 0.5;
        let scale = 2.0;
        let faces = decode_mobilenet(&loc, &conf, &lm, w, h, scale, 0.9, 0.6).unwrap();
        assert_eq!(faces.len(), 2, "{faces:?}");
        let f = &faces[0];
        assert_eq!(f.score, 0.95);
        let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
        // centre 5, width 20 → x1 = -5, x2 = 15; y 4±5; all halved by scale 2.
        assert!(close(f.x1, -5.0 / 2.0) && close(f.x2, 15.0 / 2.0), "{f:?}");
        assert!(close(f.y1, -1.0 / 2.0) && close(f.y2, 9.0 / 2.0));
        assert!(close(f.landmarks[0][0], 5.0 / 2.0) && close(f.landmarks[4][1], 3.0 / 2.0));
        // Prior 1 (20x20 at 4,4 → -6..14) overlaps the first (in scaled-back px, +1 convention)
        // with IoU ~0.51.
        assert_eq!(faces[1].score, 0.93);
        let strict = decode_mobilenet(&loc, &conf, &lm, w, h, scale, 0.9, 0.4).unwrap();
        assert_eq!(strict.len(), 1);
        assert_eq!(strict[0].score, 0.95);
        let none = decode_mobilenet(&loc, &conf, &lm, w, h, scale, 0.96, 0.4).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn mobilenet_rejects_wrong_shapes() {
        let (loc, conf, lm, n) = mobilenet_zero(64, 64);
        let bad = t(&[1, n - 1, 4], vec![0.0; (n - 1) * 4]);
        assert!(decode_mobilenet(&bad, &conf, &lm, 64, 64, 1.0, 0.9, 0.4).is_err());
        assert!(decode_mobilenet(&loc, &conf, &lm, 64, 32, 1.0, 0.9, 0.4).is_err());
        assert!(decode_mobilenet(&loc, &conf, &lm, 64, 64, 0.0, 0.9, 0.4).is_err());
        assert!(Tensor::new(vec![1, 2, 3], vec![0.0; 5]).is_err());
    }

    struct Lv {
        cls: Tensor,
        bbox: Tensor,
        lmk: Tensor,
    }

    fn resnet_level(fh: usize, fw: usize) -> Lv {
        Lv { cls: t(&[1, fh, fw, 4], vec![0.0; fh * fw * 4]), bbox: t(&[1, fh, fw, 8], vec![0.0; fh * fw * 8]), lmk: t(&[1, fh, fw, 20], vec![0.0; fh * fw * 20]) }
    }

    #[test]
    fn resnet_decodes_known_boxes_with_plus_one_and_clipping() {
        // Input 64x64: stride 32 → 2x2, 16 → 4x4, 8 → 8x8.
        let mut l32 = resnet_level(2, 2);
        let l16 = resnet_level(4, 4);
        let mut l8 = resnet_level(8, 8);
        // stride 8, cell (h=2,w=3), anchor 1 = [0,0,15,15] + (24,16) → [24,16,39,31], width 16,
        // centre (31.5, 23.5). Zero deltas give the anchor back.
        let cell = 2 * 8 + 3;
        l8.cls.data[cell * 4 + 3] = 0.97;
        // Background channel for anchor 1 set high: must be ignored (second half only).
        l8.cls.data[cell * 4 + 1] = 0.99;
        // Landmark 2 (nose) at +0.5 width → 31.5 + 8 = 39.5.
        l8.lmk.data[(cell * 2 + 1) * 10 + 4] = 0.5;
        // stride 32, cell (0,0), anchor 0 = [-248,-248,263,263]: clipped to [0,0,63,63].
        l32.cls.data[2] = 0.91;
        // A lower-scoring duplicate of the stride-8 box at stride 8, cell (2,3) anchor 0
        // ([-8,-8,23,23]+(24,16) = [16,8,47,39]): IoU with [24,16,39,31] = 256/1024 < 0.4 → kept.
        l8.cls.data[cell * 4 + 2] = 0.905;
        let levels = [
            ResnetLevel { stride: 32, cls: &l32.cls, bbox: &l32.bbox, landmark: &l32.lmk },
            ResnetLevel { stride: 16, cls: &l16.cls, bbox: &l16.bbox, landmark: &l16.lmk },
            ResnetLevel { stride: 8, cls: &l8.cls, bbox: &l8.bbox, landmark: &l8.lmk },
        ];
        let faces = decode_resnet(&levels, 64, 64, 0.5, 0.9, 0.4).unwrap();
        assert_eq!(faces.len(), 3, "{faces:?}");
        assert_eq!(faces[0].score, 0.97);
        // Scale-back: divided by 0.5.
        assert_eq!([faces[0].x1, faces[0].y1, faces[0].x2, faces[0].y2], [48.0, 32.0, 78.0, 62.0]);
        assert_eq!(faces[0].landmarks[2], [79.0, 47.0]);
        assert_eq!(faces[0].landmarks[0], [63.0, 47.0]);
        assert_eq!([faces[1].x1, faces[1].y1, faces[1].x2, faces[1].y2], [0.0, 0.0, 126.0, 126.0]);
        assert_eq!(faces[1].score, 0.91);
        assert_eq!([faces[2].x1, faces[2].y1, faces[2].x2, faces[2].y2], [32.0, 16.0, 94.0, 78.0]);
        // NMS 0.2 drops the duplicate (IoU 0.25) but not the clipped big box (IoU 256/4096).
        let faces = decode_resnet(&levels, 64, 64, 0.5, 0.9, 0.2).unwrap();
        assert_eq!(faces.iter().map(|f| f.score).collect::<Vec<_>>(), vec![0.97, 0.91]);
        // Threshold is inclusive (>=).
        let faces = decode_resnet(&levels, 64, 64, 1.0, 0.97, 0.4).unwrap();
        assert_eq!(faces.len(), 1);
    }

    #[test]
    fn resnet_bbox_deltas_follow_bbox_pred() {
        let l32 = resnet_level(2, 2);
        let l16 = resnet_level(4, 4);
        let mut l8 = resnet_level(8, 8);
        l8.cls.data[3] = 0.95; // cell 0, anchor 1 = [0,0,15,15], w = h = 16, centre 7.5
        let b = &mut l8.bbox.data[4..8];
        b[0] = 0.25; // centre x 7.5 + 4 = 11.5
        b[2] = (2f32).ln(); // width 32 → x1 = 11.5 - 15.5 = -4 → clipped to 0; x2 = 27
        let levels = [
            ResnetLevel { stride: 32, cls: &l32.cls, bbox: &l32.bbox, landmark: &l32.lmk },
            ResnetLevel { stride: 16, cls: &l16.cls, bbox: &l16.bbox, landmark: &l16.lmk },
            ResnetLevel { stride: 8, cls: &l8.cls, bbox: &l8.bbox, landmark: &l8.lmk },
        ];
        let f = &decode_resnet(&levels, 64, 64, 1.0, 0.9, 0.4).unwrap()[0];
        assert!((f.x1 - 0.0).abs() < 1e-5 && (f.x2 - 27.0).abs() < 1e-4 && f.y1 == 0.0 && f.y2 == 15.0, "{f:?}");
    }

    #[test]
    fn resnet_rejects_malformed() {
        let l = resnet_level(2, 2);
        let bad = t(&[1, 2, 2, 3], vec![0.0; 12]);
        let lv = [ResnetLevel { stride: 32, cls: &bad, bbox: &l.bbox, landmark: &l.lmk }];
        assert!(decode_resnet(&lv, 64, 64, 1.0, 0.9, 0.4).is_err());
        let lv = [ResnetLevel { stride: 4, cls: &l.cls, bbox: &l.bbox, landmark: &l.lmk }];
        assert!(decode_resnet(&lv, 64, 64, 1.0, 0.9, 0.4).is_err());
        assert!(decode_resnet(&[], 64, 64, 1.0, 0.9, 0.4).is_err());
    }
}
