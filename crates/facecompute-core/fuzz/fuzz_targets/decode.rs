//! Decode + normalization on arbitrary bytes: probe, decode with the service's limits in both channel
//! orders, then the pixel path a face takes (border, extraction with rotation, letterbox, tensor).
//! Any panic, abort, leak or allocation beyond -rss_limit_mb is a bug.
//!
//! The minimized corpus is committed (corpus/decode); it was grown from the shared robustness set and
//! the decode fixtures. Run (nightly, cargo-fuzz; README.md, "Fuzzing"):
//!   nice -n 10 cargo +nightly fuzz run decode -O corpus/decode -- -max_total_time=1800 -rss_limit_mb=2048 -max_len=32768
#![no_main]

use facecompute_core::align::{deepface_border, extract_faces, Detection, ExtractOptions};
use facecompute_core::image::{decode, probe, ChannelOrder, DecodeLimits};
use facecompute_core::pixels::{bgr_to_gray, faces_to_tensor, resize, Interpolation, Layout, Letterbox, Normalization, Preprocess, TensorSpec};
use libfuzzer_sys::fuzz_target;

// Small enough that one input cannot exhaust the fuzzer's RSS limit and that an execution stays cheap
// (the limit check itself is the same code at any size); big enough for real images.
const LIMITS: DecodeLimits = DecodeLimits { max_bytes: 1 << 20, max_pixels: 262_144 };
/// The pixel path runs on a thumbnail of at most this many pixels: its arithmetic does not depend on
/// the size, and a cheap execution lets the fuzzer try many more inputs.
const PIXEL_PATH_MAX: u64 = 16_384;

fuzz_target!(|data: &[u8]| {
    let _ = probe(data);
    let Ok(img) = decode(data, LIMITS, ChannelOrder::Bgr) else { return };
    assert_eq!(img.data.len(), img.width as usize * img.height as usize * 3);
    if let Ok(rgb) = decode(data, LIMITS, ChannelOrder::Rgb) {
        assert_eq!((rgb.width, rgb.height), (img.width, img.height));
    }
    // Keep the pixel path cheap on big decodes: work on a thumbnail.
    let px = img.width as u64 * img.height as u64;
    let img = if px > PIXEL_PATH_MAX {
        let scale = ((px as f64 / PIXEL_PATH_MAX as f64).sqrt().ceil() as u32).max(2);
        resize(&img, (img.width / scale).max(1), (img.height / scale).max(1), Interpolation::Area).unwrap()
    } else {
        img
    };
    let _ = bgr_to_gray(&img).unwrap();
    let (bordered, top, left) = deepface_border(&img).unwrap();
    let seed = data.iter().fold(0u32, |a, &b| a.wrapping_mul(31).wrapping_add(b as u32));
    let (w, h) = (img.width as f64, img.height as f64);
    let det = Detection {
        x: left as f64 + (seed % 7) as f64,
        y: top as f64 + (seed % 5) as f64,
        w: (w * 0.6).max(1.0),
        h: (h * 0.6).max(1.0),
        left_eye: Some((left as f64 + w * 0.45, top as f64 + h * 0.3 + (seed % 9) as f64)),
        right_eye: Some((left as f64 + w * 0.2, top as f64 + h * 0.35)),
        confidence: 0.9,
        ..Default::default()
    };
    let opts = ExtractOptions {
        align: true,
        expand_percentage: (seed % 30) as f64,
        border_top: top as i64,
        border_left: left as i64,
        original_width: img.width as i64,
        original_height: img.height as i64,
    };
    let faces = extract_faces(&bordered, &[det], &opts).unwrap();
    let crops: Vec<_> = faces.into_iter().map(|f| f.face).collect();
    let spec = TensorSpec {
        width: 40,
        height: 40,
        layout: Layout::Nchw,
        channel_order: ChannelOrder::Rgb,
        preprocess: if seed & 1 == 0 { Preprocess::DeepfaceFloat } else { Preprocess::Uint8Truncate },
        normalization: Normalization::Facenet,
        letterbox: if seed & 2 == 0 { Letterbox::Float } else { Letterbox::Uint8 },
    };
    let t = faces_to_tensor(&crops, &spec).unwrap();
    assert_eq!(t.len(), crops.len() * 40 * 40 * 3);
});
