//! NEON kernels for aarch64, where NEON is part of the baseline: f32 targets widened to f64x2 pairs.

use super::scalar;
use crate::compare::metric::{Metric, QueryStats};
use std::arch::aarch64::*;

const LANES: usize = 4;

/// # Safety
/// `targets.len() == out.len() * dims` and `query.len() == dims`.
#[target_feature(enable = "neon")]
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
#[target_feature(enable = "neon")]
unsafe fn dot_and_norm(q: &[f64], t: &[f32]) -> (f64, f64) {
    let n = t.len();
    let body = n - n % LANES;
    let (qp, tp) = (q.as_ptr(), t.as_ptr());
    let (mut d0, mut d1) = (vdupq_n_f64(0.0), vdupq_n_f64(0.0));
    let (mut n0, mut n1) = (vdupq_n_f64(0.0), vdupq_n_f64(0.0));
    let mut i = 0;
    while i < body {
        unsafe {
            let x = vld1q_f32(tp.add(i));
            let xl = vcvt_f64_f32(vget_low_f32(x));
            let xh = vcvt_high_f64_f32(x);
            d0 = vfmaq_f64(d0, vld1q_f64(qp.add(i)), xl);
            d1 = vfmaq_f64(d1, vld1q_f64(qp.add(i + 2)), xh);
            n0 = vfmaq_f64(n0, xl, xl);
            n1 = vfmaq_f64(n1, xh, xh);
        }
        i += LANES;
    }
    let (td, tn) = scalar::dot_and_norm(&q[body..], &t[body..]);
    (vaddvq_f64(vaddq_f64(d0, d1)) + td, vaddvq_f64(vaddq_f64(n0, n1)) + tn)
}

#[inline]
#[target_feature(enable = "neon")]
unsafe fn squared_difference(q: &[f64], t: &[f32]) -> f64 {
    let n = t.len();
    let body = n - n % LANES;
    let (qp, tp) = (q.as_ptr(), t.as_ptr());
    let (mut s0, mut s1) = (vdupq_n_f64(0.0), vdupq_n_f64(0.0));
    let mut i = 0;
    while i < body {
        unsafe {
            let x = vld1q_f32(tp.add(i));
            let dl = vsubq_f64(vld1q_f64(qp.add(i)), vcvt_f64_f32(vget_low_f32(x)));
            let dh = vsubq_f64(vld1q_f64(qp.add(i + 2)), vcvt_high_f64_f32(x));
            s0 = vfmaq_f64(s0, dl, dl);
            s1 = vfmaq_f64(s1, dh, dh);
        }
        i += LANES;
    }
    vaddvq_f64(vaddq_f64(s0, s1)) + scalar::squared_difference(&q[body..], &t[body..])
}

/// # Safety
/// Always sound on aarch64 (NEON is baseline); `unsafe` only mirrors the x86 signatures.
#[target_feature(enable = "neon")]
pub unsafe fn read_sum(data: &[f32]) -> f64 {
    let n = data.len();
    let body = n - n % 16;
    let p = data.as_ptr();
    let mut acc = [vdupq_n_f32(0.0); 4];
    let mut i = 0;
    while i < body {
        unsafe {
            acc[0] = vaddq_f32(acc[0], vld1q_f32(p.add(i)));
            acc[1] = vaddq_f32(acc[1], vld1q_f32(p.add(i + 4)));
            acc[2] = vaddq_f32(acc[2], vld1q_f32(p.add(i + 8)));
            acc[3] = vaddq_f32(acc[3], vld1q_f32(p.add(i + 12)));
        }
        i += 16;
    }
    let total = vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3]));
    vaddvq_f32(total) as f64 + scalar::read_sum(&data[body..])
}
