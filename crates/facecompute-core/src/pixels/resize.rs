//! `cv2.resize` reproduced for 8-bit images (INTER_LINEAR, INTER_CUBIC, INTER_AREA) and for the
//! float64 linear path DeepFace's `resize_image` takes on faces it has already divided by 255.
//!
//! OpenCV (4.9 to 4.11, x86-64 wheels, SSE3 baseline) computes 8-bit resizes in fixed point: 11-bit
//! coefficients rounded from float32, an int32 horizontal pass, then a vertical pass. Its linear
//! vertical pass rounds one way everywhere; the cubic one rounds its SIMD body (float32) and scalar
//! tail (integer) differently, so the split point is reproduced. The results are bit-exact against
//! tests/fixtures/resize (tools/reference/opencv_resize.py).

use super::Image;
use super::Interpolation;
use crate::error::{CoreError, CoreResult};

const COEF_BITS: u32 = 11;
const COEF_SCALE: f32 = (1 << COEF_BITS) as f32;

/// A float image (interleaved), the intermediate of DeepFace's float preprocessing.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageF64 {
    pub width: u32,
    pub height: u32,
    pub channels: u32,
    pub data: Vec<f64>,
}

/// Per-axis interpolation taps: first source index (in pixels) and `ksize` float32 weights.
struct Taps {
    ofs: Vec<i32>,
    coef: Vec<f32>,
    ksize: usize,
}

#[inline]
fn cubic_coeffs(x: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let c0 = ((A * (x + 1.0) - 5.0 * A) * (x + 1.0) + 8.0 * A) * (x + 1.0) - 4.0 * A;
    let c1 = ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let c2 = ((A + 2.0) * (1.0 - x) - (A + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0;
    [c0, c1, c2, 1.0 - c0 - c1 - c2]
}

pub(crate) fn cubic_coeffs_pub(x: f32) -> [f32; 4] {
    cubic_coeffs(x)
}

/// OpenCV's tap computation (`resizeGeneric` set-up) for one axis. `clamp_edges` is the x-axis
/// behaviour (linear taps that fall outside are pinned with a zero fraction); the y-axis leaves
/// them and relies on row clipping, which gives the same values.
fn taps(ssize: usize, dsize: usize, inv_scale: f64, interp: Interpolation, clamp_edges: bool) -> Taps {
    let scale = 1.0 / inv_scale;
    let area = interp == Interpolation::Area;
    let ksize = if interp == Interpolation::Cubic { 4 } else { 2 };
    let ksize2 = ksize as i32 / 2;
    let mut ofs = Vec::with_capacity(dsize);
    let mut coef = Vec::with_capacity(dsize * ksize);
    for d in 0..dsize {
        let (mut s, mut f);
        if !area {
            f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            s = f.floor() as i32;
            f -= s as f32;
        } else {
            s = (d as f64 * scale).floor() as i32;
            f = ((d + 1) as f64 - (s + 1) as f64 * inv_scale) as f32;
            f = if f <= 0.0 { 0.0 } else { f - f.floor() };
        }
        if clamp_edges && interp != Interpolation::Cubic {
            if s < ksize2 - 1 && s < 0 {
                f = 0.0;
                s = 0;
            }
            if s + ksize2 >= ssize as i32 && s >= ssize as i32 - 1 {
                f = 0.0;
                s = ssize as i32 - 1;
            }
        }
        ofs.push(s);
        if interp == Interpolation::Cubic {
            coef.extend_from_slice(&cubic_coeffs(f));
        } else {
            coef.push(1.0 - f);
            coef.push(f);
        }
    }
    Taps { ofs, coef, ksize }
}

#[inline]
fn round_i16(v: f32) -> i16 {
    v.round_ties_even().clamp(i16::MIN as f32, i16::MAX as f32) as i16
}

#[inline]
fn clip(v: i32, n: usize) -> usize {
    v.clamp(0, n as i32 - 1) as usize
}

fn check(img_w: u32, img_h: u32, channels: u32, len: usize, w: u32, h: u32) -> CoreResult<()> {
    if w == 0 || h == 0 || img_w == 0 || img_h == 0 {
        return Err(CoreError::invalid_request("resize needs non-empty source and destination sizes"));
    }
    if channels == 0 || len != img_w as usize * img_h as usize * channels as usize {
        return Err(CoreError::invalid_request("image buffer does not match its dimensions"));
    }
    Ok(())
}

/// OpenCV's integer scale test: the scale (1 / inv_scale) of both axes within DBL_EPSILON of an
/// integer, rounded as `saturate_cast<int>` does.
fn integer_scale(inv_x: f64, inv_y: f64) -> Option<(usize, usize)> {
    let (sx, sy) = (1.0 / inv_x, 1.0 / inv_y);
    let (ix, iy) = (sx.round_ties_even(), sy.round_ties_even());
    ((sx - ix).abs() < f64::EPSILON && (sy - iy).abs() < f64::EPSILON).then_some((ix as usize, iy as usize))
}

/// `cv2.resize(img, (width, height), interpolation=interp)` on an 8-bit image: the scale of each
/// axis is dst/src.
pub fn resize(img: &Image, width: u32, height: u32, interp: Interpolation) -> CoreResult<Image> {
    check(img.width, img.height, img.channels, img.data.len(), width, height)?;
    resize_scaled(img, width, height, width as f64 / img.width as f64, height as f64 / img.height as f64, interp)
}

/// `cv2.resize(img, None, fx=fx, fy=fy, interpolation=interp)`: the size is `round(src * f)` and
/// the scale exactly `f`, which differs from dst/src when `src * f` is not an integer.
pub fn resize_factor(img: &Image, fx: f64, fy: f64, interp: Interpolation) -> CoreResult<Image> {
    if !(fx.is_finite() && fy.is_finite() && fx > 0.0 && fy > 0.0) {
        return Err(CoreError::invalid_request("resize: scale factors must be positive"));
    }
    let (dw, dh) = ((img.width as f64 * fx).round_ties_even(), (img.height as f64 * fy).round_ties_even());
    if !(1.0..=MAX_SIDE).contains(&dw) || !(1.0..=MAX_SIDE).contains(&dh) {
        return Err(CoreError::invalid_request("resize: destination size out of range"));
    }
    check(img.width, img.height, img.channels, img.data.len(), dw as u32, dh as u32)?;
    resize_scaled(img, dw as u32, dh as u32, fx, fy, interp)
}

/// Largest destination side [`resize_factor`] accepts.
const MAX_SIDE: f64 = (1 << 15) as f64;

/// OpenCV's dispatch (`cv::resize` and `hal::resize`): same size is a copy, an exact 2x linear
/// downscale is an area average, INTER_AREA is a true area average only when both axes shrink.
fn resize_scaled(img: &Image, width: u32, height: u32, inv_x: f64, inv_y: f64, interp: Interpolation) -> CoreResult<Image> {
    if (width, height) == (img.width, img.height) {
        return Ok(img.clone());
    }
    let int_scale = integer_scale(inv_x, inv_y);
    let interp = if interp == Interpolation::Linear && int_scale == Some((2, 2)) { Interpolation::Area } else { interp };
    if interp == Interpolation::Area && 1.0 / inv_x >= 1.0 && 1.0 / inv_y >= 1.0 {
        return Ok(match int_scale {
            Some((fx, fy)) => area_fast_u8(img, width, height, fx, fy),
            None => area_u8(img, width, height, 1.0 / inv_x, 1.0 / inv_y),
        });
    }
    Ok(separable_u8(img, width, height, inv_x, inv_y, interp))
}

fn separable_u8(img: &Image, width: u32, height: u32, inv_x: f64, inv_y: f64, interp: Interpolation) -> Image {
    let cn = img.channels as usize;
    let (sw, sh) = (img.width as usize, img.height as usize);
    let (dw, dh) = (width as usize, height as usize);
    let tx = taps(sw, dw, inv_x, interp, true);
    let ty = taps(sh, dh, inv_y, interp, false);
    let k = tx.ksize;
    let alpha: Vec<i16> = tx.coef.iter().map(|&c| round_i16(c * COEF_SCALE)).collect();
    let beta: Vec<i16> = ty.coef.iter().map(|&c| round_i16(c * COEF_SCALE)).collect();
    let row_len = dw * cn;
    let src_stride = sw * cn;

    // Horizontal pass of one source row into int32 (exact integer arithmetic, as OpenCV's SIMD).
    let hpass = |sy: usize, out: &mut [i32]| {
        let s = &img.data[sy * src_stride..(sy + 1) * src_stride];
        for dx in 0..dw {
            let sx = tx.ofs[dx];
            let a = &alpha[dx * k..dx * k + k];
            for c in 0..cn {
                let v: i32 = if k == 2 {
                    let x0 = sx as usize * cn + c;
                    if a[1] == 0 {
                        s[x0] as i32 * a[0] as i32
                    } else {
                        s[x0] as i32 * a[0] as i32 + s[x0 + cn] as i32 * a[1] as i32
                    }
                } else {
                    // Cubic: taps outside the row repeat the edge pixel of the same channel.
                    (0..4)
                        .map(|j| s[clip(sx - 1 + j as i32, sw) * cn + c] as i32 * a[j] as i32)
                        .sum()
                };
                out[dx * cn + c] = v;
            }
        }
    };

    let mut out = vec![0u8; dh * row_len];
    // Horizontally resized source rows, kept while neighbouring output rows still need them.
    let mut pool: Vec<(usize, Vec<i32>)> = Vec::with_capacity(k);
    let mut spare: Vec<Vec<i32>> = Vec::new();
    for dy in 0..dh {
        let b = &beta[dy * k..dy * k + k];
        let base = ty.ofs[dy] - if k == 4 { 1 } else { 0 };
        let mut sys = [0usize; 4];
        for (j, s) in sys.iter_mut().enumerate().take(k) {
            *s = clip(base + j as i32, sh);
        }
        let mut i = 0;
        while i < pool.len() {
            if sys[..k].contains(&pool[i].0) {
                i += 1;
            } else {
                spare.push(pool.swap_remove(i).1);
            }
        }
        for &sy in &sys[..k] {
            if !pool.iter().any(|(s, _)| *s == sy) {
                let mut r = spare.pop().unwrap_or_else(|| vec![0; row_len]);
                hpass(sy, &mut r);
                pool.push((sy, r));
            }
        }
        let find = |j: usize| -> &Vec<i32> { &pool.iter().find(|(s, _)| *s == sys[j]).expect("row in pool").1 };
        let rows: Vec<&Vec<i32>> = (0..k).map(find).collect();
        let d = &mut out[dy * row_len..(dy + 1) * row_len];
        if k == 2 {
            let (s0, s1) = (rows[0], rows[1]);
            let (b0, b1) = (b[0] as i32, b[1] as i32);
            for x in 0..row_len {
                // OpenCV's vector body and its scalar specialisation for 8-bit agree: (S >> 4) as
                // int16, the high half of the product with the 11-bit weight, a rounding shift by 2.
                let p0 = ((s0[x] >> 4).clamp(-32768, 32767) * b0) >> 16;
                let p1 = ((s1[x] >> 4).clamp(-32768, 32767) * b1) >> 16;
                d[x] = (((p0 + p1).clamp(-32768, 32767) + 2) >> 2).clamp(0, 255) as u8;
            }
        } else {
            let simd_end = row_len / 8 * 8;
            let scale = 1.0f32 / (COEF_SCALE * COEF_SCALE);
            let bf: [f32; 4] = [b[0] as f32 * scale, b[1] as f32 * scale, b[2] as f32 * scale, b[3] as f32 * scale];
            for x in 0..simd_end {
                // OpenCV's SIMD body converts to float32: S0*b0 + (S1*b1 + (S2*b2 + S3*b3)).
                let t3 = rows[3][x] as f32 * bf[3];
                let t2 = rows[2][x] as f32 * bf[2] + t3;
                let t1 = rows[1][x] as f32 * bf[1] + t2;
                let t0 = rows[0][x] as f32 * bf[0] + t1;
                d[x] = (t0.round_ties_even() as i32).clamp(0, 255) as u8;
            }
            for x in simd_end..row_len {
                let sum: i64 = (0..4).map(|j| rows[j][x] as i64 * b[j] as i64).sum();
                d[x] = ((sum + (1 << 21)) >> 22).clamp(0, 255) as u8;
            }
        }
    }
    Image { width, height, channels: img.channels, data: out }
}

/// OpenCV's integer-factor area average (`resizeAreaFast`). A whole 2x2 cell rounds half up (its
/// vector path, also taken by the scalar tail); other whole cells multiply by a float32 `1/area`
/// and round half to even; cells cut by the right or bottom edge (factor sizes) divide the sum of
/// the pixels they hold in float32.
fn area_fast_u8(img: &Image, width: u32, height: u32, fx: usize, fy: usize) -> Image {
    let cn = img.channels as usize;
    let (sw, sh) = (img.width as usize, img.height as usize);
    let stride = sw * cn;
    let (dw, dh) = (width as usize, height as usize);
    let halve = fx == 2 && fy == 2 && matches!(cn, 1 | 3 | 4);
    let scale = 1.0f32 / (fx * fy) as f32;
    let whole_cols = sw / fx;
    let mut out = vec![0u8; dw * dh * cn];
    for dy in 0..dh {
        let (y0, y1) = (dy * fy, (dy * fy + fy).min(sh));
        let whole_row = dy * fy + fy <= sh;
        for dx in 0..dw {
            let (x0, x1) = (dx * fx, (dx * fx + fx).min(sw));
            for c in 0..cn {
                let mut sum = 0u32;
                for y in y0..y1 {
                    for x in x0..x1 {
                        sum += img.data[y * stride + x * cn + c] as u32;
                    }
                }
                let v = if whole_row && dx < whole_cols {
                    if halve {
                        (sum + 2) >> 2
                    } else {
                        (sum as f32 * scale).round_ties_even() as u32
                    }
                } else {
                    (sum as f32 / ((y1 - y0) * (x1 - x0)) as f32).round_ties_even() as u32
                };
                out[(dy * dw + dx) * cn + c] = v.min(255) as u8;
            }
        }
    }
    Image { width, height, channels: img.channels, data: out }
}

/// One (destination, source, weight) entry of OpenCV's `computeResizeAreaTab`.
struct AreaTap {
    di: usize,
    si: usize,
    alpha: f32,
}

fn area_tab(ssize: usize, dsize: usize, scale: f64) -> Vec<AreaTap> {
    let mut tab = Vec::new();
    for d in 0..dsize {
        let f1 = d as f64 * scale;
        let f2 = f1 + scale;
        let cell = scale.min(ssize as f64 - f1);
        let mut s2 = (f2.floor() as i64).min(ssize as i64 - 1);
        let s1 = (f1.ceil() as i64).min(s2);
        if s2 < 0 {
            s2 = 0;
        }
        if s1 as f64 - f1 > 1e-3 {
            tab.push(AreaTap { di: d, si: (s1 - 1) as usize, alpha: ((s1 as f64 - f1) / cell) as f32 });
        }
        for s in s1..s2 {
            tab.push(AreaTap { di: d, si: s as usize, alpha: (1.0 / cell) as f32 });
        }
        if f2 - s2 as f64 > 1e-3 {
            tab.push(AreaTap { di: d, si: s2 as usize, alpha: ((f2 - s2 as f64).min(1.0).min(cell) / cell) as f32 });
        }
    }
    tab
}

/// OpenCV's general area downscale (`resizeArea`), accumulated in float32 in the same order.
fn area_u8(img: &Image, width: u32, height: u32, scale_x: f64, scale_y: f64) -> Image {
    let cn = img.channels as usize;
    let (sw, sh) = (img.width as usize, img.height as usize);
    let (dw, dh) = (width as usize, height as usize);
    let xtab = area_tab(sw, dw, scale_x);
    let ytab = area_tab(sh, dh, scale_y);
    let row_len = dw * cn;
    let mut out = vec![0u8; dh * row_len];
    let mut buf = vec![0f32; row_len];
    let mut sum = vec![0f32; row_len];
    let mut prev_dy: Option<usize> = None;
    let flush = |out: &mut [u8], dy: usize, sum: &[f32]| {
        for (o, s) in out[dy * row_len..(dy + 1) * row_len].iter_mut().zip(sum) {
            *o = (s.round_ties_even() as i32).clamp(0, 255) as u8;
        }
    };
    for t in &ytab {
        let s = &img.data[t.si * sw * cn..(t.si + 1) * sw * cn];
        buf.fill(0.0);
        for x in &xtab {
            for c in 0..cn {
                buf[x.di * cn + c] += s[x.si * cn + c] as f32 * x.alpha;
            }
        }
        if prev_dy != Some(t.di) {
            if let Some(p) = prev_dy {
                flush(&mut out, p, &sum);
            }
            for (a, b) in sum.iter_mut().zip(&buf) {
                *a = t.alpha * b;
            }
            prev_dy = Some(t.di);
        } else {
            for (a, b) in sum.iter_mut().zip(&buf) {
                *a += t.alpha * b;
            }
        }
    }
    if let Some(p) = prev_dy {
        flush(&mut out, p, &sum);
    }
    Image { width, height, channels: img.channels, data: out }
}

/// `cv2.resize(img, (width, height))` (INTER_LINEAR) on a float64 image, as DeepFace's
/// `resize_image` runs it on faces divided by 255, in OpenCV's own arithmetic: float32 weights,
/// float64 sums. x86 wheels hand sources with both sides >= 2 to IPP, which weighs in float64; the
/// two differ by up to ~1e-6.
pub fn resize_linear_f64(img: &ImageF64, width: u32, height: u32) -> CoreResult<ImageF64> {
    check(img.width, img.height, img.channels, img.data.len(), width, height)?;
    if (width, height) == (img.width, img.height) {
        return Ok(img.clone());
    }
    let (sw, sh) = (img.width as usize, img.height as usize);
    let (dw, dh) = (width as usize, height as usize);
    let cn = img.channels as usize;
    let (row_len, stride) = (dw * cn, sw * cn);
    if integer_scale(dw as f64 / sw as f64, dh as f64 / sh as f64) == Some((2, 2)) {
        // OpenCV's exact-2x shortcut to an area average, for every depth.
        let p = |y: usize, x: usize| img.data[y * stride + x];
        let data = (0..dh * row_len)
            .map(|i| {
                let (y, x) = (2 * (i / row_len), 2 * (i % row_len / cn) * cn + i % cn);
                (p(y, x) + p(y, x + cn) + p(y + 1, x) + p(y + 1, x + cn)) * 0.25
            })
            .collect();
        return Ok(ImageF64 { width, height, channels: img.channels, data });
    }
    let f32_taps = |ss: usize, ds: usize, clamp: bool| {
        let t = taps(ss, ds, ds as f64 / ss as f64, Interpolation::Linear, clamp);
        t.ofs.iter().enumerate().map(|(i, &o)| (clip(o, ss), clip(o + 1, ss), t.coef[2 * i] as f64, t.coef[2 * i + 1] as f64)).collect::<Vec<_>>()
    };
    let (tx, ty) = (f32_taps(sw, dw, true), f32_taps(sh, dh, false));
    let mix = |a: f64, b: f64, w0: f64, w1: f64| a * w0 + b * w1;
    let hpass = |sy: usize| -> Vec<f64> {
        let s = &img.data[sy * stride..(sy + 1) * stride];
        let mut o = vec![0f64; row_len];
        for (dx, &(x0, x1, w0, w1)) in tx.iter().enumerate() {
            for c in 0..cn {
                o[dx * cn + c] = mix(s[x0 * cn + c], s[x1 * cn + c], w0, w1);
            }
        }
        o
    };
    let rows: Vec<Option<Vec<f64>>> = {
        let mut need = vec![false; sh];
        for &(y0, y1, _, _) in &ty {
            need[y0] = true;
            need[y1] = true;
        }
        need.iter().enumerate().map(|(y, &n)| n.then(|| hpass(y))).collect()
    };
    let mut out = Vec::with_capacity(dh * row_len);
    for &(y0, y1, w0, w1) in &ty {
        let (r0, r1) = (rows[y0].as_ref().expect("row"), rows[y1].as_ref().expect("row"));
        out.extend(r0.iter().zip(r1).map(|(&a, &b)| mix(a, b, w0, w1)));
    }
    Ok(ImageF64 { width, height, channels: img.channels, data: out })
}
