//! Speed of the alignment warp (`rotate_roi`, DeepFace's cv2.warpAffine INTER_CUBIC) on a BGR
//! sub-image the size of a bordered LFW face, the quarter that alignment keeps. Run it twice to
//! compare kernels in one session: `FACECOMPUTE_SIMD=scalar` forces the scalar loop.
//!   cargo run --release -p facecompute-core --example bench_warp

use facecompute_core::pixels::{rotate_roi, Image};
use facecompute_core::simd::Kernel;
use std::time::Instant;

fn main() {
    let (w, h) = (500u32, 500u32);
    let mut state = 0x9e37_79b9u32;
    let data = (0..w * h * 3)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 24) as u8
        })
        .collect();
    let img = Image { width: w, height: h, channels: 3, data };
    let roi = (125, 125, 375, 375);
    let runs = 200;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t0 = Instant::now();
        for i in 0..runs {
            std::hint::black_box(rotate_roi(&img, 250.0, 250.0, -7.3 + i as f64 * 0.01, roi).unwrap());
        }
        best = best.min(t0.elapsed().as_secs_f64() * 1000.0 / runs as f64);
    }
    println!("rotate_roi {w}x{h} BGR, roi 250x250, kernel {}: {best:.3} ms/call (best of 5 x {runs})", Kernel::best().as_str());
}
