//! Private OpenCV-faithful `cv::resize(INTER_LINEAR)` for 8-bit images, used only by the detectors'
//! preprocessing until the shared pixel op (crates/facecompute-core/src/pixels) lands; then the
//! detectors switch to it and this file goes.
//!
//! Why reimplement instead of a generic bilinear: detector scores near the 0.9 threshold flip with
//! one-level pixel differences, so the coordinate mapping, the 11-bit fixed-point weights and the
//! rounding of OpenCV's vectorised vertical pass are reproduced, plus its rule that an exact 2x
//! downscale in both axes is done as INTER_AREA.

use crate::error::{CoreError, CoreResult};
use crate::pixels::Image;

const COEF_BITS: i32 = 11;
const COEF_SCALE: i32 = 1 << COEF_BITS;

/// How the destination size and the coordinate scale are given, as in the two forms of `cv2.resize`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ResizeSpec {
    /// `cv2.resize(img, (w, h))`: the scale is src/dst per axis.
    Size { width: u32, height: u32 },
    /// `cv2.resize(img, None, fx=f, fy=f)`: the size is `round(src * f)` and the scale is exactly `1/f`,
    /// which differs from src/dst when the product is not an integer.
    Factor { fx: f64, fy: f64 },
}

fn cv_round(v: f64) -> i64 {
    v.round_ties_even() as i64
}

struct Axis {
    ofs: Vec<usize>,
    /// Weight pairs (w0, w1) summing to 2048.
    w: Vec<[i32; 2]>,
}

fn axis(src: usize, dst: usize, scale: f64) -> Axis {
    let mut ofs = Vec::with_capacity(dst);
    let mut w = Vec::with_capacity(dst);
    for d in 0..dst {
        // OpenCV computes the source coordinate in double and truncates to float before flooring.
        let mut f = ((d as f64 + 0.5) * scale - 0.5) as f32;
        let mut s = f.floor() as i64;
        f -= s as f32;
        if s < 0 {
            f = 0.0;
            s = 0;
        }
        if s >= src as i64 - 1 {
            f = 0.0;
            s = src as i64 - 1;
        }
        let w0 = ((1.0f32 - f) * COEF_SCALE as f32).round_ties_even() as i32;
        ofs.push(s as usize);
        w.push([w0, COEF_SCALE - w0]);
    }
    Axis { ofs, w }
}

fn area_2x(img: &Image, dw: usize, dh: usize) -> Image {
    let c = img.channels as usize;
    let stride = img.stride();
    let mut out = vec![0u8; dw * dh * c];
    for y in 0..dh {
        let r0 = &img.data[2 * y * stride..];
        let r1 = &img.data[(2 * y + 1) * stride..];
        for x in 0..dw {
            for k in 0..c {
                let i = 2 * x * c + k;
                let s = r0[i] as u32 + r0[i + c] as u32 + r1[i] as u32 + r1[i + c] as u32;
                out[(y * dw + x) * c + k] = ((s + 2) >> 2) as u8;
            }
        }
    }
    Image { width: dw as u32, height: dh as u32, channels: img.channels, data: out }
}

pub(crate) fn resize_linear(img: &Image, spec: ResizeSpec) -> CoreResult<Image> {
    let (sw, sh) = (img.width as usize, img.height as usize);
    let c = img.channels as usize;
    if sw == 0 || sh == 0 || img.data.len() != sw * sh * c || !(c == 1 || c == 3) {
        return Err(CoreError::invalid_image("resize: malformed source image"));
    }
    let (dw, dh, inv_x, inv_y) = match spec {
        ResizeSpec::Size { width, height } => {
            let (dw, dh) = (width as usize, height as usize);
            (dw, dh, dw as f64 / sw as f64, dh as f64 / sh as f64)
        }
        ResizeSpec::Factor { fx, fy } => {
            if !(fx.is_finite() && fy.is_finite() && fx > 0.0 && fy > 0.0) {
                return Err(CoreError::invalid_request("resize: scale factors must be positive"));
            }
            let dw = cv_round(sw as f64 * fx);
            let dh = cv_round(sh as f64 * fy);
            (dw.max(0) as usize, dh.max(0) as usize, fx, fy)
        }
    };
    if dw == 0 || dh == 0 || dw > 1 << 15 || dh > 1 << 15 {
        return Err(CoreError::invalid_request("resize: destination size out of range"));
    }
    let (scale_x, scale_y) = (1.0 / inv_x, 1.0 / inv_y);
    let is_int = |s: f64| (s - s.round()).abs() < f64::EPSILON;
    if is_int(scale_x) && is_int(scale_y) && scale_x.round() == 2.0 && scale_y.round() == 2.0 && dw * 2 <= sw && dh * 2 <= sh {
        return Ok(area_2x(img, dw, dh));
    }
    let ax = axis(sw, dw, scale_x);
    let ay = axis(sh, dh, scale_y);
    let stride = img.stride();
    let row_len = dw * c;
    // Horizontal pass results are exact integers (value * 2048), cached per source row.
    let hrow = |sy: usize, buf: &mut Vec<i32>| {
        let src = &img.data[sy * stride..(sy + 1) * stride];
        for x in 0..dw {
            let sx = ax.ofs[x];
            let [a0, a1] = ax.w[x];
            let sx1 = if sx + 1 < sw { sx + 1 } else { sx };
            for k in 0..c {
                buf[x * c + k] = src[sx * c + k] as i32 * a0 + src[sx1 * c + k] as i32 * a1;
            }
        }
    };
    let mut out = vec![0u8; row_len * dh];
    let mut r0 = vec![0i32; row_len];
    let mut r1 = vec![0i32; row_len];
    let (mut c0, mut c1) = (usize::MAX, usize::MAX);
    for y in 0..dh {
        let sy = ay.ofs[y];
        let sy1 = if sy + 1 < sh { sy + 1 } else { sy };
        if c0 != sy {
            if c1 == sy {
                std::mem::swap(&mut r0, &mut r1);
                c0 = sy;
                c1 = usize::MAX;
            } else {
                hrow(sy, &mut r0);
                c0 = sy;
            }
        }
        if c1 != sy1 {
            hrow(sy1, &mut r1);
            c1 = sy1;
        }
        let [b0, b1] = ay.w[y];
        let dst = &mut out[y * row_len..(y + 1) * row_len];
        for i in 0..row_len {
            // The SIMD path of VResizeLinear (what x86 builds run): 16-bit high multiplies, then a
            // rounding shift by 2 with unsigned saturation.
            let t0 = ((r0[i] >> 4) as i16 as i32 * b0) >> 16;
            let t1 = ((r1[i] >> 4) as i16 as i32 * b1) >> 16;
            dst[i] = ((t0 + t1 + 2) >> 2).clamp(0, 255) as u8;
        }
    }
    Ok(Image { width: dw as u32, height: dh as u32, channels: img.channels, data: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(w: u32, h: u32, c: u32, f: impl Fn(u32, u32, u32) -> u8) -> Image {
        let mut d = Vec::new();
        for y in 0..h {
            for x in 0..w {
                for k in 0..c {
                    d.push(f(x, y, k));
                }
            }
        }
        Image::from_raw(w, h, c, d).unwrap()
    }

    #[test]
    fn identity_size_keeps_pixels() {
        let a = img(7, 5, 3, |x, y, k| (x * 31 + y * 7 + k * 50) as u8);
        let b = resize_linear(&a, ResizeSpec::Size { width: 7, height: 5 }).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn exact_half_is_area_average() {
        let a = img(4, 2, 1, |x, y, _| [[0u8, 1, 10, 20], [2, 2, 30, 41]][y as usize][x as usize]);
        let b = resize_linear(&a, ResizeSpec::Factor { fx: 0.5, fy: 0.5 }).unwrap();
        assert_eq!((b.width, b.height), (2, 1));
        // (0+1+2+2+2)>>2 = 1, (10+20+30+41+2)>>2 = 25
        assert_eq!(b.data, vec![1, 25]);
    }

    #[test]
    fn upscale_constant_stays_constant_and_size_rounds() {
        let a = img(3, 3, 3, |_, _, _| 200);
        let b = resize_linear(&a, ResizeSpec::Factor { fx: 2.5, fy: 2.5 }).unwrap();
        // round(7.5) ties to even = 8
        assert_eq!((b.width, b.height), (8, 8));
        assert!(b.data.iter().all(|&v| v == 200));
    }

    #[test]
    fn upscale_interpolates_between_neighbours() {
        let a = img(2, 1, 1, |x, _, _| if x == 0 { 0 } else { 200 });
        let b = resize_linear(&a, ResizeSpec::Size { width: 4, height: 1 }).unwrap();
        // Source coordinates -0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
        assert_eq!(b.data, vec![0, 50, 150, 200]);
    }

    #[test]
    fn malformed_input_is_an_error() {
        let a = Image { width: 3, height: 3, channels: 3, data: vec![0; 5] };
        assert!(resize_linear(&a, ResizeSpec::Size { width: 2, height: 2 }).is_err());
        let a = img(3, 3, 3, |_, _, _| 1);
        assert!(resize_linear(&a, ResizeSpec::Factor { fx: f64::NAN, fy: 1.0 }).is_err());
        assert!(resize_linear(&a, ResizeSpec::Size { width: 0, height: 2 }).is_err());
    }
}
