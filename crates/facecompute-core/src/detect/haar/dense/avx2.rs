//! AVX2: eight origins per vector. The f32 feature values take one register; f64 stage sums take
//! two (lanes 0-3 and 4-7), as the scalar scan accumulates in f64, and so do the integer counters
//! that replace them where exact (high and low parts).

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
pub(super) unsafe fn rect(p: *const i32, o: &[u32]) -> __m256i {
    unsafe {
        // Two offsets per 64-bit load: the loads, not the arithmetic, bound this loop.
        let q = o.as_ptr().cast::<u64>();
        let (ab, cd) = (q.read_unaligned(), q.add(1).read_unaligned());
        let (a, b, c, d) = (ab as u32, (ab >> 32) as u32, cd as u32, (cd >> 32) as u32);
        let ab = _mm256_sub_epi32(at(p, a), at(p, b));
        _mm256_add_epi32(_mm256_sub_epi32(ab, at(p, c)), at(p, d))
    }
}

/// Lanes 0-3 and 4-7 of eight i32 as f64.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn widen_i32(v: __m256i) -> (__m256d, __m256d) {
    (
        _mm256_cvtepi32_pd(_mm256_castsi256_si128(v)),
        _mm256_cvtepi32_pd(_mm256_extracti128_si256::<1>(v)),
    )
}

/// Which of eight origins choose one stump's left leaf: `ret * vnf < threshold`, with
/// `ret = (w0 * r0 + w1 * r1) + w2 * r2` rounded after each operation like the scalar code. Without
/// `THREE` the third term is left out, which is exact when its weight is 0 (adding +-0 changes no
/// comparison).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn goes_left<const THREE: bool>(p: *const i32, st: &Stump, vnf: __m256) -> __m256 {
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
    _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_mul_ps(ret, vnf), _mm256_set1_ps(st.threshold))
}

/// `goes_left` for the integer shapes (see `Shape`): `ret` is an exact integer below 2^24, so
/// converting it gives OpenCV's f32 value.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn goes_left_int<const SHAPE: u8>(p: *const i32, st: &Stump, vnf: __m256) -> __m256 {
    // Two offsets per 64-bit load: the loads, not the arithmetic, bound this loop.
    let pairs = st.ofs.as_ptr().cast::<u64>();
    let c = |k: usize| unsafe {
        let pair = pairs.add(k / 2).read_unaligned();
        at(p, if k % 2 == 0 { pair as u32 } else { (pair >> 32) as u32 })
    };
    let (add, sub) = (_mm256_add_epi32, _mm256_sub_epi32);
    // c0 + c1 - c2 - c3, the outer rectangle's part in every shape.
    let outer = |s: bool| {
        let (a, b) = (add(c(0), c(1)), add(c(2), c(3)));
        if s { sub(a, b) } else { add(a, b) }
    };
    let ret = match SHAPE {
        0 => {
            let inner = sub(add(c(4), c(5)), add(c(6), c(7)));
            add(outer(true), add(inner, _mm256_slli_epi32::<1>(inner)))
        }
        1 => add(outer(true), _mm256_slli_epi32::<1>(sub(c(4), c(5)))),
        _ => {
            let mid = add(add(c(4), c(5)), add(c(6), c(7)));
            let v = sub(add(outer(false), _mm256_slli_epi32::<2>(c(8))), _mm256_slli_epi32::<1>(mid));
            if SHAPE == 2 { v } else { sub(_mm256_setzero_si256(), v) }
        }
    };
    _mm256_cmp_ps::<_CMP_LT_OQ>(
        _mm256_mul_ps(_mm256_cvtepi32_ps(ret), vnf),
        _mm256_set1_ps(st.threshold),
    )
}

/// Stage sums: f64 lanes 0-3 and 4-7, adding each leaf in order as the scalar scan does, or the
/// two integer counters of `Stage` (eight lanes each).
pub(super) trait Sums: Copy {
    fn start(st: &Stage) -> Self;
    fn add(&mut self, st: &Stump, left: __m256);
    fn finish(self, st: &Stage) -> (__m256d, __m256d);
}

#[derive(Clone, Copy)]
pub(super) struct F64Sums(__m256d, __m256d);

impl Sums for F64Sums {
    #[inline(always)]
    fn start(_: &Stage) -> Self {
        // SAFETY (all three): only called from AVX2 functions (`stage`).
        unsafe { Self(_mm256_setzero_pd(), _mm256_setzero_pd()) }
    }
    #[inline(always)]
    fn add(&mut self, st: &Stump, left: __m256) {
        unsafe {
            // The leaves are f32 values; widening after the choice is exact.
            let leaf = _mm256_blendv_ps(_mm256_set1_ps(st.right), _mm256_set1_ps(st.left), left);
            self.0 = _mm256_add_pd(self.0, _mm256_cvtps_pd(_mm256_castps256_ps128(leaf)));
            self.1 = _mm256_add_pd(self.1, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(leaf)));
        }
    }
    #[inline(always)]
    fn finish(self, _: &Stage) -> (__m256d, __m256d) {
        (self.0, self.1)
    }
}

#[derive(Clone, Copy)]
pub(super) struct IntSums(__m256i, __m256i);

impl Sums for IntSums {
    #[inline(always)]
    fn start(st: &Stage) -> Self {
        unsafe { Self(_mm256_set1_epi32(st.int_base[0]), _mm256_set1_epi32(st.int_base[1])) }
    }
    #[inline(always)]
    fn add(&mut self, st: &Stump, left: __m256) {
        unsafe {
            let left = _mm256_castps_si256(left);
            self.0 = _mm256_add_epi32(self.0, _mm256_and_si256(left, _mm256_set1_epi32(st.delta[0])));
            self.1 = _mm256_add_epi32(self.1, _mm256_and_si256(left, _mm256_set1_epi32(st.delta[1])));
        }
    }
    #[inline(always)]
    fn finish(self, st: &Stage) -> (__m256d, __m256d) {
        unsafe {
            // Each product is exact (an i32 times a power of two), and so is their sum: it is the
            // stage's exact sum, which the plan checked an f64 holds.
            let (h, l) = (widen_i32(self.0), widen_i32(self.1));
            let (uh, ul) = (_mm256_set1_pd(st.int_units[0]), _mm256_set1_pd(st.int_units[1]));
            (
                _mm256_add_pd(_mm256_mul_pd(h.0, uh), _mm256_mul_pd(l.0, ul)),
                _mm256_add_pd(_mm256_mul_pd(h.1, uh), _mm256_mul_pd(l.1, ul)),
            )
        }
    }
}

/// One stage's sum for eight origins.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn stage<S: Sums>(p: *const i32, all: &[Stump], st: &Stage, vnf: __m256) -> (__m256d, __m256d) {
    let mut sums = S::start(st);
    let mut from = st.first;
    let mut group = |k: usize| {
        let g = unsafe { all.get_unchecked(from..from + st.count[k]) };
        from += st.count[k];
        g
    };
    for sp in group(0) {
        sums.add(sp, unsafe { goes_left_int::<0>(p, sp, vnf) });
    }
    for sp in group(1) {
        sums.add(sp, unsafe { goes_left_int::<1>(p, sp, vnf) });
    }
    for sp in group(2) {
        sums.add(sp, unsafe { goes_left_int::<2>(p, sp, vnf) });
    }
    for sp in group(3) {
        sums.add(sp, unsafe { goes_left_int::<3>(p, sp, vnf) });
    }
    for sp in group(4) {
        sums.add(sp, unsafe { goes_left::<false>(p, sp, vnf) });
    }
    for sp in group(5) {
        sums.add(sp, unsafe { goes_left::<true>(p, sp, vnf) });
    }
    sums.finish(st)
}

#[inline]
#[target_feature(enable = "avx2")]
fn mask(lo: __m256d, hi: __m256d) -> u32 {
    _mm256_movemask_pd(lo) as u32 | (_mm256_movemask_pd(hi) as u32) << 4
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn below(lo: __m256d, hi: __m256d, threshold: f64) -> u32 {
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
    unsafe {
        if level.ints {
            scan::<IntSums>(level, base, n, hits)
        } else {
            scan::<F64Sums>(level, base, n, hits)
        }
    }
}

/// The variance test of `run_at` for eight origins at `ps`/`pq` (`lanes` of them valid):
/// nf = area * sqsum - sum^2, then 1/sqrt(nf) as f32. Returns the normalisable lanes and their
/// factors, or `None` when every valid lane is flat (then no square root is taken).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn normalise(level: &Level, ps: *const i32, pq: *const i32, lanes: usize) -> Option<(u32, __m256)> {
    let area = _mm256_set1_pd(level.area);
    let flat_nf = _mm256_set1_pd(level.flat_nf);
    let (one, tenth) = (_mm256_set1_pd(1.0), _mm256_set1_pd(1e-1));
    let (vs, vq) = unsafe { (rect(ps, &level.nofs), rect(pq, &level.nofs)) };
    let (s_lo, s_hi) = widen_i32(vs);
    let (q_lo, q_hi) = widen_i32(vq);
    let nf_lo = _mm256_sub_pd(_mm256_mul_pd(area, q_lo), _mm256_mul_pd(s_lo, s_lo));
    let nf_hi = _mm256_sub_pd(_mm256_mul_pd(area, q_hi), _mm256_mul_pd(s_hi, s_hi));
    let valid = (1u32 << lanes) - 1;
    let varied = mask(
        _mm256_cmp_pd::<_CMP_GE_OQ>(nf_lo, flat_nf),
        _mm256_cmp_pd::<_CMP_GE_OQ>(nf_hi, flat_nf),
    );
    if varied & valid == 0 {
        return None;
    }
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
    let nonflat = mask(ok_lo, ok_hi) & valid;
    (nonflat != 0).then(|| _mm256_set_m128(vnf_hi, vnf_lo)).map(|v| (nonflat, v))
}

/// Stages `from..` for the eight origins at `p` whose lanes `live` are still alive; with `from`
/// 0, `first` turns the first stage's failures into the live lanes (OpenCV's skip rule). Returns
/// the lanes alive after the last stage (0 once every lane has failed) and its sums.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn stages_from<S: Sums>(
    level: &Level,
    p: *const i32,
    vnf: __m256,
    from: usize,
    mut live: u32,
    mut first: impl FnMut(u32) -> u32,
) -> (u32, __m256d, __m256d) {
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    // One call site for `stage`, so that it is inlined: a call per stage and vector cost more
    // than the late stages' few stumps.
    for (si, st) in level.stages.iter().enumerate().skip(from) {
        (lo, hi) = unsafe { stage::<S>(p, level.stumps, st, vnf) };
        let fail = below(lo, hi, st.threshold);
        live = if si == 0 { first(fail) } else { live & !fail };
        if live == 0 {
            break;
        }
    }
    (live, lo, hi)
}

/// Appends `(j0 + lane, sum)` for each lane of `live`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn push_hits(j0: usize, mut live: u32, lo: __m256d, hi: __m256d, hits: &mut Vec<(u32, f64)>) {
    let mut sums = [0f64; LANES];
    // SAFETY: `sums` holds eight f64.
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

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn scan<S: Sums>(level: &Level, base: usize, n: usize, hits: &mut Vec<(u32, f64)>) {
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
        let Some((nonflat, vnf)) = (unsafe { normalise(level, ps, pq, lanes) }) else {
            // Every evaluated origin is flat (-1): none skips the next.
            skip = false;
            j0 += LANES;
            continue;
        };
        let first = |fail| walk(lanes, nonflat, fail, &mut skip);
        let (live, lo, hi) = unsafe { stages_from::<S>(level, ps, vnf, 0, 0, first) };
        if live != 0 {
            push_hits(j0, live, lo, hi, hits);
        }
        j0 += LANES;
    }
}
