//! The pixel path on arbitrary pixels, sizes and geometry, without going through a decoder (the
//! decode target mostly reaches it with the few shapes real files have): resize in every
//! interpolation and both depths, the detector downscale, letterbox, borders and padded crops,
//! rotation about any point and angle, face extraction with any detector output over the image
//! (including non-finite and out-of-image boxes and landmarks), and the tensor fill in every
//! layout, channel order, preprocessing and normalization. Any panic, abort or allocation beyond
//! -rss_limit_mb is a bug; so is a wrong output size or a constant image that does not resize to
//! itself (every interpolation's weights sum to one).
//!
//! The first 16 bytes are the parameters, the rest the pixels (repeated to fill the image).
//!   nice -n 10 cargo +nightly fuzz run pixels corpus/pixels -- -max_total_time=1200 -rss_limit_mb=2048 -max_len=4096
#![no_main]

use facecompute_core::align::{deepface_border, extract_faces, Detection, ExtractOptions};
use facecompute_core::image::ChannelOrder;
use facecompute_core::pixels::{
    bgr_to_gray, copy_make_border, crop_clipped, crop_padded, downscale_max_side, faces_to_tensor, letterbox, letterbox_f64,
    resize, resize_linear_f64, rotate, Image, ImageF64, Interpolation, Layout, Letterbox, Normalization, Preprocess, TensorSpec,
};
use libfuzzer_sys::fuzz_target;

const INTERPS: [Interpolation; 3] = [Interpolation::Linear, Interpolation::Cubic, Interpolation::Area];
const NORMS: [Normalization; 7] = [
    Normalization::Base,
    Normalization::Raw,
    Normalization::Facenet,
    Normalization::Facenet2018,
    Normalization::VggFace,
    Normalization::VggFace2,
    Normalization::ArcFace,
];

/// A coordinate from one byte pair: mostly inside a span around the image, sometimes far outside
/// or not finite (a detector's output is not trusted by the extraction code).
fn coord(hi: u8, lo: u8, span: f64) -> f64 {
    match hi {
        0xff => f64::NAN,
        0xfe => f64::INFINITY,
        0xfd => -1e12,
        _ => (((hi as u16) << 8 | lo as u16) as f64 / 65535.0) * 3.0 * span - span,
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let (p, pixels) = data.split_at(16);
    let w = 1 + (p[0] % 48) as u32;
    let h = 1 + (p[1] % 48) as u32;
    let cn = [1u32, 3, 4][(p[2] % 3) as usize];
    let dw = 1 + (p[3] % 96) as u32;
    let dh = 1 + (p[4] % 96) as u32;
    let interp = INTERPS[(p[5] % 3) as usize];
    let n = (w * h * cn) as usize;
    let img = Image::from_raw(w, h, cn, pixels.iter().copied().cycle().take(n).collect()).expect("buffer of the right size");

    // Resize: the size asked for, and a constant image stays constant (to rounding).
    let r = resize(&img, dw, dh, interp).unwrap();
    assert_eq!((r.width, r.height, r.channels, r.data.len()), (dw, dh, cn, (dw * dh * cn) as usize));
    let flat = Image::from_raw(w, h, cn, vec![pixels[0]; n]).unwrap();
    let rf = resize(&flat, dw, dh, interp).unwrap();
    assert!(rf.data.iter().all(|&v| v.abs_diff(pixels[0]) <= 1), "constant {} resized {interp:?} to {:?}", pixels[0], &rf.data[..rf.data.len().min(8)]);
    let f = ImageF64 { width: w, height: h, channels: cn, data: img.data.iter().map(|&v| v as f64 / 255.0).collect() };
    let rf64 = resize_linear_f64(&f, dw, dh).unwrap();
    assert_eq!(rf64.data.len(), (dw * dh * cn) as usize);
    assert!(rf64.data.iter().all(|v| (-0.5..=1.5).contains(v)), "linear resize of [0,1] left a sane range");

    let (small, factor) = downscale_max_side(&img, (p[6] % 64) as u32).unwrap();
    assert!(factor > 0.0 && factor <= 1.0 && small.width >= 1 && small.height >= 1);
    let lb = letterbox(&img, dw, dh).unwrap();
    assert_eq!((lb.width, lb.height), (dw, dh));
    let lbf = letterbox_f64(&f, dw, dh).unwrap();
    assert_eq!(lbf.data.len(), (dw * dh * cn) as usize);

    let (t, b, l, rt) = (p[7] as u32 % 40, p[8] as u32 % 40, p[9] as u32 % 40, p[10] as u32 % 40);
    let bordered = copy_make_border(&img, t, b, l, rt).unwrap();
    assert_eq!((bordered.width, bordered.height), (w + l + rt, h + t + b));
    let (cx, cy) = (coord(p[11], p[12], w as f64) as i64, coord(p[12], p[13], h as f64) as i64);
    let _ = crop_padded(&img, cx, cy, dw as i64, dh as i64);
    let c = crop_clipped(&img, cx, cy, cx + dw as i64, cy + dh as i64);
    assert_eq!(c.data.len(), (c.width * c.height * cn) as usize);

    if cn != 3 {
        let _ = rotate(&img, coord(p[11], p[13], w as f64), coord(p[13], p[12], h as f64), coord(p[14], p[15], 360.0));
        return;
    }
    let _ = bgr_to_gray(&img).unwrap();
    let r = rotate(&img, coord(p[11], p[13], w as f64), coord(p[13], p[12], h as f64), coord(p[14], p[15], 360.0));
    if let Ok(r) = r {
        assert_eq!((r.width, r.height), (w, h));
    }

    // Extraction with one detection built from the pixels' bytes (any box, any landmarks).
    let (sub, top, left) = deepface_border(&img).unwrap();
    let align = p[5] & 0x80 == 0;
    let (fw, fh) = if align { (sub.width as f64, sub.height as f64) } else { (w as f64, h as f64) };
    let g = |i: usize| pixels.get(i).copied().unwrap_or(0);
    let point = |i: usize| if g(i) & 0x0f == 0 { None } else { Some((coord(g(i), g(i + 1), fw), coord(g(i + 2), g(i + 3), fh))) };
    let det = Detection {
        x: coord(g(0), g(1), fw),
        y: coord(g(2), g(3), fh),
        w: coord(g(4), g(5), fw).abs(),
        h: coord(g(6), g(7), fh).abs(),
        left_eye: point(8),
        right_eye: point(12),
        nose: point(16),
        mouth_left: point(20),
        mouth_right: point(24),
        confidence: coord(g(28), g(29), 1.0),
    };
    let opts = ExtractOptions {
        align,
        expand_percentage: (p[6] % 101) as f64,
        border_top: if align { top as i64 } else { 0 },
        border_left: if align { left as i64 } else { 0 },
        original_width: w as i64,
        original_height: h as i64,
    };
    let source = if align { &sub } else { &img };
    let Ok(faces) = extract_faces(source, &[det.clone(), det], &opts) else { return };
    for face in &faces {
        assert!(face.face.width > 0 && face.face.height > 0 && face.face.channels == 3);
        assert!(face.area.w <= w as i64 && face.area.h <= h as i64);
    }
    let crops: Vec<Image> = faces.into_iter().map(|f| f.face).collect();
    let spec = TensorSpec {
        width: 1 + (p[3] % 64) as u32,
        height: 1 + (p[4] % 64) as u32,
        layout: if p[2] & 0x80 == 0 { Layout::Nchw } else { Layout::Nhwc },
        channel_order: if p[2] & 0x40 == 0 { ChannelOrder::Rgb } else { ChannelOrder::Bgr },
        preprocess: if p[7] & 0x80 == 0 { Preprocess::DeepfaceFloat } else { Preprocess::Uint8Truncate },
        normalization: NORMS[(p[8] % 7) as usize],
        letterbox: if p[9] & 0x80 == 0 { Letterbox::Float } else { Letterbox::Uint8 },
    };
    let tensor = faces_to_tensor(&crops, &spec).unwrap();
    assert_eq!(tensor.len(), crops.len() * (spec.width * spec.height * 3) as usize);
    if spec.preprocess == Preprocess::Uint8Truncate {
        assert!(tensor.iter().all(|v| (0.0..=255.0).contains(v) && v.fract() == 0.0), "uint8 inputs are integers in range");
    }
});
