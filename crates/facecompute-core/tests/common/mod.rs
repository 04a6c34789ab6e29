//! Shared helpers for the parity tests: fixture and shared-data locations, PNG loading through our
//! own decoder (fixtures are lossless PNG written by OpenCV), and pixel difference statistics.
#![allow(dead_code)]

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
