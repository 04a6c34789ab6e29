//! AVX2 versions of the pyramid's pixel loops. Every one does the scalar code's integer arithmetic
//! exactly (wrapping sums, the same fixed-point products and shifts), so outputs are identical; the
//! tests in `super` compare both paths on odd sizes and every tail length.
//!
//! Why: the scalar integral rows are a serial chain of adds (one per pixel, twice: sums and
//! squares), the horizontal resize pass is a scalar gather with a bounds check per pixel, and
//! the 3-channel grey conversion does not vectorize from scalar code (stride-3 loads).

use std::arch::x86_64::*;

/// Inclusive prefix sum of eight i32 lanes, wrapping.
#[inline]
#[target_feature(enable = "avx2")]
fn prefix8(x: __m256i) -> __m256i {
    let x = _mm256_add_epi32(x, _mm256_slli_si256::<4>(x));
    let x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
    // The low half's total (its lane 3) carried into every lane of the high half.
    let t = _mm256_shuffle_epi32::<0xFF>(x);
    _mm256_add_epi32(x, _mm256_permute2x128_si256::<0x08>(t, t))
}

/// Lane 7 in every lane: the running total after a vector.
#[inline]
#[target_feature(enable = "avx2")]
fn last(x: __m256i) -> __m256i {
    _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(7))
}

#[inline]
#[target_feature(enable = "avx2")]
fn load8(s: &[i32]) -> __m256i {
    let s = &s[..8];
    // SAFETY: eight i32 are in bounds (the slice above).
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn store8(d: &mut [i32], v: __m256i) {
    let d = &mut d[..8];
    // SAFETY: eight i32 are in bounds (the slice above).
    unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), v) }
}

/// Sixteen i32 values (`lo` then `hi`, each 0..=255 or saturated like `.min(255)` by packus) as
/// sixteen bytes at the start of `out`. The two packs interleave 128-bit halves; the permute undoes it.
#[inline]
#[target_feature(enable = "avx2")]
fn store16(out: &mut [u8], lo: __m256i, hi: __m256i) {
    let w = _mm256_packus_epi32(lo, hi);
    let b = _mm256_packus_epi16(w, w);
    let b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    let o: &mut [u8; 16] = (&mut out[..16]).try_into().expect("sixteen bytes");
    // SAFETY: sixteen bytes are in bounds (the slice above).
    unsafe { _mm_storeu_si128(o.as_mut_ptr().cast(), _mm256_castsi256_si128(b)) };
}

/// The integral rows as `cast_signed` views: the squares are u32 that wrap like i32.
fn as_i32(s: &[u32]) -> &[i32] {
    // SAFETY: u32 and i32 have the same size and alignment, and every bit pattern is valid.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
}

fn as_i32_mut(s: &mut [u32]) -> &mut [i32] {
    // SAFETY: as in `as_i32`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len()) }
}

/// `pyramid::integral_row`, eight pixels per step; returns the pixels done and the running
/// (sum, square sum) after them, for the scalar tail.
#[target_feature(enable = "avx2")]
pub(super) fn integral_row(src: &[u8], prev: &[i32], cur: &mut [i32], prev_q: &[u32], cur_q: &mut [u32]) -> (usize, i32, u32) {
    let n = src.len().min(prev.len()).min(cur.len()).min(prev_q.len()).min(cur_q.len());
    let (prev_q, cur_q) = (as_i32(prev_q), as_i32_mut(cur_q));
    let (mut cs, mut cq) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut i = 0;
    while i + 8 <= n {
        let px: &[u8; 8] = src[i..i + 8].try_into().expect("eight pixels");
        // SAFETY: eight bytes are in bounds (the array above).
        let v = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(px.as_ptr().cast()) });
        // Each lane holds a pixel in its low 16 bits: madd gives its square.
        let q = _mm256_madd_epi16(v, v);
        let s = _mm256_add_epi32(prefix8(v), cs);
        let q = _mm256_add_epi32(prefix8(q), cq);
        store8(&mut cur[i..], _mm256_add_epi32(load8(&prev[i..]), s));
        store8(&mut cur_q[i..], _mm256_add_epi32(load8(&prev_q[i..]), q));
        cs = last(s);
        cq = last(q);
        i += 8;
    }
    (i, _mm256_cvtsi256_si32(cs), _mm256_cvtsi256_si32(cq) as u32)
}

/// `dense::integral_row_split`'s pairs, eight pairs (sixteen pixels) per step: pair k = (a, b)
/// ends odd-plane column k (running sum through a) and even-plane column k + 1 (through b).
/// Returns the pairs done and the running (sum, square sum) after them.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
pub(in crate::detect::haar) fn integral_row_split(
    src: &[u8],
    pe: &[i32],
    po: &[i32],
    ce: &mut [i32],
    co: &mut [i32],
    qpe: &[u32],
    qpo: &[u32],
    qce: &mut [u32],
    qco: &mut [u32],
) -> (usize, i32, u32) {
    let pairs = src.len() / 2;
    // Even-plane columns go one further than odd ones.
    let n = pairs.min(po.len()).min(co.len()).min(qpo.len()).min(qco.len());
    let n = n.min(pe.len().saturating_sub(1)).min(ce.len().saturating_sub(1));
    let n = n.min(qpe.len().saturating_sub(1)).min(qce.len().saturating_sub(1));
    let (qpe, qpo, qce, qco) = (as_i32(qpe), as_i32(qpo), as_i32_mut(qce), as_i32_mut(qco));
    let ones = _mm256_set1_epi16(1);
    let (mut cs, mut cq) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let mut k = 0;
    while k + 8 <= n {
        let px: &[u8; 16] = src[2 * k..2 * k + 16].try_into().expect("sixteen pixels");
        // Lane j: a | b << 16 for pair j.
        // SAFETY: sixteen bytes are in bounds (the array above).
        let ab = _mm256_cvtepu8_epi16(unsafe { _mm_loadu_si128(px.as_ptr().cast()) });
        let b = _mm256_srli_epi32::<16>(ab);
        let s = _mm256_add_epi32(prefix8(_mm256_madd_epi16(ab, ones)), cs);
        let q = _mm256_add_epi32(prefix8(_mm256_madd_epi16(ab, ab)), cq);
        let bq = _mm256_madd_epi16(b, b);
        store8(&mut co[k..], _mm256_add_epi32(load8(&po[k..]), _mm256_sub_epi32(s, b)));
        store8(&mut ce[k + 1..], _mm256_add_epi32(load8(&pe[k + 1..]), s));
        store8(&mut qco[k..], _mm256_add_epi32(load8(&qpo[k..]), _mm256_sub_epi32(q, bq)));
        store8(&mut qce[k + 1..], _mm256_add_epi32(load8(&qpe[k + 1..]), q));
        cs = last(s);
        cq = last(q);
        k += 8;
    }
    (k, _mm256_cvtsi256_si32(cs), _mm256_cvtsi256_si32(cq) as u32)
}

/// The interpolated middle of `pyramid::h_line`: `out[d] = (256 - c1[d]) * src[ofs[d]] + c1[d] *
/// src[ofs[d] + 1]`, eight destinations per step, four per 128-bit half. Each half loads the
/// sixteen source bytes from its first tap and picks its pairs with a byte shuffle, by the masks
/// and weight pairs `Axis` prepared (`mask`, `w`, in blocks of four from `ofs[0]`). Returns how
/// many it did; it stops where a load would pass the end of `src`, and the caller finishes the
/// row. (A dword gather per lane, `vpgatherdd`, measured no faster than the scalar loop on our
/// AMD EPYC.)
#[target_feature(enable = "avx2")]
pub(super) fn h_line_mid(src: &[u8], ofs: &[u32], mask: &[u32], w: &[u32], out: &mut [u32]) -> usize {
    let n = ofs.len().min(mask.len()).min(w.len()).min(out.len());
    let load16 = |at: usize| -> __m128i {
        let s: &[u8; 16] = src[at..at + 16].try_into().expect("sixteen bytes");
        // SAFETY: sixteen bytes are in bounds (the array above).
        unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
    };
    let mut d = 0;
    while d + 8 <= n {
        let (b0, b1) = (ofs[d] as usize, ofs[d + 4] as usize);
        if b1 + 16 > src.len() {
            break;
        }
        // `Axis` checked that each block's taps lie within its sixteen bytes.
        let px = _mm256_shuffle_epi8(_mm256_set_m128i(load16(b1), load16(b0)), load8(as_i32(&mask[d..])));
        // Pixels are below 256 and weights at most 256: the 16-bit products are exact.
        store8(as_i32_mut(&mut out[d..]), _mm256_madd_epi16(px, load8(as_i32(&w[d..]))));
        d += 8;
    }
    d
}

/// The vertical pass: `(a * c0 + b * c1 + 2^15) >> 16`, saturated to a byte, for `out.len()`
/// pixels; `h0`, `h1` hold horizontal sums (below 2^16), `c0 + c1 = 256`.
#[target_feature(enable = "avx2")]
pub(super) fn v_pass(h0: &[u32], h1: &[u32], c0: u32, c1: u32, out: &mut [u8]) -> usize {
    let n = h0.len().min(h1.len()).min(out.len());
    let (w0, w1) = (_mm256_set1_epi32(c0 as i32), _mm256_set1_epi32(c1 as i32));
    let half = _mm256_set1_epi32(1 << 15);
    let mut i = 0;
    while i + 16 <= n {
        let lane = |j: usize| {
            let (a, b) = (load8(as_i32(&h0[j..])), load8(as_i32(&h1[j..])));
            let s = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(a, w0), _mm256_mullo_epi32(b, w1)), half);
            _mm256_srli_epi32::<16>(s)
        };
        let (lo, hi) = (lane(i), lane(i + 8));
        store16(&mut out[i..i + 16], lo, hi);
        i += 16;
    }
    i
}

/// `bgr_to_gray_cascade` for `CN` = 3 or 4 channels, sixteen pixels per step. Returns the pixels
/// done; it stops while a sixteen-byte load of the last group would still be in bounds.
#[target_feature(enable = "avx2")]
pub(super) fn gray<const CN: usize>(bgr: &[u8], out: &mut [u8]) -> usize {
    use crate::pixels::gray::{B2Y, G2Y, R2Y, SHIFT};
    const { assert!(CN == 3 || CN == 4) };
    let n = out.len().min(bgr.len() / CN);
    let c = CN as i8;
    // Per pixel j of a 128-bit half: (B, G) and (R, 0) as 16-bit pairs; the 0 becomes 1 to add the
    // rounding half through the same madd.
    let bg = _mm256_setr_epi8(
        0, -1, 1, -1, c, -1, c + 1, -1, 2 * c, -1, 2 * c + 1, -1, 3 * c, -1, 3 * c + 1, -1, //
        0, -1, 1, -1, c, -1, c + 1, -1, 2 * c, -1, 2 * c + 1, -1, 3 * c, -1, 3 * c + 1, -1,
    );
    let r = _mm256_setr_epi8(
        2, -1, -1, -1, c + 2, -1, -1, -1, 2 * c + 2, -1, -1, -1, 3 * c + 2, -1, -1, -1, //
        2, -1, -1, -1, c + 2, -1, -1, -1, 2 * c + 2, -1, -1, -1, 3 * c + 2, -1, -1, -1,
    );
    let one_hi = _mm256_set1_epi32(1 << 16);
    let w_bg = _mm256_set1_epi32((B2Y | G2Y << 16) as i32);
    let w_r = _mm256_set1_epi32((R2Y | (1 << (SHIFT - 1)) << 16) as i32);
    let load = |at: usize| -> __m128i {
        let s: &[u8; 16] = bgr[at..at + 16].try_into().expect("sixteen bytes");
        // SAFETY: sixteen bytes are in bounds (the slice above).
        unsafe { _mm_loadu_si128(s.as_ptr().cast()) }
    };
    // Eight pixels from `at`: four per 128-bit half.
    let eight = |at: usize| -> __m256i {
        let v = _mm256_set_m128i(load(at + 4 * CN), load(at));
        let y = _mm256_add_epi32(
            _mm256_madd_epi16(_mm256_shuffle_epi8(v, bg), w_bg),
            _mm256_madd_epi16(_mm256_or_si256(_mm256_shuffle_epi8(v, r), one_hi), w_r),
        );
        _mm256_srli_epi32::<{ SHIFT as i32 }>(y)
    };
    let mut i = 0;
    // The last load starts at (i + 12) * CN and reads sixteen bytes.
    while i + 16 <= n && (i + 12) * CN + 16 <= bgr.len() {
        let (lo, hi) = (eight(i * CN), eight((i + 8) * CN));
        store16(&mut out[i..i + 16], lo, hi);
        i += 16;
    }
    i
}
