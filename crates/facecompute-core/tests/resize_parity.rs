//! Every resize mode against cv2 4.11.0 on random noise (fixtures/resize, from
//! tools/reference/opencv_resize.py): 8-bit results are bit-exact, and so are float64 ones except
//! where cv2 hands them to IPP. The cascade's INTER_LINEAR_EXACT resize is checked on every SIMD
//! kernel this CPU has.

mod common;
use common::fixtures;
use facecompute_core::detect::haar::{resize_linear_exact_cascade_roi, Roi};
use facecompute_core::pixels::{resize, resize_factor, resize_linear_f64, Image, ImageF64, Interpolation};
use facecompute_core::simd::Kernel;

/// splitmix64's top byte per draw, as the generator draws it.
fn noise(mut s: u64, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 56) as u8
        })
        .collect()
}

enum Dst {
    Size(u32, u32),
    Factor(f64, f64),
}

fn first_diff<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} values, want {}", got.len(), want.len()));
    }
    let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    Some(format!("{n} values differ, first at {i}: {:?}, want {:?}", got[i], want[i]))
}

/// cv2's output as the fixture writes it: two hex digits a byte.
fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn every_resize_mode_is_bit_exact_against_cv2() {
    let dir = fixtures().join("resize");
    let table = std::fs::read_to_string(dir.join("cases.tsv")).unwrap();
    let mut failures = Vec::new();
    let mut count = 0;
    let mut ipp_worst = 0f64;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let num = |i: usize| f[i].parse::<u32>().unwrap();
        let (mode, sw, sh, cn) = (f[0], num(1), num(2), num(3));
        let pixels = noise(f[4].parse().unwrap(), (sw * sh * cn) as usize);
        let dst = match f[5].split_once('x') {
            Some((w, h)) => Dst::Size(w.parse().unwrap(), h.parse().unwrap()),
            None => {
                let (x, y) = f[5].split_once(',').unwrap();
                Dst::Factor(x.parse().unwrap(), y.parse().unwrap())
            }
        };
        let expected = hex(f[6]);
        let want = &expected[..];
        count += 1;
        let mut check = |label: String, diff: Option<String>| {
            if let Some(d) = diff {
                failures.push(format!("{label}: {d}"));
            }
        };
        let img = Image::from_raw(sw, sh, cn, pixels).unwrap();
        match (mode, dst) {
            ("linear_exact", Dst::Size(dw, dh)) => {
                for k in Kernel::supported() {
                    let mut got = Vec::new();
                    let (dw, dh) = (dw as usize, dh as usize);
                    resize_linear_exact_cascade_roi(k, &img.data, sw as usize, sh as usize, dw, dh, Roi::full(dw, dh), &mut got);
                    check(format!("{line} [{}]", k.as_str()), first_diff(&got, want));
                }
            }
            ("linear_f64", Dst::Size(dw, dh)) => {
                let fimg = ImageF64 { width: sw, height: sh, channels: cn, data: img.data.iter().map(|&v| v as f64 / 255.0).collect() };
                let got = resize_linear_f64(&fimg, dw, dh).unwrap();
                let want: Vec<f64> = want.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
                if sw >= 2 && sh >= 2 {
                    // cv2 ran IPP here, which weighs in float64; we run OpenCV's own float32 weights.
                    assert_eq!(got.data.len(), want.len(), "{line}");
                    let max = got.data.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f64, f64::max);
                    ipp_worst = ipp_worst.max(max);
                    check(line.to_string(), (max > 1e-6).then(|| format!("max abs diff {max:e}")));
                } else {
                    let got: Vec<u64> = got.data.iter().map(|v| v.to_bits()).collect();
                    let want: Vec<u64> = want.iter().map(|v| v.to_bits()).collect();
                    check(line.to_string(), first_diff(&got, &want));
                }
            }
            (m, dst) => {
                let interp = match m {
                    "linear" => Interpolation::Linear,
                    "cubic" => Interpolation::Cubic,
                    "area" => Interpolation::Area,
                    other => panic!("unknown mode {other}"),
                };
                let got = match dst {
                    Dst::Size(dw, dh) => resize(&img, dw, dh, interp),
                    Dst::Factor(fx, fy) => resize_factor(&img, fx, fy, interp),
                }
                .unwrap();
                check(line.to_string(), first_diff(&got.data, want));
            }
        }
    }
    assert!(count >= 150, "only {count} cases");
    println!("{count} cases; float64 resizes that IPP runs: worst abs diff {ipp_worst:e}");
    assert!(failures.is_empty(), "{} of {count} cases differ from cv2:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn bad_sizes_and_factors_are_errors() {
    let img = Image::from_raw(3, 3, 3, vec![7; 27]).unwrap();
    assert!(resize(&img, 0, 2, Interpolation::Linear).is_err());
    assert!(resize(&Image { width: 3, height: 3, channels: 3, data: vec![0; 5] }, 2, 2, Interpolation::Linear).is_err());
    for f in [f64::NAN, f64::INFINITY, 0.0, -1.0, 0.1, 1e5] {
        assert!(resize_factor(&img, f, 1.0, Interpolation::Linear).is_err(), "fx {f}");
    }
    // round(3 * 2.5) = round(7.5) = 8: cv2 rounds half to even.
    let up = resize_factor(&img, 2.5, 2.5, Interpolation::Linear).unwrap();
    assert_eq!((up.width, up.height), (8, 8));
    assert!(up.data.iter().all(|&v| v == 7));
}
