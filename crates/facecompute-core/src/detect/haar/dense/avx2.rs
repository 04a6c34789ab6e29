//! AVX2: eight origins per vector. The f32 feature values take one register; the f64 stage sums
//! take two (lanes 0-3 and 4-7), as the scalar scan accumulates in f64.

use super::{walk, Level, Stage, Stump, LANES};
use std::arch::x86_64::*;


#[inline]
#[target_feature(enable = "avx2")]
unsafe fn at(p: *const i32, o: u32) -> __m256i {
    unsafe { _mm256_loadu_si256(p.add(o as usize).cast()) }
}

/// `p[a] - p[b] - p[c] + p[d]`, wrapping, for eight origins.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rect(p: *const i32, o: &[u32]) -> __m256i {
    unsafe {
        let ab = _mm256_sub_epi32(at(p, *o.get_unchecked(0)), at(p, *o.get_unchecked(1)));
        _mm256_add_epi32(
            _mm256_sub_epi32(ab, at(p, *o.get_unchecked(2))),
            at(p, *o.get_unchecked(3)),
        )
    }
}

/// Lanes 0-3 and 4-7 of eight i32 as f64.
#[inline]
#[target_feature(enable = "avx2")]
fn widen_i32(v: __m256i) -> (__m256d, __m256d) {
    (
        _mm256_cvtepi32_pd(_mm256_castsi256_si128(v)),
        _mm256_cvtepi32_pd(_mm256_extracti128_si256::<1>(v)),
    )
}

/// Adds one stump's leaf to the stage sums of eight origins:
/// `tmp += (ret * vnf < threshold ? left : right) as f64`, with `ret = (w0 * r0 + w1 * r1) + w2 * r2`
/// rounded after each operation like the scalar code. Without `THREE` the third term is left out,
/// which is exact when its weight is 0 (adding +-0 changes no comparison).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn add_stump<const THREE: bool>(
    p: *const i32,
    st: &Stump,
    vnf: __m256,
    lo: &mut __m256d,
    hi: &mut __m256d,
) {
    let (r0, r1) = unsafe { (rect(p, &st.ofs[0..4]), rect(p, &st.ofs[4..8])) };
    let mut ret = _mm256_add_ps(
        _mm256_mul_ps(_mm256_set1_ps(st.weight[0]), _mm256_cvtepi32_ps(r0)),
        _mm256_mul_ps(_mm256_set1_ps(st.weight[1]), _mm256_cvtepi32_ps(r1)),
    );
    if THREE {
        let r2 = unsafe { rect(p, &st.ofs[8..12]) };
        ret = _mm256_add_ps(
            ret,
            _mm256_mul_ps(_mm256_set1_ps(st.weight[2]), _mm256_cvtepi32_ps(r2)),
        );
    }
    let left = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_mul_ps(ret, vnf), _mm256_set1_ps(st.threshold));
    // The leaves are f32 values; widening after the choice is exact.
    let leaf = _mm256_blendv_ps(_mm256_set1_ps(st.right), _mm256_set1_ps(st.left), left);
    *lo = _mm256_add_pd(*lo, _mm256_cvtps_pd(_mm256_castps256_ps128(leaf)));
    *hi = _mm256_add_pd(*hi, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(leaf)));
}

/// One stage's sum for eight origins.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn stage(p: *const i32, all: &[Stump], st: &Stage, vnf: __m256) -> (__m256d, __m256d) {
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let (two, three) = unsafe {
        (
            all.get_unchecked(st.first..st.first + st.two),
            all.get_unchecked(st.first + st.two..st.end()),
        )
    };
    for sp in two {
        unsafe { add_stump::<false>(p, sp, vnf, &mut lo, &mut hi) };
    }
    for sp in three {
        unsafe { add_stump::<true>(p, sp, vnf, &mut lo, &mut hi) };
    }
    (lo, hi)
}

#[inline]
#[target_feature(enable = "avx2")]
fn mask(lo: __m256d, hi: __m256d) -> u32 {
    _mm256_movemask_pd(lo) as u32 | (_mm256_movemask_pd(hi) as u32) << 4
}

#[inline]
#[target_feature(enable = "avx2")]
fn below(lo: __m256d, hi: __m256d, threshold: f64) -> u32 {
    let t = _mm256_set1_pd(threshold);
    mask(
        _mm256_cmp_pd::<_CMP_LT_OQ>(lo, t),
        _mm256_cmp_pd::<_CMP_LT_OQ>(hi, t),
    )
}

/// # Safety
/// The CPU must support AVX2, and every load `base + j + offset` for `j` below `n` rounded up to 8
/// must be inside `level`'s buffers (what `Level::new` checks). The variance rectangle's sum of
/// squares must fit an i32 (`Level::new` checks that too).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn scan_row(level: &Level, base: usize, n: usize, hits: &mut Vec<(u32, f64)>) {
    let area = _mm256_set1_pd(level.area);
    let flat_nf = _mm256_set1_pd(level.flat_nf);
    let (one, tenth) = (_mm256_set1_pd(1.0), _mm256_set1_pd(1e-1));
    let stages = level.stages;
    let mut skip = false;
    let mut j0 = 0;
    while j0 < n {
        let lanes = (n - j0).min(LANES);
        let (ps, pq) = unsafe {
            (
                level.sum.as_ptr().add(base + j0),
                level.sq.as_ptr().add(base + j0).cast::<i32>(),
            )
        };
        // The variance test of `run_at`: nf = area * sqsum - sum^2, then 1/sqrt(nf) as f32.
        let (vs, vq) = unsafe { (rect(ps, &level.nofs), rect(pq, &level.nofs)) };
        let (s_lo, s_hi) = widen_i32(vs);
        let (q_lo, q_hi) = widen_i32(vq);
        let nf_lo = _mm256_sub_pd(_mm256_mul_pd(area, q_lo), _mm256_mul_pd(s_lo, s_lo));
        let nf_hi = _mm256_sub_pd(_mm256_mul_pd(area, q_hi), _mm256_mul_pd(s_hi, s_hi));
        let vnf_lo = _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_sqrt_pd(nf_lo)));
        let vnf_hi = _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_sqrt_pd(nf_hi)));
        let ok_lo = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(nf_lo, flat_nf),
            _mm256_cmp_pd::<_CMP_LT_OQ>(_mm256_mul_pd(area, _mm256_cvtps_pd(vnf_lo)), tenth),
        );
        let ok_hi = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(nf_hi, flat_nf),
            _mm256_cmp_pd::<_CMP_LT_OQ>(_mm256_mul_pd(area, _mm256_cvtps_pd(vnf_hi)), tenth),
        );
        let valid = (1u32 << lanes) - 1;
        let nonflat = mask(ok_lo, ok_hi) & valid;
        if nonflat == 0 {
            // Every evaluated origin is flat (-1): none skips the next.
            skip = false;
            j0 += LANES;
            continue;
        }
        let vnf = _mm256_set_m128(vnf_hi, vnf_lo);
        let first = &stages[0];
        let (mut lo, mut hi) = unsafe { stage(ps, level.stumps, first, vnf) };
        let mut live = walk(lanes, nonflat, below(lo, hi, first.threshold), &mut skip);
        for st in &stages[1..] {
            if live == 0 {
                break;
            }
            (lo, hi) = unsafe { stage(ps, level.stumps, st, vnf) };
            live &= !below(lo, hi, st.threshold);
        }
        if live != 0 {
            let mut sums = [0f64; LANES];
            unsafe {
                _mm256_storeu_pd(sums.as_mut_ptr(), lo);
                _mm256_storeu_pd(sums.as_mut_ptr().add(4), hi);
            }
            while live != 0 {
                let i = live.trailing_zeros() as usize;
                hits.push(((j0 + i) as u32, sums[i]));
                live &= live - 1;
            }
        }
        j0 += LANES;
    }
}
