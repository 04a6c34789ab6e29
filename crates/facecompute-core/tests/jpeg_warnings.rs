//! Every libjpeg warning class, alone and followed by a fatal error, is handled as OpenCV's
//! `cv2.imread` (4.11.0.86) handles it: decoded at the same size when OpenCV returns an image,
//! `invalid_image` when it returns None. The files and OpenCV's answers come from
//! tools/reference/jpeg_warnings.py (fixtures/jpeg-warnings/expected.json), which also checked that
//! each file makes libjpeg print the warning it is named after.
//!
//! The case that matters most is the reported reproduction (`repro-extraneous-bad-dht.jpg`): a warning
//! (4 extraneous bytes) and then a fatal error (DHT table index 5) before any row was decoded.
//! TurboJPEG 3 reports that pair as a warning; trusting it handed out a buffer whose rows were never
//! written: memory an earlier request may have filled with another tenant's face.

mod common;
use common::*;
use facecompute_core::image::{decode, ChannelOrder};
use facecompute_core::ErrorCode;
use serde_json::Value;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("jpeg-warnings/expected.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["files"].as_array().unwrap().clone()
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("jpeg-warnings").join(name)).unwrap()
}

#[test]
fn every_warning_class_is_handled_as_opencv_imread_handles_it() {
    let cases = cases();
    let mut failures = Vec::new();
    for c in &cases {
        let name = c["file"].as_str().unwrap();
        let ours = decode(&bytes(name), NO_LIMITS, ChannelOrder::Bgr);
        match (&c["imread"], ours) {
            (Value::Null, Err(e)) if e.code == ErrorCode::InvalidImage => {}
            (Value::Null, Err(e)) => failures.push(format!("{name}: OpenCV refuses; we fail with {:?}, not invalid_image", e.code)),
            (Value::Null, Ok(_)) => failures.push(format!("{name}: OpenCV refuses it, we decoded it")),
            (cv, Ok(img)) => {
                let size = (cv["width"].as_u64().unwrap() as u32, cv["height"].as_u64().unwrap() as u32);
                if (img.width, img.height) != size {
                    failures.push(format!("{name}: {}x{}, OpenCV {}x{}", img.width, img.height, size.0, size.1));
                }
            }
            (_, Err(e)) => failures.push(format!("{name}: OpenCV decodes it, we refuse: {e}")),
        }
    }
    // The warning classes libjpeg-turbo can raise while decoding (jerror.h; JWRN_TOO_MUCH_DATA is an
    // application misuse and JWRN_BOGUS_ICC needs jpeg_read_icc_profile, which neither reader calls).
    let printed: String = cases.iter().flat_map(|c| c["opencv_messages"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_string())).collect::<Vec<_>>().join("\n");
    for class in [
        "Unknown Adobe color transform code",
        "bad arithmetic code",
        "Inconsistent progression sequence",
        "extraneous bytes before marker",
        "premature end of data segment",
        "bad Huffman code",
        "unknown JFIF revision number",
        "Premature end of JPEG file",
        "instead of RST",
        "Invalid SOS parameters for sequential JPEG",
    ] {
        if !printed.contains(class) {
            failures.push(format!("no fixture raises \"{class}\""));
        }
    }
    assert!(cases.len() >= 20, "only {} fixtures", cases.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn issue_24_reproduction_is_invalid_image() {
    let bytes = bytes("repro-extraneous-bad-dht.jpg");
    assert_eq!(sniff_size(&bytes), (320, 320), "a 320x320 JPEG, as the issue describes");
    for order in [ChannelOrder::Bgr, ChannelOrder::Rgb] {
        let e = decode(&bytes, NO_LIMITS, order).expect_err("refused");
        assert_eq!(e.code, ErrorCode::InvalidImage);
        assert!(e.detail.contains("undecodable JPEG"), "{}", e.detail);
    }
}

/// A damaged file whose rows were all written keeps them, even when its last row is all zeros, the
/// value the buffer is filled with (the decoder then checks that row once more).
#[test]
fn a_warning_after_every_row_keeps_a_black_last_row() {
    let img = decode(&bytes("black-extraneous-before-eoi.jpg"), NO_LIMITS, ChannelOrder::Bgr).expect("decoded, as cv2.imread does");
    assert_eq!((img.width, img.height), (96, 96));
    let last = &img.data[img.data.len() - 96 * 3..];
    assert!(last.iter().all(|&b| b <= 2), "the last row is black: {:?}", &last[..12]);
}

/// Whatever a damaged file does, decoding it twice gives the same pixels: nothing of the allocator's
/// previous contents shows through. Before each decode the heap is dirtied with a different byte in
/// blocks of the decoded size, which the allocator hands back for the pixel buffer (glibc raises its
/// mmap threshold once such a block is freed), so rows left unwritten differ between the two decodes.
#[test]
fn damaged_files_decode_to_the_same_pixels_every_time() {
    fn dirty(len: usize, byte: u8) {
        for _ in 0..4 {
            let mut v: Vec<u8> = Vec::with_capacity(len);
            v.resize(len, byte);
            std::hint::black_box(&v);
        }
    }
    for c in cases() {
        let name = c["file"].as_str().unwrap();
        let b = bytes(name);
        let (w, h) = sniff_size(&b);
        let len = w as usize * h as usize * 3;
        dirty(len, 0xA5);
        let first = decode(&b, NO_LIMITS, ChannelOrder::Bgr).map(|i| i.data);
        dirty(len, 0x5A);
        let second = decode(&b, NO_LIMITS, ChannelOrder::Bgr).map(|i| i.data);
        match (first, second) {
            (Ok(a), Ok(b)) => assert!(a == b, "{name}: two decodes differ"),
            (Err(_), Err(_)) => {}
            _ => panic!("{name}: decoded once and refused once"),
        }
    }
}

fn sniff_size(b: &[u8]) -> (u32, u32) {
    let info = facecompute_core::image::probe(b).unwrap();
    (info.width, info.height)
}
