//! AVX2 + FMA kernels. Targets are read as f32 and widened to f64 before multiplying, so that the
//! sums match a float64 computation to ~1e-15 while the loop stays bound by memory reads.

use super::scalar;
use crate::compare::metric::{Metric, QueryStats};
use std::arch::x86_64::*;

const LANES: usize = 8;

/// # Safety
/// The CPU must support AVX2 and FMA; `targets.len() == out.len() * dims` and `query.len() == dims`.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn distances(query: &[f64], stats: &QueryStats, metric: Metric, targets: &[f32], dims: usize, out: &mut [f64]) {
    assert_eq!(targets.len(), out.len() * dims);
    unsafe { distances_raw(query, stats, metric, targets.as_ptr(), dims, out) }
}

/// `distances` over `out.len() * dims` floats at `targets`, which need not be 4-byte aligned (rows
/// of a socket chunk, read in place by the streaming comparison): every load is unaligned, and the
/// few floats past the last full vector are read with `read_unaligned`.
///
/// # Safety
/// The CPU must support AVX2 and FMA; `targets` must be valid for reads of `out.len() * dims` floats and
/// `query.len() == dims`.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn distances_raw(query: &[f64], stats: &QueryStats, metric: Metric, targets: *const f32, dims: usize, out: &mut [f64]) {
    // Rows go in pairs: one row's four accumulators wait on the FMA latency (4-5 cycles) every
    // step, two rows' eight keep both FMA units busy. Each row's sums are formed exactly as alone.
    let pairs = out.len() / 2;
    if metric.reads_difference() {
        for p in 0..pairs {
            let (a, b) = unsafe { squared_difference2(query, targets.add(2 * p * dims), targets.add((2 * p + 1) * dims)) };
            out[2 * p] = metric.finish(stats, a, 0.0);
            out[2 * p + 1] = metric.finish(stats, b, 0.0);
        }
        if out.len() % 2 == 1 {
            let r = out.len() - 1;
            out[r] = metric.finish(stats, unsafe { squared_difference(query, targets.add(r * dims)) }, 0.0);
        }
    } else {
        for p in 0..pairs {
            let ((da, ta), (db, tb)) = unsafe { dot_and_norm2(query, targets.add(2 * p * dims), targets.add((2 * p + 1) * dims)) };
            out[2 * p] = metric.finish(stats, da, ta);
            out[2 * p + 1] = metric.finish(stats, db, tb);
        }
        if out.len() % 2 == 1 {
            let r = out.len() - 1;
            let (dot, tt) = unsafe { dot_and_norm(query, targets.add(r * dims)) };
            out[r] = metric.finish(stats, dot, tt);
        }
    }
}

/// `dot_and_norm` of two rows in one loop, each row's arithmetic unchanged.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_and_norm2(q: &[f64], ap: *const f32, bp: *const f32) -> ((f64, f64), (f64, f64)) {
    let n = q.len();
    let body = n - n % LANES;
    let qp = q.as_ptr();
    let (mut ad0, mut ad1, mut an0, mut an1) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
    let (mut bd0, mut bd1, mut bn0, mut bn1) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let (ql, qh) = (_mm256_loadu_pd(qp.add(i)), _mm256_loadu_pd(qp.add(i + 4)));
            let (xl, xh) = load_widened(ap.add(i));
            let (yl, yh) = load_widened(bp.add(i));
            ad0 = _mm256_fmadd_pd(ql, xl, ad0);
            ad1 = _mm256_fmadd_pd(qh, xh, ad1);
            an0 = _mm256_fmadd_pd(xl, xl, an0);
            an1 = _mm256_fmadd_pd(xh, xh, an1);
            bd0 = _mm256_fmadd_pd(ql, yl, bd0);
            bd1 = _mm256_fmadd_pd(qh, yh, bd1);
            bn0 = _mm256_fmadd_pd(yl, yl, bn0);
            bn1 = _mm256_fmadd_pd(yh, yh, bn1);
        }
        i += LANES;
    }
    let (ta, ra) = unsafe { tail(ap, body, n) };
    let (tad, tan) = scalar::dot_and_norm(&q[body..], &ta[..ra]);
    let (tb, rb) = unsafe { tail(bp, body, n) };
    let (tbd, tbn) = scalar::dot_and_norm(&q[body..], &tb[..rb]);
    (
        (hsum(_mm256_add_pd(ad0, ad1)) + tad, hsum(_mm256_add_pd(an0, an1)) + tan),
        (hsum(_mm256_add_pd(bd0, bd1)) + tbd, hsum(_mm256_add_pd(bn0, bn1)) + tbn),
    )
}

/// `squared_difference` of two rows in one loop, each row's arithmetic unchanged.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn squared_difference2(q: &[f64], ap: *const f32, bp: *const f32) -> (f64, f64) {
    let n = q.len();
    let body = n - n % LANES;
    let qp = q.as_ptr();
    let (mut a0, mut a1, mut b0, mut b1) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let (ql, qh) = (_mm256_loadu_pd(qp.add(i)), _mm256_loadu_pd(qp.add(i + 4)));
            let (xl, xh) = load_widened(ap.add(i));
            let (yl, yh) = load_widened(bp.add(i));
            let (xl, xh) = (_mm256_sub_pd(ql, xl), _mm256_sub_pd(qh, xh));
            let (yl, yh) = (_mm256_sub_pd(ql, yl), _mm256_sub_pd(qh, yh));
            a0 = _mm256_fmadd_pd(xl, xl, a0);
            a1 = _mm256_fmadd_pd(xh, xh, a1);
            b0 = _mm256_fmadd_pd(yl, yl, b0);
            b1 = _mm256_fmadd_pd(yh, yh, b1);
        }
        i += LANES;
    }
    let a = hsum(_mm256_add_pd(a0, a1)) + {
        let (t, rest) = unsafe { tail(ap, body, n) };
        scalar::squared_difference(&q[body..], &t[..rest])
    };
    let b = hsum(_mm256_add_pd(b0, b1)) + {
        let (t, rest) = unsafe { tail(bp, body, n) };
        scalar::squared_difference(&q[body..], &t[..rest])
    };
    (a, b)
}

/// The last `q.len() % LANES` floats of a row at `tp`, copied out whole (fewer than LANES).
#[inline(always)]
unsafe fn tail(tp: *const f32, body: usize, n: usize) -> ([f32; LANES], usize) {
    let mut t = [0f32; LANES];
    for (i, slot) in t.iter_mut().enumerate().take(n - body) {
        *slot = unsafe { tp.add(body + i).read_unaligned() };
    }
    (t, n - body)
}

/// The 8 floats at `p` (unaligned), widened to f64: lanes 0-3 and lanes 4-7.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn load_widened(p: *const f32) -> (__m256d, __m256d) {
    let x = unsafe { _mm256_loadu_ps(p) };
    (_mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(x)))
}

#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn hsum(v: __m256d) -> f64 {
    let lo = _mm256_castpd256_pd128(v);
    let hi = _mm256_extractf128_pd::<1>(v);
    let s = _mm_add_pd(lo, hi);
    _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)))
}

#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_and_norm(q: &[f64], tp: *const f32) -> (f64, f64) {
    let n = q.len();
    let body = n - n % LANES;
    let qp = q.as_ptr();
    let (mut d0, mut d1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let (mut n0, mut n1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let (xl, xh) = load_widened(tp.add(i));
            d0 = _mm256_fmadd_pd(_mm256_loadu_pd(qp.add(i)), xl, d0);
            d1 = _mm256_fmadd_pd(_mm256_loadu_pd(qp.add(i + 4)), xh, d1);
            n0 = _mm256_fmadd_pd(xl, xl, n0);
            n1 = _mm256_fmadd_pd(xh, xh, n1);
        }
        i += LANES;
    }
    let (t, rest) = unsafe { tail(tp, body, n) };
    let (td, tn) = scalar::dot_and_norm(&q[body..], &t[..rest]);
    (hsum(_mm256_add_pd(d0, d1)) + td, hsum(_mm256_add_pd(n0, n1)) + tn)
}

#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn squared_difference(q: &[f64], tp: *const f32) -> f64 {
    let n = q.len();
    let body = n - n % LANES;
    let qp = q.as_ptr();
    let (mut s0, mut s1) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let (xl, xh) = load_widened(tp.add(i));
            let dl = _mm256_sub_pd(_mm256_loadu_pd(qp.add(i)), xl);
            let dh = _mm256_sub_pd(_mm256_loadu_pd(qp.add(i + 4)), xh);
            s0 = _mm256_fmadd_pd(dl, dl, s0);
            s1 = _mm256_fmadd_pd(dh, dh, s1);
        }
        i += LANES;
    }
    hsum(_mm256_add_pd(s0, s1)) + {
        let (t, rest) = unsafe { tail(tp, body, n) };
        scalar::squared_difference(&q[body..], &t[..rest])
    }
}

/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn read_sum(data: &[f32]) -> f64 {
    let n = data.len();
    let body = n - n % 32;
    let p = data.as_ptr();
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    while i < body {
        unsafe {
            acc[0] = _mm256_add_ps(acc[0], _mm256_loadu_ps(p.add(i)));
            acc[1] = _mm256_add_ps(acc[1], _mm256_loadu_ps(p.add(i + 8)));
            acc[2] = _mm256_add_ps(acc[2], _mm256_loadu_ps(p.add(i + 16)));
            acc[3] = _mm256_add_ps(acc[3], _mm256_loadu_ps(p.add(i + 24)));
        }
        i += 32;
    }
    let total = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0.0f32; 8];
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), total) };
    lanes.iter().map(|&x| x as f64).sum::<f64>() + scalar::read_sum(&data[body..])
}
