//! Parity of the `opencv` detector with opencv-python, on the fixture written by
//! tools/reference/opencv_haar.py (DeepFace's align=True border, detectMultiScale3(1.1, 10), eyes).
//!
//! Images go through the core's decoder, which matches cv2.imdecode; the fixture carries a hash of
//! OpenCV's decoded pixels, and every image whose pixels match is held to exact equality. Formats
//! the core does not decode (PGM) are covered by the unit tests instead.

use facecompute_core::detect::opencv::{FaceDetection, OpenCvDetector};
use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use facecompute_core::pixels::Image;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
fn data_dir() -> PathBuf {
    std::env::var_os("SHARED_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| manifest().join("../../../shared/data"))
}
fn weights_dir() -> PathBuf {
    std::env::var_os("FACECOMPUTE_WEIGHTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest().join("../../../shared/weights"))
}

/// BGR, 3 channels, with the core's decoder (libjpeg-turbo; bit-exact with cv2.imdecode).
fn decode_bgr(path: &Path) -> Option<Image> {
    let bytes = std::fs::read(path).ok()?;
    let limits = DecodeLimits { max_bytes: usize::MAX, max_pixels: u64::MAX };
    decode(&bytes, limits, ChannelOrder::Bgr).ok()
}

/// cv2.copyMakeBorder(BORDER_CONSTANT, 0) with DeepFace's int(0.5*H), int(0.5*W).
fn add_border(img: &Image) -> Image {
    let (w, h) = (img.width as usize, img.height as usize);
    let (bw, bh) = (w / 2, h / 2);
    let mut out = Image::new((w + 2 * bw) as u32, (h + 2 * bh) as u32, 3);
    let stride = out.stride();
    for y in 0..h {
        let dst = (y + bh) * stride + bw * 3;
        out.data[dst..dst + w * 3].copy_from_slice(&img.data[y * w * 3..(y + 1) * w * 3]);
    }
    out
}

fn iou(a: (i32, i32, i32, i32), b: (i32, i32, i32, i32)) -> f64 {
    let x0 = a.0.max(b.0);
    let y0 = a.1.max(b.1);
    let x1 = (a.0 + a.2).min(b.0 + b.2);
    let y1 = (a.1 + a.3).min(b.1 + b.3);
    let inter = ((x1 - x0).max(0) as f64) * ((y1 - y0).max(0) as f64);
    inter / ((a.2 * a.3) as f64 + (b.2 * b.3) as f64 - inter)
}

fn eye(v: &Value) -> Option<(i32, i32)> {
    v.as_array().map(|a| (a[0].as_i64().unwrap() as i32, a[1].as_i64().unwrap() as i32))
}

#[test]
fn opencv_detector_matches_opencv_python() {
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(manifest().join("../../test/fixtures/opencv_haar.json")).unwrap())
            .unwrap();
    let face_xml = std::fs::read_to_string(weights_dir().join("haarcascade_frontalface_default.xml")).unwrap();
    let eye_xml = std::fs::read_to_string(weights_dir().join("haarcascade_eye.xml")).unwrap();
    let det = OpenCvDetector::from_xml(&face_xml, &eye_xml).unwrap();

    let (mut images, mut same_count, mut undecodable) = (0usize, 0usize, Vec::new());
    let (mut ref_faces, mut iou_ok, mut eyes_ok, mut exact_faces) = (0usize, 0usize, 0usize, 0usize);
    let (mut same_pixels, mut same_pixels_exact) = (0usize, 0usize);
    let mut ious = Vec::new();
    let mut max_conf_err = 0f64;
    let mut report = Vec::new();
    for im in fixture["images"].as_array().unwrap() {
        let rel = im["path"].as_str().unwrap();
        let Some(img) = decode_bgr(&data_dir().join(rel)) else {
            undecodable.push(rel.to_string());
            continue;
        };
        images += 1;
        assert_eq!((img.width as u64, img.height as u64), (im["width"].as_u64().unwrap(), im["height"].as_u64().unwrap()), "{rel}");
        let pixels_match = sha1_smol::Sha1::from(&img.data).digest().to_string()[..16] == *im["bgr_sha1"].as_str().unwrap();
        let ours: Vec<FaceDetection> = det.detect(&add_border(&img)).unwrap();
        let theirs = im["faces"].as_array().unwrap();
        if ours.len() == theirs.len() {
            same_count += 1;
        } else {
            report.push(format!("{rel}: {} faces, opencv {}", ours.len(), theirs.len()));
        }
        let mut all_exact = ours.len() == theirs.len();
        for (k, f) in theirs.iter().enumerate() {
            let f = f.as_array().unwrap();
            let r = (f[0].as_i64().unwrap() as i32, f[1].as_i64().unwrap() as i32, f[2].as_i64().unwrap() as i32, f[3].as_i64().unwrap() as i32);
            let lw = f[5].as_f64().unwrap();
            let (le, re) = (eye(&f[6]), eye(&f[7]));
            ref_faces += 1;
            let best = ours.iter().max_by(|a, b| iou(r, (a.x, a.y, a.w, a.h)).total_cmp(&iou(r, (b.x, b.y, b.w, b.h))));
            let Some(o) = best else {
                ious.push(0.0);
                all_exact = false;
                continue;
            };
            let v = iou(r, (o.x, o.y, o.w, o.h));
            ious.push(v);
            if v >= 0.95 {
                iou_ok += 1;
            }
            if o.left_eye == le && o.right_eye == re {
                eyes_ok += 1;
            }
            let conf_err = (o.confidence - (100.0 - lw) / 100.0).abs();
            let exact = (o.x, o.y, o.w, o.h) == r && o.left_eye == le && o.right_eye == re && conf_err < 1e-9;
            if v >= 0.95 {
                max_conf_err = max_conf_err.max(conf_err);
            }
            // Same order as OpenCV's single-threaded output, too.
            let same_slot = ours.get(k).is_some_and(|s| std::ptr::eq(s, o));
            if exact && same_slot {
                exact_faces += 1;
            } else {
                all_exact = false;
                report.push(format!(
                    "{rel} face {k}: ours {:?} conf {:.6} eyes {:?}/{:?}; opencv {r:?} conf {:.6} eyes {le:?}/{re:?}",
                    (o.x, o.y, o.w, o.h),
                    o.confidence,
                    o.left_eye,
                    o.right_eye,
                    (100.0 - lw) / 100.0
                ));
            }
        }
        if pixels_match {
            same_pixels += 1;
            if all_exact {
                same_pixels_exact += 1;
            } else {
                report.push(format!("{rel}: NOT EXACT although the decoded pixels match OpenCV's"));
            }
        }
    }
    ious.sort_by(|a, b| a.total_cmp(b));
    let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!("opencv parity: {images} images ({} undecodable here: {undecodable:?})", undecodable.len());
    eprintln!("  face counts equal: {same_count}/{images} ({:.2}%)", pct(same_count, images));
    eprintln!(
        "  faces with IoU >= 0.95: {iou_ok}/{ref_faces} ({:.2}%); IoU min {:.4}, median {:.4}",
        pct(iou_ok, ref_faces),
        ious.first().copied().unwrap_or(1.0),
        ious.get(ious.len() / 2).copied().unwrap_or(1.0)
    );
    eprintln!("  eyes equal: {eyes_ok}/{ref_faces} ({:.2}%)", pct(eyes_ok, ref_faces));
    eprintln!("  faces exactly equal (box, confidence, eyes, order): {exact_faces}/{ref_faces} ({:.2}%)", pct(exact_faces, ref_faces));
    eprintln!("  max |confidence - opencv| on matched faces: {max_conf_err:e}");
    eprintln!("  images whose decoded pixels equal OpenCV's: {same_pixels}; of those exactly equal: {same_pixels_exact}");
    assert!(images > 250, "the fixture and the shared data must be there");
    assert!(pct(same_count, images) >= 98.0);
    assert!(pct(iou_ok, ref_faces) >= 98.0);
    assert!(pct(eyes_ok, ref_faces) >= 95.0);
    // Where the input pixels are OpenCV's, the result must be OpenCV's.
    assert_eq!(same_pixels_exact, same_pixels);
}
