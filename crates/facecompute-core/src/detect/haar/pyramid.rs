//! The pixel work of the cascade, private to it until the shared `pixels` module has OpenCV-exact
//! equivalents: BGR to grey, the pyramid's INTER_LINEAR_EXACT resize and the integral images.
//! Each reproduces OpenCV 4.x bit for bit; the parity fixture checks it end to end.

/// cvtColor(COLOR_BGR2GRAY) on 8-bit data: OpenCV's fixed point with 14 fractional bits.
pub fn bgr_to_gray_cascade(bgr: &[u8], width: usize, height: usize, channels: usize) -> Vec<u8> {
    const B2Y: u32 = 1868;
    const G2Y: u32 = 9617;
    const R2Y: u32 = 4899;
    const HALF: u32 = 1 << 13;
    let n = width * height;
    if channels == 1 {
        return bgr[..n].to_vec();
    }
    let mut out = vec![0u8; n];
    for (o, px) in out.iter_mut().zip(bgr.chunks_exact(channels)) {
        *o = ((px[0] as u32 * B2Y + px[1] as u32 * G2Y + px[2] as u32 * R2Y + HALF) >> 14) as u8;
    }
    out
}

/// Source index and right-hand weight (8 fractional bits) of every destination column or row, and
/// the range `[lo, hi)` of destinations that interpolate; outside it OpenCV replicates the edge.
struct Axis {
    ofs: Vec<usize>,
    c1: Vec<u32>,
    lo: usize,
    hi: usize,
}

/// OpenCV's `interpolationLinear::getCoeffs` for the bit-exact resize: the mapping is computed in
/// (soft) double with no fused operations, and the weight is rounded half to even to 1/256.
fn axis(src: usize, dst: usize) -> Axis {
    let inv_scale = dst as f64 / src as f64;
    let scale = 1.0 / inv_scale;
    let mut ofs = vec![0usize; dst];
    let mut c1 = vec![0u32; dst];
    let (mut lo, mut hi) = (0usize, dst);
    for d in 0..dst {
        let f = scale * (d as f64 + 0.5) - 0.5;
        let i = f.floor();
        if i >= 0.0 && src > 1 {
            let i = i as usize;
            if i < src - 1 {
                ofs[d] = i;
                c1[d] = ((f - i as f64) * 256.0).round_ties_even() as u32;
            } else {
                ofs[d] = src - 1;
                hi = hi.min(d);
            }
        } else {
            lo = lo.max(d + 1);
        }
    }
    Axis { ofs, c1, lo, hi }
}

fn h_line(src: &[u8], ax: &Axis, out: &mut [u32]) {
    let dst_w = out.len();
    let first = (src[0] as u32) << 8;
    let last = (src[src.len() - 1] as u32) << 8;
    for d in 0..ax.lo.min(dst_w) {
        out[d] = first;
    }
    for d in ax.lo..ax.hi {
        let o = ax.ofs[d];
        let c1 = ax.c1[d];
        out[d] = (256 - c1) * src[o] as u32 + c1 * src[o + 1] as u32;
    }
    for d in ax.hi.max(ax.lo)..dst_w {
        out[d] = last;
    }
}

/// cv::resize(..., INTER_LINEAR_EXACT) of a single-channel 8-bit image, as the cascade calls it for
/// every pyramid level (FeatureEvaluator::setImage), including OpenCV's shortcuts: same size is a
/// copy, and an exact 2x reduction goes to the INTER_AREA fast path, which gives the same result
/// with a different rounding.
pub fn resize_linear_exact_cascade(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u8> {
    if dw == sw && dh == sh {
        return src[..sw * sh].to_vec();
    }
    let mut dst = vec![0u8; dw * dh];
    if dw * 2 == sw && dh * 2 == sh {
        for y in 0..dh {
            let r0 = &src[2 * y * sw..];
            let r1 = &src[(2 * y + 1) * sw..];
            for x in 0..dw {
                let s = r0[2 * x] as u32 + r0[2 * x + 1] as u32 + r1[2 * x] as u32 + r1[2 * x + 1] as u32;
                dst[y * dw + x] = ((s + 2) >> 2) as u8;
            }
        }
        return dst;
    }
    let ax = axis(sw, dw);
    let ay = axis(sh, dh);
    let mut h0 = vec![0u32; dw];
    let mut h1 = vec![0u32; dw];
    let mut cached: [usize; 2] = [usize::MAX, usize::MAX];
    let edge = |h: &[u32], row: &mut [u8]| {
        for (o, &v) in row.iter_mut().zip(h) {
            *o = ((v + 128) >> 8).min(255) as u8;
        }
    };
    for y in 0..dh {
        let row = &mut dst[y * dw..(y + 1) * dw];
        if y < ay.lo || y >= ay.hi.max(ay.lo) {
            let sy = if y < ay.lo { 0 } else { sh - 1 };
            h_line(&src[sy * sw..(sy + 1) * sw], &ax, &mut h0);
            cached = [usize::MAX, usize::MAX];
            edge(&h0, row);
            continue;
        }
        let sy = ay.ofs[y];
        // Consecutive destination rows mostly share source rows: reuse the horizontal pass.
        if cached[0] != sy {
            if cached[1] == sy {
                std::mem::swap(&mut h0, &mut h1);
            } else {
                h_line(&src[sy * sw..(sy + 1) * sw], &ax, &mut h0);
            }
            h_line(&src[(sy + 1) * sw..(sy + 2) * sw], &ax, &mut h1);
            cached = [sy, sy + 1];
        }
        let c1 = ay.c1[y];
        let c0 = 256 - c1;
        for ((o, &a), &b) in row.iter_mut().zip(&h0).zip(&h1) {
            *o = ((a * c0 + b * c1 + (1 << 15)) >> 16).min(255) as u8;
        }
    }
    dst
}

/// Integral and squared integral images, (w+1)x(h+1) with a zero first row and column. OpenCV's
/// cascade keeps both in 32-bit ints that wrap on large images; window differences are still exact
/// modulo 2^32, so wrapping arithmetic here gives the same values it reads.
pub fn integrals(img: &[u8], w: usize, h: usize, sum: &mut Vec<i32>, sq: &mut Vec<u32>) {
    let stride = w + 1;
    sum.clear();
    sum.resize(stride * (h + 1), 0);
    sq.clear();
    sq.resize(stride * (h + 1), 0);
    for y in 0..h {
        let src = &img[y * w..(y + 1) * w];
        let (prev_s, cur_s) = sum.split_at_mut((y + 1) * stride);
        let prev_s = &prev_s[y * stride..];
        let (prev_q, cur_q) = sq.split_at_mut((y + 1) * stride);
        let prev_q = &prev_q[y * stride..];
        let mut s: i32 = 0;
        let mut q: u32 = 0;
        for x in 0..w {
            let v = src[x] as i32;
            s = s.wrapping_add(v);
            q = q.wrapping_add((v * v) as u32);
            cur_s[x + 1] = prev_s[x + 1].wrapping_add(s);
            cur_q[x + 1] = prev_q[x + 1].wrapping_add(q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_uses_opencv_fixed_point() {
        // (b*1868 + g*9617 + r*4899 + 8192) >> 14; values checked against cv2.cvtColor.
        let px = [10u8, 200, 30, 255, 255, 255, 0, 0, 0, 1, 2, 3];
        assert_eq!(bgr_to_gray_cascade(&px, 4, 1, 3), vec![128, 255, 0, 2]);
    }

    #[test]
    fn resize_same_size_is_copy_and_2x_is_area() {
        let img: Vec<u8> = (0..16).map(|v| v as u8 * 10).collect();
        assert_eq!(resize_linear_exact_cascade(&img, 4, 4, 4, 4), img);
        // Mean of each 2x2 block, rounded half up.
        assert_eq!(resize_linear_exact_cascade(&img, 4, 4, 2, 2), vec![25, 45, 105, 125]);
    }

    #[test]
    fn resize_linear_exact_known_values() {
        // 3 -> 2 columns: scale 1.5, source x = 0.25 and 1.75; weights 64/256 and 192/256.
        let img = vec![0u8, 100, 200];
        let out = resize_linear_exact_cascade(&img, 3, 1, 2, 1);
        // 0*192+100*64 = 6400 (8 fractional bits) -> 25; 100*64+200*192 = 44800 -> 175.
        assert_eq!(out, vec![25, 175]);
    }

    #[test]
    fn integrals_match_direct_sums() {
        let img: Vec<u8> = (0..20).map(|v| (v * 37 % 256) as u8).collect();
        let (mut s, mut q) = (Vec::new(), Vec::new());
        integrals(&img, 5, 4, &mut s, &mut q);
        let direct: i32 = img[6..9].iter().chain(&img[11..14]).map(|&v| v as i32).sum();
        // Rows 1..3, columns 1..4.
        let at = |y: usize, x: usize| s[y * 6 + x];
        assert_eq!(at(3, 4) - at(1, 4) - at(3, 1) + at(1, 1), direct);
        let dq: u32 = img.iter().map(|&v| v as u32 * v as u32).sum();
        assert_eq!(q[4 * 6 + 5], dq);
    }
}
