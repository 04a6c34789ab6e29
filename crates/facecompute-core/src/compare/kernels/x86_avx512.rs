//! AVX-512F kernels: the AVX2 scheme with twice the lanes. Each 16-float block is read as two 8-float
//! halves that widen straight into 512-bit f64 registers.

use super::scalar;
use crate::compare::metric::{Metric, QueryStats};
use std::arch::x86_64::*;

const LANES: usize = 16;

/// # Safety
/// The CPU must support AVX-512F; `targets.len() == out.len() * dims` and `query.len() == dims`.
#[target_feature(enable = "avx512f")]
pub unsafe fn distances(query: &[f64], stats: &QueryStats, metric: Metric, targets: &[f32], dims: usize, out: &mut [f64]) {
    let rows = targets.chunks_exact(dims);
    if metric.reads_difference() {
        for (slot, row) in out.iter_mut().zip(rows) {
            *slot = metric.finish(stats, unsafe { squared_difference(query, row) }, 0.0);
        }
    } else {
        for (slot, row) in out.iter_mut().zip(rows) {
            let (dot, tt) = unsafe { dot_and_norm(query, row) };
            *slot = metric.finish(stats, dot, tt);
        }
    }
}

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn dot_and_norm(q: &[f64], t: &[f32]) -> (f64, f64) {
    let n = t.len();
    let body = n - n % LANES;
    let (qp, tp) = (q.as_ptr(), t.as_ptr());
    let (mut d0, mut d1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let (mut n0, mut n1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let xl = _mm512_cvtps_pd(_mm256_loadu_ps(tp.add(i)));
            let xh = _mm512_cvtps_pd(_mm256_loadu_ps(tp.add(i + 8)));
            d0 = _mm512_fmadd_pd(_mm512_loadu_pd(qp.add(i)), xl, d0);
            d1 = _mm512_fmadd_pd(_mm512_loadu_pd(qp.add(i + 8)), xh, d1);
            n0 = _mm512_fmadd_pd(xl, xl, n0);
            n1 = _mm512_fmadd_pd(xh, xh, n1);
        }
        i += LANES;
    }
    let (td, tn) = scalar::dot_and_norm(&q[body..], &t[body..]);
    (_mm512_reduce_add_pd(_mm512_add_pd(d0, d1)) + td, _mm512_reduce_add_pd(_mm512_add_pd(n0, n1)) + tn)
}

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn squared_difference(q: &[f64], t: &[f32]) -> f64 {
    let n = t.len();
    let body = n - n % LANES;
    let (qp, tp) = (q.as_ptr(), t.as_ptr());
    let (mut s0, mut s1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let mut i = 0;
    while i < body {
        unsafe {
            let dl = _mm512_sub_pd(_mm512_loadu_pd(qp.add(i)), _mm512_cvtps_pd(_mm256_loadu_ps(tp.add(i))));
            let dh = _mm512_sub_pd(_mm512_loadu_pd(qp.add(i + 8)), _mm512_cvtps_pd(_mm256_loadu_ps(tp.add(i + 8))));
            s0 = _mm512_fmadd_pd(dl, dl, s0);
            s1 = _mm512_fmadd_pd(dh, dh, s1);
        }
        i += LANES;
    }
    _mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) + scalar::squared_difference(&q[body..], &t[body..])
}

/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn read_sum(data: &[f32]) -> f64 {
    let n = data.len();
    let body = n - n % 64;
    let p = data.as_ptr();
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    while i < body {
        unsafe {
            acc[0] = _mm512_add_ps(acc[0], _mm512_loadu_ps(p.add(i)));
            acc[1] = _mm512_add_ps(acc[1], _mm512_loadu_ps(p.add(i + 16)));
            acc[2] = _mm512_add_ps(acc[2], _mm512_loadu_ps(p.add(i + 32)));
            acc[3] = _mm512_add_ps(acc[3], _mm512_loadu_ps(p.add(i + 48)));
        }
        i += 64;
    }
    let total = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    _mm512_reduce_add_ps(total) as f64 + scalar::read_sum(&data[body..])
}
