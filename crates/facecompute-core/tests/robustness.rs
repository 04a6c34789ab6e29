//! Every file of ../shared/data/robustness behaves as its index.csv category says.

mod common;
use common::*;
use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use facecompute_core::ErrorCode;

#[test]
fn robustness_set_follows_its_index() {
    let dir = shared().join("robustness");
    let index = std::fs::read_to_string(dir.join("index.csv")).unwrap();
    let limits = DecodeLimits { max_bytes: 10 << 20, max_pixels: 40_000_000 };
    let mut n = 0;
    for line in index.lines().skip(1) {
        let mut cols = line.splitn(3, ',');
        let (category, file) = (cols.next().unwrap(), cols.next().unwrap());
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let result = decode(&bytes, limits, ChannelOrder::Bgr);
        n += 1;
        match (category, file) {
            // "CompreFace expects decode to 225x225x3": libjpeg pads the missing data, as OpenCV.
            ("corrupt", f) if f.ends_with("truncated.jpg") => {
                let img = result.unwrap();
                assert_eq!((img.width, img.height, img.channels), (225, 225, 3));
            }
            ("corrupt", _) => assert_eq!(result.unwrap_err().code, ErrorCode::InvalidImage, "{file}"),
            // PGM is not an accepted format (contract §4: JPEG, PNG, WebP, GIF, BMP).
            (_, f) if f.ends_with(".pgm") => assert_eq!(result.unwrap_err().code, ErrorCode::InvalidImage, "{file}"),
            _ => {
                let img = result.unwrap_or_else(|e| panic!("{file}: {e}"));
                assert_eq!(img.channels, 3);
                assert_eq!(img.data.len(), img.width as usize * img.height as usize * 3);
            }
        }
    }
    assert!(n >= 90, "index has {n} rows");
}

/// Found by the `decode` fuzz target (a 45×1 BMP): a detection that starts below the image, grown
/// by expand_percentage, made a negative crop height and failed with "crop size 60x-5 is out of
/// range". It is an empty face now, skipped as DeepFace skips empty crops, with and without align.
#[test]
fn an_expanded_box_past_the_edge_is_an_empty_face_not_an_error() {
    use facecompute_core::align::{extract_faces, Detection, ExtractOptions};
    use facecompute_core::pixels::Image;
    let img = Image::new(45, 1, 3);
    let det = Detection { x: 2.0, y: 4.0, w: 27.0, h: 1.0, left_eye: Some((20.0, 1.0)), right_eye: Some((10.0, 2.0)), confidence: 0.9, ..Default::default() };
    for align in [true, false] {
        let opts = ExtractOptions { align, expand_percentage: 20.0, border_top: 0, border_left: 22, original_width: 45, original_height: 1 };
        let faces = extract_faces(&img, &[det.clone()], &opts).unwrap_or_else(|e| panic!("align={align}: {e}"));
        assert!(faces.is_empty(), "align={align}: an empty face is skipped");
    }
}
