//! AVX-512F: sixteen origins per vector while both of its halves have live lanes, then the AVX2
//! kernel's eight lanes on the one half still alive. The early stages, where nearly every lane is
//! alive, load each corner of sixteen windows at once and share the stump's offsets and constants
//! between them; a sixteen-lane vector kept to the end spent most of its lanes dead (see the
//! parent module). The arithmetic is the AVX2 kernel's, lane for lane: the same roundings in the
//! same order (no fused multiply-add), so the hits and their sums are bit-identical.

use super::avx2::{self, F64Sums, IntSums, Sums};
use super::{walk, Level, Stage, Stump, LANES};
use std::arch::x86_64::*;

/// Origins per sixteen-lane vector.
pub(super) const WIDE: usize = 2 * LANES;

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn at(p: *const i32, o: u32) -> __m512i {
    unsafe { _mm512_loadu_si512(p.add(o as usize).cast()) }
}

/// `p[a] - p[b] - p[c] + p[d]`, wrapping, for sixteen origins.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn rect(p: *const i32, o: &[u32]) -> __m512i {
    unsafe {
        let q = o.as_ptr().cast::<u64>();
        let (ab, cd) = (q.read_unaligned(), q.add(1).read_unaligned());
        let (a, b, c, d) = (ab as u32, (ab >> 32) as u32, cd as u32, (cd >> 32) as u32);
        let ab = _mm512_sub_epi32(at(p, a), at(p, b));
        _mm512_add_epi32(_mm512_sub_epi32(ab, at(p, c)), at(p, d))
    }
}

/// `avx2::goes_left` for sixteen origins, as a lane mask.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn goes_left<const THREE: bool>(p: *const i32, st: &Stump, vnf: __m512) -> __mmask16 {
    let (r0, r1) = unsafe { (rect(p, &st.ofs[0..4]), rect(p, &st.ofs[4..8])) };
    let mut ret = _mm512_add_ps(
        _mm512_mul_ps(_mm512_set1_ps(st.weight[0]), _mm512_cvtepi32_ps(r0)),
        _mm512_mul_ps(_mm512_set1_ps(st.weight[1]), _mm512_cvtepi32_ps(r1)),
    );
    if THREE {
        let r2 = unsafe { rect(p, &st.ofs[8..12]) };
        ret = _mm512_add_ps(ret, _mm512_mul_ps(_mm512_set1_ps(st.weight[2]), _mm512_cvtepi32_ps(r2)));
    }
    _mm512_cmp_ps_mask::<_CMP_LT_OQ>(_mm512_mul_ps(ret, vnf), _mm512_set1_ps(st.threshold))
}

/// `avx2::goes_left_int` for sixteen origins, as a lane mask.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn goes_left_int<const SHAPE: u8>(p: *const i32, st: &Stump, vnf: __m512) -> __mmask16 {
    let pairs = st.ofs.as_ptr().cast::<u64>();
    let c = |k: usize| unsafe {
        let pair = pairs.add(k / 2).read_unaligned();
        at(p, if k % 2 == 0 { pair as u32 } else { (pair >> 32) as u32 })
    };
    let (add, sub) = (_mm512_add_epi32, _mm512_sub_epi32);
    let outer = |s: bool| {
        let (a, b) = (add(c(0), c(1)), add(c(2), c(3)));
        if s { sub(a, b) } else { add(a, b) }
    };
    let ret = match SHAPE {
        0 => {
            let inner = sub(add(c(4), c(5)), add(c(6), c(7)));
            add(outer(true), add(inner, _mm512_slli_epi32::<1>(inner)))
        }
        1 => add(outer(true), _mm512_slli_epi32::<1>(sub(c(4), c(5)))),
        _ => {
            let mid = add(add(c(4), c(5)), add(c(6), c(7)));
            let v = sub(add(outer(false), _mm512_slli_epi32::<2>(c(8))), _mm512_slli_epi32::<1>(mid));
            if SHAPE == 2 { v } else { sub(_mm512_setzero_si512(), v) }
        }
    };
    _mm512_cmp_ps_mask::<_CMP_LT_OQ>(_mm512_mul_ps(_mm512_cvtepi32_ps(ret), vnf), _mm512_set1_ps(st.threshold))
}

/// Stage sums for sixteen lanes, the wide form of an AVX2 `Sums` (`Narrow`), which carries on
/// where only eight lanes remain.
trait WideSums: Copy {
    type Narrow: Sums;
    fn start(st: &Stage) -> Self;
    fn add(&mut self, st: &Stump, left: __mmask16);
    /// Lanes 0-7 and 8-15 as f64.
    fn finish(self, st: &Stage) -> (__m512d, __m512d);
}

#[derive(Clone, Copy)]
struct F64Wide(__m512d, __m512d);

impl WideSums for F64Wide {
    type Narrow = F64Sums;
    #[inline(always)]
    fn start(_: &Stage) -> Self {
        // SAFETY (all three): only called from AVX-512F functions (`stage`).
        unsafe { Self(_mm512_setzero_pd(), _mm512_setzero_pd()) }
    }
    #[inline(always)]
    fn add(&mut self, st: &Stump, left: __mmask16) {
        unsafe {
            let leaf = _mm512_mask_blend_ps(left, _mm512_set1_ps(st.right), _mm512_set1_ps(st.left));
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(leaf)));
            self.0 = _mm512_add_pd(self.0, _mm512_cvtps_pd(_mm512_castps512_ps256(leaf)));
            self.1 = _mm512_add_pd(self.1, _mm512_cvtps_pd(hi));
        }
    }
    #[inline(always)]
    fn finish(self, _: &Stage) -> (__m512d, __m512d) {
        (self.0, self.1)
    }
}

#[derive(Clone, Copy)]
struct IntWide(__m512i, __m512i);

impl WideSums for IntWide {
    type Narrow = IntSums;
    #[inline(always)]
    fn start(st: &Stage) -> Self {
        unsafe { Self(_mm512_set1_epi32(st.int_base[0]), _mm512_set1_epi32(st.int_base[1])) }
    }
    #[inline(always)]
    fn add(&mut self, st: &Stump, left: __mmask16) {
        unsafe {
            self.0 = _mm512_mask_add_epi32(self.0, left, self.0, _mm512_set1_epi32(st.delta[0]));
            self.1 = _mm512_mask_add_epi32(self.1, left, self.1, _mm512_set1_epi32(st.delta[1]));
        }
    }
    #[inline(always)]
    fn finish(self, st: &Stage) -> (__m512d, __m512d) {
        unsafe {
            // As in the AVX2 kernel: exact products of an i32 and a power of two, summed exactly.
            let widen = |v: __m512i| {
                (_mm512_cvtepi32_pd(_mm512_castsi512_si256(v)), _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64::<1>(v)))
            };
            let (h, l) = (widen(self.0), widen(self.1));
            let (uh, ul) = (_mm512_set1_pd(st.int_units[0]), _mm512_set1_pd(st.int_units[1]));
            (
                _mm512_add_pd(_mm512_mul_pd(h.0, uh), _mm512_mul_pd(l.0, ul)),
                _mm512_add_pd(_mm512_mul_pd(h.1, uh), _mm512_mul_pd(l.1, ul)),
            )
        }
    }
}

/// One stage's sum for sixteen origins.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn stage<S: WideSums>(p: *const i32, all: &[Stump], st: &Stage, vnf: __m512) -> (__m512d, __m512d) {
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
#[target_feature(enable = "avx512f")]
fn below(lo: __m512d, hi: __m512d, threshold: f64) -> u32 {
    let t = _mm512_set1_pd(threshold);
    _mm512_cmp_pd_mask::<_CMP_LT_OQ>(lo, t) as u32 | (_mm512_cmp_pd_mask::<_CMP_LT_OQ>(hi, t) as u32) << LANES
}

/// # Safety
/// The CPU must support AVX-512F (hence AVX2), and every load `base + j + offset` for `j` below
/// `n` rounded up to 16 must be inside `level`'s buffers (what `Level::new` checks), with the
/// variance rectangle's sum of squares within an i32 (checked there too).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn scan_row(level: &Level, base: usize, n: usize, hits: &mut Vec<(u32, f64)>) {
    unsafe {
        if level.ints {
            scan::<IntWide>(level, base, n, hits)
        } else {
            scan::<F64Wide>(level, base, n, hits)
        }
    }
}

/// The AVX2 kernel's work on eight origins at `j0`, of which `nonflat` are normalisable.
#[inline]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn eight<S: Sums>(level: &Level, ps: *const i32, j0: usize, lanes: usize, nonflat: u32, vnf: __m256, skip: &mut bool, hits: &mut Vec<(u32, f64)>) {
    let first = |fail| walk(lanes, nonflat, fail, skip);
    let (live, lo, hi) = unsafe { avx2::stages_from::<S>(level, ps, vnf, 0, 0, first) };
    if live != 0 {
        avx2::push_hits(j0, live, lo, hi, hits);
    }
}

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn scan<S: WideSums>(level: &Level, base: usize, n: usize, hits: &mut Vec<(u32, f64)>) {
    let stages = level.stages;
    let mut skip = false;
    let mut j0 = 0;
    while j0 < n {
        let lanes = (n - j0).min(WIDE);
        let (lanes_lo, lanes_hi) = (lanes.min(LANES), lanes.saturating_sub(LANES));
        let (ps, pq) = unsafe { (level.sum.as_ptr().add(base + j0), level.sq.as_ptr().add(base + j0).cast::<i32>()) };
        let norm_lo = unsafe { avx2::normalise(level, ps, pq, lanes_lo) };
        let norm_hi = if lanes_hi > 0 { unsafe { avx2::normalise(level, ps.add(LANES), pq.add(LANES), lanes_hi) } } else { None };
        // A half without normalisable lanes evaluates nothing and ends with no skip pending
        // (see `walk`); past the row's end the carry no longer matters.
        let (nf_lo, vnf_lo, nf_hi, vnf_hi) = match (norm_lo, norm_hi) {
            (None, None) => {
                skip = false;
                j0 += WIDE;
                continue;
            }
            (Some((nf, vnf)), None) => {
                unsafe { eight::<S::Narrow>(level, ps, j0, lanes_lo, nf, vnf, &mut skip, hits) };
                skip = false;
                j0 += WIDE;
                continue;
            }
            (None, Some((nf, vnf))) => {
                skip = false;
                unsafe { eight::<S::Narrow>(level, ps.add(LANES), j0 + LANES, lanes_hi, nf, vnf, &mut skip, hits) };
                j0 += WIDE;
                continue;
            }
            (Some((a, va)), Some((b, vb))) => (a, va, b, vb),
        };
        let vnf = _mm512_castpd_ps(_mm512_insertf64x4::<1>(
            _mm512_castpd256_pd512(_mm256_castps_pd(vnf_lo)),
            _mm256_castps_pd(vnf_hi),
        ));
        let (mut lo, mut hi) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let mut live = 0u32;
        let mut si = 0;
        while si < stages.len() {
            let st = &stages[si];
            (lo, hi) = unsafe { stage::<S>(ps, level.stumps, st, vnf) };
            let fail = below(lo, hi, st.threshold);
            live = if si == 0 {
                let a = walk(lanes_lo, nf_lo, fail & 0xff, &mut skip);
                a | walk(lanes_hi, nf_hi, fail >> LANES, &mut skip) << LANES
            } else {
                live & !fail
            };
            si += 1;
            if live == 0 || si == stages.len() {
                break;
            }
            // One half dead: the other goes on eight lanes wide.
            let h = if live & 0xff == 0 { 1 } else if live >> LANES == 0 { 0 } else { continue };
            let vnf_h = if h == 0 { vnf_lo } else { vnf_hi };
            let half = live >> (h * LANES) & 0xff;
            let (l, a, b) = unsafe { avx2::stages_from::<S::Narrow>(level, ps.add(h * LANES), vnf_h, si, half, |f| f) };
            if l != 0 {
                avx2::push_hits(j0 + h * LANES, l, a, b, hits);
            }
            live = 0;
            break;
        }
        if live != 0 {
            let mut sums = [0f64; WIDE];
            unsafe {
                _mm512_storeu_pd(sums.as_mut_ptr(), lo);
                _mm512_storeu_pd(sums.as_mut_ptr().add(LANES), hi);
            }
            while live != 0 {
                let i = live.trailing_zeros() as usize;
                hits.push(((j0 + i) as u32, sums[i]));
                live &= live - 1;
            }
        }
        j0 += WIDE;
    }
}
