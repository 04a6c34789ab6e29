//! The pixel work of the cascade, private to it until the shared `pixels` module has OpenCV-exact
//! equivalents: BGR to grey, the pyramid's INTER_LINEAR_EXACT resize and the integral images.
//! Each reproduces OpenCV 4.x bit for bit; the parity fixture checks it end to end. The hot loops
//! have AVX2 versions (`avx2`), used where the CPU has it, with the scalar code as the reference
//! and fallback.

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2;

use crate::simd::Kernel;

/// Whether the AVX2 pixel loops run for `kernel` (any x86 choice whose CPU has AVX2).
pub(super) fn use_avx2(kernel: Kernel) -> bool {
    cfg!(target_arch = "x86_64") && matches!(kernel, Kernel::Avx512 | Kernel::Avx2) && Kernel::Avx2.is_supported()
}

/// cvtColor(COLOR_BGR2GRAY) (or BGRA2GRAY) on 8-bit data: OpenCV's fixed point with 15 fractional
/// bits, the weights of `pixels::gray`.
pub fn bgr_to_gray_cascade(bgr: &[u8], width: usize, height: usize, channels: usize) -> Vec<u8> {
    gray_with(Kernel::best(), bgr, width, height, channels)
}

pub(super) fn gray_with(kernel: Kernel, bgr: &[u8], width: usize, height: usize, channels: usize) -> Vec<u8> {
    let n = width * height;
    if channels == 1 {
        return bgr[..n].to_vec();
    }
    let mut out = vec![0u8; n];
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if use_avx2(kernel) {
        // SAFETY: AVX2 was detected at run time (`use_avx2`).
        done = unsafe {
            match channels {
                3 => avx2::gray::<3>(bgr, &mut out),
                4 => avx2::gray::<4>(bgr, &mut out),
                _ => 0,
            }
        };
    }
    gray_scalar(&bgr[done * channels..], channels, &mut out[done..]);
    out
}

fn gray_scalar(bgr: &[u8], channels: usize, out: &mut [u8]) {
    use crate::pixels::gray::{B2Y, G2Y, R2Y, SHIFT};
    const HALF: u32 = 1 << (SHIFT - 1);
    for (o, px) in out.iter_mut().zip(bgr.chunks_exact(channels)) {
        *o = ((px[0] as u32 * B2Y + px[1] as u32 * G2Y + px[2] as u32 * R2Y + HALF) >> SHIFT) as u8;
    }
}

/// Source index and right-hand weight (8 fractional bits) of every destination column or row, and
/// the range `[lo, hi)` of destinations that interpolate; outside it OpenCV replicates the edge.
struct Axis {
    ofs: Vec<u32>,
    c1: Vec<u32>,
    lo: usize,
    hi: usize,
    /// For the vector horizontal pass, per destination in `[lo, hi)`, in blocks of four from `lo`:
    /// the byte-shuffle mask picking its two taps relative to its block's first tap, and its
    /// weight pair `(256 - c1) | c1 << 16`. Empty when some block's taps spread over more than
    /// sixteen bytes (shrinking by more than about 4.6).
    pair_mask: Vec<u32>,
    pair_w: Vec<u32>,
}

/// OpenCV's `interpolationLinear::getCoeffs` for the bit-exact resize: the mapping is computed in
/// (soft) double with no fused operations, and the weight is rounded half to even to 1/256.
fn axis(src: usize, dst: usize) -> Axis {
    let inv_scale = dst as f64 / src as f64;
    let scale = 1.0 / inv_scale;
    let mut ofs = vec![0u32; dst];
    let mut c1 = vec![0u32; dst];
    let (mut lo, mut hi) = (0usize, dst);
    for d in 0..dst {
        let f = scale * (d as f64 + 0.5) - 0.5;
        let i = f.floor();
        if i >= 0.0 && src > 1 {
            let i = i as usize;
            if i < src - 1 {
                ofs[d] = i as u32;
                c1[d] = ((f - i as f64) * 256.0).round_ties_even() as u32;
            } else {
                ofs[d] = (src - 1) as u32;
                hi = hi.min(d);
            }
        } else {
            lo = lo.max(d + 1);
        }
    }
    let hi_eff = hi.max(lo);
    let fits = (lo..hi_eff).step_by(4).all(|b| ofs[(b + 3).min(hi_eff - 1)] <= ofs[b] + 14);
    let (mut pair_mask, mut pair_w) = (Vec::new(), Vec::new());
    if fits {
        // Mask bytes: tap, 0x80 (zero), tap + 1, 0x80, leaving src[tap] | src[tap + 1] << 16.
        pair_mask = (lo..hi_eff).map(|d| (ofs[d] - ofs[lo + (d - lo) / 4 * 4]) * 0x0001_0001 + 0x8001_8000).collect();
        pair_w = (lo..hi_eff).map(|d| (256 - c1[d]) | c1[d] << 16).collect();
    }
    Axis { ofs, c1, lo, hi, pair_mask, pair_w }
}

/// The horizontal pass for destination columns `[x0, x0 + out.len())`: the replicated left edge,
/// the interpolated middle, the replicated right edge, each its own loop (no per-pixel branch).
fn h_line(kernel: Kernel, src: &[u8], ax: &Axis, x0: usize, out: &mut [u32]) {
    let x1 = x0 + out.len();
    let lo = ax.lo.clamp(x0, x1);
    let hi = ax.hi.max(ax.lo).clamp(lo, x1);
    let (left, rest) = out.split_at_mut(lo - x0);
    let (mid, right) = rest.split_at_mut(hi - lo);
    left.fill((src[0] as u32) << 8);
    right.fill((src[src.len() - 1] as u32) << 8);
    let (ofs, c1) = (&ax.ofs[lo..hi], &ax.c1[lo..hi]);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    // A non-empty middle starts at or after `ax.lo`.
    if use_avx2(kernel) && !ax.pair_mask.is_empty() && !mid.is_empty() {
        // The masks come in blocks of four from `ax.lo`: start at a block boundary.
        let skip = ((4 - (lo - ax.lo) % 4) % 4).min(mid.len());
        for ((o, &i), &c1) in mid[..skip].iter_mut().zip(ofs).zip(c1) {
            let i = i as usize;
            *o = (256 - c1) * src[i] as u32 + c1 * src[i + 1] as u32;
        }
        let at = lo + skip - ax.lo;
        let end = hi - ax.lo;
        // SAFETY: AVX2 was detected at run time (`use_avx2`).
        done = skip
            + unsafe { avx2::h_line_mid(src, &ofs[skip..], &ax.pair_mask[at..end], &ax.pair_w[at..end], &mut mid[skip..]) };
    }
    for ((o, &i), &c1) in mid[done..].iter_mut().zip(&ofs[done..]).zip(&c1[done..]) {
        // Below `hi`, `axis` keeps i + 1 inside the row.
        let i = i as usize;
        let pair = &src[i..i + 2];
        *o = (256 - c1) * pair[0] as u32 + c1 * pair[1] as u32;
    }
}

/// A rectangle of destination pixels, `[x0, x1) x [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roi {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl Roi {
    pub fn full(w: usize, h: usize) -> Self {
        Self { x0: 0, y0: 0, x1: w, y1: h }
    }
    pub fn width(&self) -> usize {
        self.x1 - self.x0
    }
    pub fn height(&self) -> usize {
        self.y1 - self.y0
    }
}

/// How the cascade's resize maps one axis: which source samples feed each destination sample.
enum Taps {
    Copy,
    Halve,
    Linear(Axis),
}

fn taps(sw: usize, sh: usize, dw: usize, dh: usize) -> (Taps, Taps) {
    if dw == sw && dh == sh {
        (Taps::Copy, Taps::Copy)
    } else if dw * 2 == sw && dh * 2 == sh {
        (Taps::Halve, Taps::Halve)
    } else {
        (Taps::Linear(axis(sw, dw)), Taps::Linear(axis(sh, dh)))
    }
}

/// Destination samples `[d0, d1)` that read any source sample in `[c0, c1)` (a superset: taps
/// with weight 0 count too). Every other destination sample only reads samples outside it.
fn reach(t: &Taps, src: usize, dst: usize, c0: usize, c1: usize) -> (usize, usize) {
    let range = |d: usize| -> (usize, usize) {
        match t {
            Taps::Copy => (d, d),
            Taps::Halve => (2 * d, 2 * d + 1),
            Taps::Linear(ax) if d < ax.lo => (0, 0),
            Taps::Linear(ax) if d < ax.hi => (ax.ofs[d] as usize, ax.ofs[d] as usize + 1),
            Taps::Linear(_) => (src - 1, src - 1),
        }
    };
    let hits = |d: usize| {
        let (a, b) = range(d);
        b >= c0 && a < c1
    };
    let d0 = (0..dst).find(|&d| hits(d)).unwrap_or(dst);
    let d1 = (d0..dst).rev().find(|&d| hits(d)).map_or(d0, |d| d + 1);
    (d0, d1)
}

/// The destination pixels of the cascade's resize `sw x sh -> dw x dh` that can differ from 0
/// when every source pixel outside `content` is 0: what the scan must look at.
pub fn content_reach(sw: usize, sh: usize, dw: usize, dh: usize, content: Roi) -> Roi {
    let (tx, ty) = taps(sw, sh, dw, dh);
    let (x0, x1) = reach(&tx, sw, dw, content.x0, content.x1);
    let (y0, y1) = reach(&ty, sh, dh, content.y0, content.y1);
    Roi { x0, y0, x1, y1 }
}

/// The bounding box of the non-zero pixels, or `None` when the image is black.
pub fn nonzero_bounds(img: &[u8], w: usize, h: usize) -> Option<Roi> {
    let row = |y: usize| &img[y * w..(y + 1) * w];
    let y0 = (0..h).find(|&y| first_nonzero(row(y)).is_some())?;
    let y1 = (y0..h).rev().find(|&y| first_nonzero(row(y)).is_some()).map_or(y0, |y| y) + 1;
    let (mut x0, mut x1) = (w, 0);
    for y in y0..y1 {
        let r = row(y);
        // Only columns outside the box so far can widen it.
        if let Some(a) = first_nonzero(&r[..x0]) {
            x0 = a;
        }
        if let Some(b) = last_nonzero(&r[x1.max(x0)..]) {
            x1 = x1.max(x0) + b + 1;
        }
    }
    Some(Roi { x0, y0, x1, y1 })
}

/// Blocks of bytes OR-ed together: a loop the compiler vectorizes, unlike a byte-wise `position`
/// that exits early (nonzero_bounds scans DeepFace's black border, three quarters of the image).
const BLOCK: usize = 64;

fn any_nonzero(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, &v| a | v) != 0
}

fn first_nonzero(r: &[u8]) -> Option<usize> {
    let mut blocks = r.chunks_exact(BLOCK);
    let mut at = 0;
    for b in &mut blocks {
        if any_nonzero(b) {
            return b.iter().position(|&v| v != 0).map(|i| at + i);
        }
        at += BLOCK;
    }
    blocks.remainder().iter().position(|&v| v != 0).map(|i| at + i)
}

fn last_nonzero(r: &[u8]) -> Option<usize> {
    let mut blocks = r.rchunks_exact(BLOCK);
    let mut end = r.len();
    for b in &mut blocks {
        if any_nonzero(b) {
            return b.iter().rposition(|&v| v != 0).map(|i| end - BLOCK + i);
        }
        end -= BLOCK;
    }
    blocks.remainder().iter().rposition(|&v| v != 0)
}

/// cv::resize(..., INTER_LINEAR_EXACT) of a single-channel 8-bit image, as the cascade calls it for
/// every pyramid level (FeatureEvaluator::setImage), including OpenCV's shortcuts: same size is a
/// copy, and an exact 2x reduction goes to the INTER_AREA fast path, which gives the same result
/// with a different rounding.
pub fn resize_linear_exact_cascade(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u8> {
    let mut dst = Vec::new();
    resize_linear_exact_cascade_roi(Kernel::best(), src, sw, sh, dw, dh, Roi::full(dw, dh), &mut dst);
    dst
}

/// Only the pixels of `roi` (inside `dw x dh`) of [`resize_linear_exact_cascade`], rows packed
/// into `dst`: each destination pixel depends on its own position alone, so they are the same
/// values as in the full resize.
#[allow(clippy::too_many_arguments)]
pub fn resize_linear_exact_cascade_roi(kernel: Kernel, src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize, roi: Roi, dst: &mut Vec<u8>) {
    let (rw, rh) = (roi.width(), roi.height());
    // Every pixel is written below, so only growth needs filling; levels come largest first,
    // so the reused buffer mostly shrinks (a clear() here memset every level).
    dst.truncate(rw * rh);
    dst.resize(rw * rh, 0);
    if rw == 0 || rh == 0 {
        return;
    }
    match taps(sw, sh, dw, dh) {
        (Taps::Copy, _) => {
            for (y, row) in (roi.y0..roi.y1).zip(dst.chunks_exact_mut(rw)) {
                row.copy_from_slice(&src[y * sw + roi.x0..y * sw + roi.x1]);
            }
        }
        (Taps::Halve, _) => {
            for (y, row) in (roi.y0..roi.y1).zip(dst.chunks_exact_mut(rw)) {
                let r0 = &src[2 * y * sw..];
                let r1 = &src[(2 * y + 1) * sw..];
                for (x, o) in (roi.x0..roi.x1).zip(row.iter_mut()) {
                    let s = r0[2 * x] as u32 + r0[2 * x + 1] as u32 + r1[2 * x] as u32 + r1[2 * x + 1] as u32;
                    *o = ((s + 2) >> 2) as u8;
                }
            }
        }
        (Taps::Linear(ax), Taps::Linear(ay)) => {
            let mut h0 = vec![0u32; rw];
            let mut h1 = vec![0u32; rw];
            let mut cached: [usize; 2] = [usize::MAX, usize::MAX];
            let edge = |h: &[u32], row: &mut [u8]| {
                for (o, &v) in row.iter_mut().zip(h) {
                    *o = ((v + 128) >> 8).min(255) as u8;
                }
            };
            for (y, row) in (roi.y0..roi.y1).zip(dst.chunks_exact_mut(rw)) {
                if y < ay.lo || y >= ay.hi.max(ay.lo) {
                    let sy = if y < ay.lo { 0 } else { sh - 1 };
                    h_line(kernel, &src[sy * sw..(sy + 1) * sw], &ax, roi.x0, &mut h0);
                    cached = [usize::MAX, usize::MAX];
                    edge(&h0, row);
                    continue;
                }
                let sy = ay.ofs[y] as usize;
                // Consecutive destination rows mostly share source rows: reuse the horizontal pass.
                if cached[0] != sy {
                    if cached[1] == sy {
                        std::mem::swap(&mut h0, &mut h1);
                    } else {
                        h_line(kernel, &src[sy * sw..(sy + 1) * sw], &ax, roi.x0, &mut h0);
                    }
                    h_line(kernel, &src[(sy + 1) * sw..(sy + 2) * sw], &ax, roi.x0, &mut h1);
                    cached = [sy, sy + 1];
                }
                let c1 = ay.c1[y];
                let c0 = 256 - c1;
                let mut done = 0;
                #[cfg(target_arch = "x86_64")]
                if use_avx2(kernel) {
                    // SAFETY: AVX2 was detected at run time (`use_avx2`).
                    done = unsafe { avx2::v_pass(&h0, &h1, c0, c1, row) };
                }
                for ((o, &a), &b) in row[done..].iter_mut().zip(&h0[done..]).zip(&h1[done..]) {
                    *o = ((a * c0 + b * c1 + (1 << 15)) >> 16).min(255) as u8;
                }
            }
        }
        _ => unreachable!("taps() pairs the axes"),
    }
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
        let (prev_s, cur_s) = sum.split_at_mut((y + 1) * stride);
        let (prev_q, cur_q) = sq.split_at_mut((y + 1) * stride);
        let (prev_s, prev_q) = (&prev_s[y * stride + 1..], &prev_q[y * stride + 1..]);
        integral_row(Kernel::Scalar, &img[y * w..(y + 1) * w], prev_s, &mut cur_s[1..], prev_q, &mut cur_q[1..]);
    }
}

/// One integral row, column order: `cur[x] = prev[x] + sum(src[..=x])`, for sums and squares.
pub(super) fn integral_row(kernel: Kernel, src: &[u8], prev: &[i32], cur: &mut [i32], prev_q: &[u32], cur_q: &mut [u32]) {
    let (mut i, mut s, mut q) = (0, 0i32, 0u32);
    #[cfg(target_arch = "x86_64")]
    if use_avx2(kernel) {
        // SAFETY: AVX2 was detected at run time (`use_avx2`).
        (i, s, q) = unsafe { avx2::integral_row(src, prev, cur, prev_q, cur_q) };
    }
    let _ = kernel;
    // The vector part stopped at `i`, within every slice.
    let (src, prev, cur, prev_q, cur_q) = (&src[i..], &prev[i..], &mut cur[i..], &prev_q[i..], &mut cur_q[i..]);
    for ((((&v, p), c), pq), cq) in src.iter().zip(prev).zip(cur.iter_mut()).zip(prev_q).zip(cur_q.iter_mut()) {
        let v = v as i32;
        s = s.wrapping_add(v);
        q = q.wrapping_add((v * v) as u32);
        *c = p.wrapping_add(s);
        *cq = pq.wrapping_add(q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_uses_opencv_fixed_point() {
        // (b*3735 + g*19235 + r*9798 + 16384) >> 15; values from cv2.cvtColor (opencv-python 4.11).
        // BGR (157, 188, 255) is 205 there; 14-bit weights would give 204.
        let px = [10u8, 200, 30, 255, 255, 255, 0, 0, 0, 1, 2, 3, 157, 188, 255];
        assert_eq!(bgr_to_gray_cascade(&px, 5, 1, 3), vec![128, 255, 0, 2, 205]);
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

    /// A deterministic pseudo-random image, black outside `content`.
    fn framed(w: usize, h: usize, content: Roi, seed: u32) -> Vec<u8> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        let mut img = vec![0u8; w * h];
        for y in content.y0..content.y1 {
            for x in content.x0..content.x1 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                img[y * w + x] = (state >> 24) as u8 | 1;
            }
        }
        img
    }

    #[test]
    fn roi_resize_equals_the_crop_of_the_full_resize() {
        // Copy, exact halving and the general bilinear path, shrinking and growing.
        let sizes = [(40, 30, 40, 30), (40, 30, 20, 15), (40, 30, 33, 21), (17, 23, 9, 12), (12, 9, 30, 20)];
        for (i, &(sw, sh, dw, dh)) in sizes.iter().enumerate() {
            let src = framed(sw, sh, Roi::full(sw, sh), i as u32 + 1);
            let full = resize_linear_exact_cascade(&src, sw, sh, dw, dh);
            for roi in [Roi::full(dw, dh), Roi { x0: 1, y0: 2, x1: dw - 1, y1: dh - 3 }, Roi { x0: dw / 2, y0: 0, x1: dw / 2 + 1, y1: dh }] {
                // A reused buffer holding stale pixels, as between pyramid levels.
                let mut part = vec![0x5a; 5000];
                resize_linear_exact_cascade_roi(Kernel::best(), &src, sw, sh, dw, dh, roi, &mut part);
                let expected: Vec<u8> = (roi.y0..roi.y1).flat_map(|y| full[y * dw + roi.x0..y * dw + roi.x1].to_vec()).collect();
                assert_eq!(part, expected, "{sw}x{sh} -> {dw}x{dh} {roi:?}");
            }
        }
    }

    #[test]
    fn content_reach_covers_every_nonzero_destination_pixel() {
        for (i, &(sw, sh, dw, dh)) in [(60, 40, 60, 40), (60, 40, 30, 20), (60, 40, 37, 29), (60, 40, 13, 9)].iter().enumerate() {
            let content = Roi { x0: 15, y0: 10, x1: 45, y1: 30 };
            let src = framed(sw, sh, content, 7 + i as u32);
            assert_eq!(nonzero_bounds(&src, sw, sh), Some(content));
            let full = resize_linear_exact_cascade(&src, sw, sh, dw, dh);
            let lit = content_reach(sw, sh, dw, dh, content);
            let bounds = nonzero_bounds(&full, dw, dh).expect("some content survives");
            assert!(lit.x0 <= bounds.x0 && lit.y0 <= bounds.y0 && lit.x1 >= bounds.x1 && lit.y1 >= bounds.y1, "{lit:?} misses {bounds:?}");
            // And it is tight to within the interpolation taps, not the whole image.
            assert!(lit.width() < dw && lit.height() < dh, "{lit:?} for {dw}x{dh}");
        }
        assert_eq!(nonzero_bounds(&[0u8; 12], 4, 3), None);
    }

    #[test]
    fn nonzero_bounds_equals_a_pixel_by_pixel_search() {
        // Widths around the 64-byte blocks, single lit pixels at block edges, and rows whose lit
        // pixels lie inside the box found so far.
        for w in [1usize, 5, 63, 64, 65, 130, 200] {
            let h = 7;
            for (i, &(x, y)) in [(0, 0), (w - 1, h - 1), (w / 2, 3), (63.min(w - 1), 2), (64.min(w - 1), 5)].iter().enumerate() {
                let mut img = vec![0u8; w * h];
                img[y * w + x] = 9;
                let (x2, y2) = ((x + 3 * i) % w, (y + i) % h);
                img[y2 * w + x2] = 1;
                let lit: Vec<(usize, usize)> = (0..w * h).filter(|&p| img[p] != 0).map(|p| (p % w, p / w)).collect();
                let expected = Roi {
                    x0: lit.iter().map(|p| p.0).min().unwrap(),
                    y0: lit.iter().map(|p| p.1).min().unwrap(),
                    x1: lit.iter().map(|p| p.0).max().unwrap() + 1,
                    y1: lit.iter().map(|p| p.1).max().unwrap() + 1,
                };
                assert_eq!(nonzero_bounds(&img, w, h), Some(expected), "w {w} pixels {lit:?}");
            }
        }
    }

    /// Deterministic pseudo-random bytes.
    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state >> 24) as u8
            })
            .collect()
    }

    /// The vector kernels this CPU runs, each to be compared with the scalar reference.
    fn vector_kernels() -> Vec<Kernel> {
        Kernel::supported().into_iter().filter(|&k| k != Kernel::Scalar).collect()
    }

    #[test]
    fn simd_gray_equals_scalar_for_every_tail() {
        for cn in [3, 4] {
            // Every length up to several vectors, so each tail length meets the scalar finish.
            for n in 0..70 {
                let px = noise(n * cn, n as u32 + 1);
                let expected = gray_with(Kernel::Scalar, &px, n, 1, cn);
                for k in vector_kernels() {
                    assert_eq!(gray_with(k, &px, n, 1, cn), expected, "{k:?} {cn} channels, {n} pixels");
                }
            }
        }
        // Extremes: every channel at 0 and at 255, and the colour where 14-bit weights differ.
        let px: Vec<u8> = [[255u8, 255, 255], [0, 0, 0], [157, 188, 255]].iter().cycle().take(40).flatten().copied().collect();
        for k in vector_kernels() {
            assert_eq!(gray_with(k, &px, 40, 1, 3), gray_with(Kernel::Scalar, &px, 40, 1, 3));
        }
    }

    #[test]
    fn simd_resize_equals_scalar_on_odd_sizes() {
        // Shrinking by factors around the pyramid's (1.1^k), growing, and widths that are not a
        // multiple of the vectors, so the gather's edge stop and every tail are exercised.
        let sizes = [(61, 37, 55, 33), (61, 37, 50, 30), (97, 41, 31, 13), (200, 9, 181, 8), (13, 11, 12, 10), (23, 17, 41, 29), (5, 5, 3, 3), (300, 4, 17, 3)];
        for (i, &(sw, sh, dw, dh)) in sizes.iter().enumerate() {
            let src = noise(sw * sh, i as u32 + 3);
            for roi in [Roi::full(dw, dh), Roi { x0: 1, y0: 1, x1: dw - 1, y1: dh - 1 }, Roi { x0: dw / 3, y0: 0, x1: dw, y1: dh / 2 + 1 }] {
                let mut expected = Vec::new();
                resize_linear_exact_cascade_roi(Kernel::Scalar, &src, sw, sh, dw, dh, roi, &mut expected);
                for k in vector_kernels() {
                    let mut got = Vec::new();
                    resize_linear_exact_cascade_roi(k, &src, sw, sh, dw, dh, roi, &mut got);
                    assert_eq!(got, expected, "{k:?} {sw}x{sh} -> {dw}x{dh} {roi:?}");
                }
            }
        }
        // Saturated pixels: the largest horizontal sums (255 << 8) through the vertical pass.
        let white = vec![255u8; 50 * 20];
        for k in vector_kernels() {
            let mut got = Vec::new();
            resize_linear_exact_cascade_roi(k, &white, 50, 20, 37, 13, Roi::full(37, 13), &mut got);
            assert_eq!(got, vec![255u8; 37 * 13]);
        }
    }

    #[test]
    fn simd_integral_row_equals_scalar_for_every_tail() {
        for n in 0..45 {
            let src = noise(n, 100 + n as u32);
            // Previous rows near the wrap-around, as on large images.
            let prev: Vec<i32> = noise(4 * n, 7).chunks(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3] | 0x7f])).collect();
            let prev_q: Vec<u32> = prev.iter().map(|&v| (v as u32).wrapping_mul(3)).collect();
            let (mut s0, mut q0) = (vec![0i32; n], vec![0u32; n]);
            integral_row(Kernel::Scalar, &src, &prev, &mut s0, &prev_q, &mut q0);
            for k in vector_kernels() {
                let (mut s1, mut q1) = (vec![0i32; n], vec![0u32; n]);
                integral_row(k, &src, &prev, &mut s1, &prev_q, &mut q1);
                assert_eq!((&s1, &q1), (&s0, &q0), "{k:?} {n} pixels");
            }
        }
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
