//! Parity of the `opencv` detector with opencv-python, on the fixture written by
//! tools/reference/opencv_haar.py (DeepFace's align=True border, detectMultiScale3(1.1, 10), eyes).
//!
//! Images go through the core's decoder, which matches cv2.imdecode; the fixture carries a hash of
//! OpenCV's decoded pixels, and every image whose pixels match is held to exact equality. Formats
//! the core does not decode (PGM) are covered by the unit tests instead.

use facecompute_core::detect::opencv::{Border, FaceDetection, OpenCvDetector, OpenCvTrace};
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

/// OpenCV's clipObjects on a raw window: what detectMultiScale3 with minNeighbors=0 returns.
fn clip_window(r: facecompute_core::detect::haar::Rect, img: &Image, weight: f64) -> (i32, i32, i32, i32, f64) {
    let (x0, y0) = (r.x.max(0), r.y.max(0));
    let (x1, y1) = ((r.x + r.w).min(img.width as i32), (r.y + r.h).min(img.height as i32));
    (x0, y0, x1 - x0, y1 - y0, weight)
}

/// The digest tools/reference/opencv_haar.py writes for one image's answer: sha256 of
/// `x,y,w,h,rejectLevel,<levelWeight's IEEE-754 bits, hex>,lx,ly,rx,ry` per face ('-' for no eyes),
/// joined by ';', first 16 hex digits.
fn digest(t: &OpenCvTrace) -> String {
    use sha2::{Digest, Sha256};
    let parts: Vec<String> = t
        .faces
        .iter()
        .map(|f| {
            let eyes = match (f.face.left_eye, f.face.right_eye) {
                (Some(l), Some(r)) => format!("{},{},{},{}", l.0, l.1, r.0, r.1),
                _ => "-,-,-,-".to_string(),
            };
            format!("{},{},{},{},{},{:016x},{eyes}", f.face.x, f.face.y, f.face.w, f.face.h, f.reject_level, f.level_weight.to_bits())
        })
        .collect();
    let hash = Sha256::digest(parts.join(";").as_bytes());
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The cascade's grey (and `pixels::bgr_to_gray`) on every one of the 2^24 BGR colours, against the
/// sha256 of cv2.cvtColor(COLOR_BGR2GRAY) over the same image (tools/reference/opencv_haar.py). A
/// grey level off by one on a single colour moves the pyramid, and with it a window or a box.
#[test]
fn gray_equals_opencv_on_every_colour() {
    use sha2::{Digest, Sha256};
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(manifest().join("../../test/fixtures/opencv_haar.json")).unwrap())
            .unwrap();
    let mut bgr = Vec::with_capacity(3 << 24);
    for i in 0u32..1 << 24 {
        bgr.extend_from_slice(&[(i >> 16) as u8, (i >> 8) as u8, i as u8]);
    }
    let gray = facecompute_core::detect::haar::bgr_to_gray_cascade(&bgr, 4096, 4096, 3);
    let hex = |g: &[u8]| Sha256::digest(g).iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(&gray), fixture["gray_every_bgr_colour_sha256"].as_str().unwrap(), "the cascade's grey");
    let img = Image::from_raw(4096, 4096, 3, bgr).unwrap();
    let shared = facecompute_core::pixels::bgr_to_gray(&img).unwrap();
    assert_eq!(hex(&shared.data), fixture["gray_every_bgr_colour_sha256"].as_str().unwrap(), "pixels::bgr_to_gray");
}

/// Every LFW View 1 DevTrain image (3,443), against opencv-python's answer recorded as a digest by
/// `tools/reference/opencv_haar.py --lfw` (test/fixtures/opencv_haar_lfw.json): boxes, reject
/// levels, level weights (bit for bit) and eyes, in OpenCV's order. A mismatch names the image;
/// `facecompute debug haar-windows <image> --against <opencv_haar.py --image output>` shows why.
#[test]
fn opencv_detector_matches_opencv_python_on_all_of_lfw_devtrain() {
    let fixture: Value =
        serde_json::from_str(&std::fs::read_to_string(manifest().join("../../test/fixtures/opencv_haar_lfw.json")).unwrap())
            .unwrap();
    let face_xml = std::fs::read_to_string(weights_dir().join("haarcascade_frontalface_default.xml")).unwrap();
    let eye_xml = std::fs::read_to_string(weights_dir().join("haarcascade_eye.xml")).unwrap();
    let det = OpenCvDetector::from_xml(&face_xml, &eye_xml).unwrap();
    let started = std::time::Instant::now();
    let rows = fixture["images"].as_array().unwrap();
    // One image: (face count, answer equals OpenCV's, decoded pixels equal OpenCV's, report line).
    let check = |row: &Value| -> (usize, bool, bool, bool, String) {
        let row = row.as_array().unwrap();
        let name = row[0].as_str().unwrap();
        let person = &name[..name.rfind('_').unwrap()];
        let rel = format!("lfw-devtrain/{person}/{name}.jpg");
        let img = decode_bgr(&data_dir().join(&rel)).unwrap_or_else(|| panic!("{rel} must decode"));
        let pixels_match = sha1_smol::Sha1::from(&img.data).digest().to_string()[..8] == *row[1].as_str().unwrap();
        let bordered = add_border(&img);
        // Each scan runs on one thread (OpenCV's order); the images are spread over the cores.
        let t = det.detect_traced(bordered.width, bordered.height, bordered.channels, &bordered.data, 1).unwrap();
        let same_count = t.faces.len() as u64 == row[2].as_u64().unwrap();
        let ok = digest(&t) == row[3].as_str().unwrap();
        (t.faces.len(), same_count, ok, pixels_match, format!("{rel}: {} faces, opencv {}; pixels equal: {pixels_match}", t.faces.len(), row[2]))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = rows.len().div_ceil(threads);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = rows.chunks(chunk).map(|part| s.spawn(|| part.iter().map(check).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let faces: usize = results.iter().map(|r| r.0).sum();
    let same_count = results.iter().filter(|r| r.1).count();
    let exact = results.iter().filter(|r| r.2).count();
    let same_pixels = results.iter().filter(|r| r.3).count();
    let report: Vec<&String> = results.iter().filter(|r| !r.2).map(|r| &r.4).collect();
    for line in &report {
        eprintln!("  {line}");
    }
    eprintln!(
        "opencv parity, LFW DevTrain: {} images, {faces} faces, {same_count} same face count, {exact} exactly equal, {same_pixels} with OpenCV's decoded pixels; {:.1} s on {threads} threads",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(rows.len(), 3443, "every DevTrain image is in the fixture");
    // The README's figure: OpenCV's faces on those images, and ours (the same on each image, below).
    let opencv_faces: u64 = rows.iter().map(|r| r.as_array().unwrap()[2].as_u64().unwrap()).sum();
    assert_eq!(opencv_faces, 3671, "opencv-python found the README's 3,671 faces");
    assert_eq!(faces, 3671, "we found the README's 3,671 faces");
    assert_eq!(same_count, rows.len(), "the same face count on every image");
    assert_eq!(same_pixels, rows.len(), "the decoder gives OpenCV's pixels on every LFW image");
    assert_eq!(exact, rows.len(), "every image's answer equals OpenCV's");
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
    let mut windows_checked = 0usize;
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
        let bordered = add_border(&img);
        let ours: Vec<FaceDetection> = det.detect(&bordered).unwrap();
        let border = Border { top: img.height / 2, bottom: img.height / 2, left: img.width / 2, right: img.width / 2 };
        let padded = det.detect_bordered(img.width, img.height, img.channels, &img.data, border, 0).unwrap();
        assert_eq!(padded, ours, "{rel}: bordering the grey image finds what bordering the colour one does");
        let theirs = im["faces"].as_array().unwrap();
        if let Some(windows) = im["windows"].as_array() {
            // OpenCV's windows before groupRectangles (minNeighbors=0), against our traced scan.
            let t = det.detect_traced(bordered.width, bordered.height, bordered.channels, &bordered.data, 1).unwrap();
            let mine: Vec<(i32, i32, i32, i32, f64)> = t.windows.iter().map(|w| clip_window(w.rect, &bordered, w.weight)).collect();
            let opencv: Vec<(i32, i32, i32, i32, f64)> = windows
                .iter()
                .map(|w| {
                    let w = w.as_array().unwrap();
                    let i = |k: usize| w[k].as_i64().unwrap() as i32;
                    (i(0), i(1), i(2), i(3), w[4].as_f64().unwrap())
                })
                .collect();
            assert_eq!(mine, opencv, "{rel}: raw windows");
            assert_eq!(t.faces.iter().map(|f| f.face.clone()).collect::<Vec<_>>(), ours, "{rel}: traced faces");
            windows_checked += opencv.len();
        }
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
    eprintln!("  raw windows equal to OpenCV's (minNeighbors=0), in order: {windows_checked}");
    assert!(images > 150, "the fixture and the shared data must be there");
    assert!(windows_checked > 20, "the fixture has OpenCV's raw windows");
    assert!(pct(same_count, images) >= 98.0);
    assert!(pct(iou_ok, ref_faces) >= 98.0);
    assert!(pct(eyes_ok, ref_faces) >= 95.0);
    // Where the input pixels are OpenCV's, the result must be OpenCV's.
    assert_eq!(same_pixels_exact, same_pixels);
}
