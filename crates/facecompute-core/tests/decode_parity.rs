//! Decoded pixels equal cv2.imdecode(IMREAD_COLOR) (OpenCV 4.9.0.80) exactly: sha256 of the BGR
//! buffer for every synthetic fixture and every shared DeepFace/robustness image (decode.tsv, from
//! tools/reference/opencv_pixels.py).

mod common;
use common::*;
use facecompute_core::image::{decode, sniff, ChannelOrder, Format};
use facecompute_core::ErrorCode;

#[test]
fn decode_matches_opencv_bit_for_bit() {
    let table = std::fs::read_to_string(fixtures().join("decode.tsv")).unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let path = match f[0] {
            "fixture" => fixtures().join("decode").join(f[1]),
            set => shared().join(set).join(f[1]),
        };
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let ours = decode(&bytes, NO_LIMITS, ChannelOrder::Bgr);
        let format = sniff(&bytes);
        match (f[4], ours) {
            // OpenCV 4.9 cannot read GIF; we accept it (contract §4).
            ("refused", Ok(img)) if format == Some(Format::Gif) => assert_eq!(img.channels, 3),
            ("refused", Err(e)) => assert_eq!(e.code, ErrorCode::InvalidImage, "{}", f[1]),
            ("refused", Ok(_)) => failures.push(format!("{}: OpenCV refuses, we decoded", f[1])),
            // Formats outside the contract (PGM, ...) are refused even where OpenCV reads them.
            (_, Err(e)) if format.is_none() => assert_eq!(e.code, ErrorCode::InvalidImage),
            (_, Err(e)) => failures.push(format!("{}: {e}", f[1])),
            // A JPEG cut inside its last MCU row: libjpeg-turbo 3.1 (ours) and 2.1.3 (OpenCV 4.9's)
            // fill the missing tail differently; rows 0..222 of 225 are identical (measured with
            // examples/decoder_parity.rs). Only the size can be pinned here.
            (_, Ok(img)) if f[1].ends_with("truncated.jpg") => {
                assert_eq!((img.width.to_string(), img.height.to_string()), (f[2].to_string(), f[3].to_string()));
            }
            (hash, Ok(img)) => {
                let dims = (img.width.to_string(), img.height.to_string());
                if (dims.0.as_str(), dims.1.as_str()) != (f[2], f[3]) || sha256(&img.data) != hash {
                    failures.push(format!("{}: differs from OpenCV ({}x{} vs {}x{})", f[1], img.width, img.height, f[2], f[3]));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} files compared");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn rgb_order_is_bgr_reversed() {
    let bytes = std::fs::read(shared().join("deepface/img5.jpg")).unwrap();
    let bgr = decode(&bytes, NO_LIMITS, ChannelOrder::Bgr).unwrap();
    let rgb = decode(&bytes, NO_LIMITS, ChannelOrder::Rgb).unwrap();
    for (a, b) in bgr.data.chunks_exact(3).zip(rgb.data.chunks_exact(3)) {
        assert_eq!([a[2], a[1], a[0]], [b[0], b[1], b[2]]);
    }
    let webp = std::fs::read(shared().join("deepface/img47.jpg")).unwrap();
    let bgr = decode(&webp, NO_LIMITS, ChannelOrder::Bgr).unwrap();
    let rgb = decode(&webp, NO_LIMITS, ChannelOrder::Rgb).unwrap();
    assert_eq!(bgr.data[0..3].iter().rev().collect::<Vec<_>>(), rgb.data[0..3].iter().collect::<Vec<_>>());
}

#[test]
fn exif_orientation_swaps_dimensions_for_transposing_tags() {
    for o in 1..=8 {
        let bytes = std::fs::read(fixtures().join(format!("decode/exif{o}.jpg"))).unwrap();
        let img = decode_bgr(&bytes);
        let swapped = o >= 5;
        assert_eq!((img.width, img.height), if swapped { (70, 45) } else { (45, 70) }, "orientation {o}");
    }
}
