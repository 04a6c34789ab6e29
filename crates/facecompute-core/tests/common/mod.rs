//! Shared by the compare tests: a seeded generator and a plain float64 port of DeepFace's formulas.
//! Also the image parity helpers: fixture locations, PNG loading through our decoder, pixel statistics.
#![allow(dead_code)]

use facecompute_core::compare::Metric;

/// SplitMix64: deterministic, dependency-free, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vector(&mut self, dims: usize) -> Vec<f32> {
        (0..dims).map(|_| self.unit()).collect()
    }
}

/// DeepFace's pairwise formulas (reference §4.1) in float64, written the obvious way. Two
/// documented choices: the cosine argument of arccos is clamped into [-1, 1], and a zero vector has
/// similarity 0 (DeepFace's batch form with ε = 1e-10).
pub fn reference(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
    let a: Vec<f64> = a.iter().map(|&x| x as f64).collect();
    let b: Vec<f64> = b.iter().map(|&x| x as f64).collect();
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    let similarity = if na * nb == 0.0 { 0.0 } else { dot / (na * nb) };
    match metric {
        Metric::Cosine => 1.0 - similarity,
        Metric::Angular => similarity.clamp(-1.0, 1.0).acos() / std::f64::consts::PI,
        Metric::Euclidean => a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt(),
        Metric::EuclideanL2 => {
            let (da, db) = (na + 1e-10, nb + 1e-10);
            a.iter().zip(&b).map(|(x, y)| (x / da - y / db).powi(2)).sum::<f64>().sqrt()
        }
    }
}

/// 1e-6 absolute, or relative once a distance exceeds 1 (raw euclidean on large values).
pub fn assert_close(got: f64, want: f64, what: &str) {
    let tolerance = 1e-6 * want.abs().max(1.0);
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want} (diff {})", (got - want).abs());
}

use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use facecompute_core::pixels::Image;
use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// ../shared/data, or SHARED_DATA_DIR.
pub fn shared() -> PathBuf {
    std::env::var_os("SHARED_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

pub const NO_LIMITS: DecodeLimits = DecodeLimits { max_bytes: usize::MAX, max_pixels: u64::MAX };

pub fn decode_bgr(bytes: &[u8]) -> Image {
    decode(bytes, NO_LIMITS, ChannelOrder::Bgr).expect("decodes")
}

/// A fixture PNG as OpenCV would read it: BGR, or 1 channel when the PNG is grey.
pub fn load_png(path: &std::path::Path) -> Image {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let grey = bytes.get(25) == Some(&0); // IHDR colour type 0
    let img = decode_bgr(&bytes);
    if grey {
        let data = img.data.chunks_exact(3).map(|p| p[0]).collect();
        Image { width: img.width, height: img.height, channels: 1, data }
    } else {
        img
    }
}

/// (max abs difference, number of differing samples); panics on a shape mismatch.
pub fn diff(a: &Image, b: &Image, what: &str) -> (u8, usize) {
    assert_eq!((a.width, a.height, a.channels), (b.width, b.height, b.channels), "{what}: shape");
    let mut max = 0u8;
    let mut n = 0;
    for (x, y) in a.data.iter().zip(&b.data) {
        let d = x.abs_diff(*y);
        max = max.max(d);
        n += (d > 0) as usize;
    }
    (max, n)
}

pub fn sha256(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}
