//! Portable kernels: the fallback on CPUs without a SIMD path, and the reference the SIMD kernels are
//! tested against. Four independent f64 accumulators let the CPU overlap the additions.

use crate::compare::metric::{Metric, QueryStats};

pub fn distances(query: &[f64], stats: &QueryStats, metric: Metric, targets: &[f32], dims: usize, out: &mut [f64]) {
    let rows = targets.chunks_exact(dims);
    if metric.reads_difference() {
        for (slot, row) in out.iter_mut().zip(rows) {
            *slot = metric.finish(stats, squared_difference(query, row), 0.0);
        }
    } else {
        for (slot, row) in out.iter_mut().zip(rows) {
            let (dot, tt) = dot_and_norm(query, row);
            *slot = metric.finish(stats, dot, tt);
        }
    }
}

#[inline(always)]
pub(super) fn dot_and_norm(q: &[f64], t: &[f32]) -> (f64, f64) {
    let mut dot = [0.0f64; 4];
    let mut tt = [0.0f64; 4];
    let q4 = q.chunks_exact(4);
    let t4 = t.chunks_exact(4);
    let (q_tail, t_tail) = (q4.remainder(), t4.remainder());
    for (qc, tc) in q4.zip(t4) {
        for lane in 0..4 {
            let x = tc[lane] as f64;
            dot[lane] += qc[lane] * x;
            tt[lane] += x * x;
        }
    }
    let mut d = (dot[0] + dot[1]) + (dot[2] + dot[3]);
    let mut n = (tt[0] + tt[1]) + (tt[2] + tt[3]);
    for (&a, &b) in q_tail.iter().zip(t_tail) {
        let x = b as f64;
        d += a * x;
        n += x * x;
    }
    (d, n)
}

#[inline(always)]
pub(super) fn squared_difference(q: &[f64], t: &[f32]) -> f64 {
    let mut acc = [0.0f64; 4];
    let q4 = q.chunks_exact(4);
    let t4 = t.chunks_exact(4);
    let (q_tail, t_tail) = (q4.remainder(), t4.remainder());
    for (qc, tc) in q4.zip(t4) {
        for lane in 0..4 {
            let diff = qc[lane] - tc[lane] as f64;
            acc[lane] += diff * diff;
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (&a, &b) in q_tail.iter().zip(t_tail) {
        let diff = a - b as f64;
        s += diff * diff;
    }
    s
}

/// Sequential sum over the bytes, the memory-bandwidth yardstick of the benchmark.
pub fn read_sum(data: &[f32]) -> f64 {
    let mut acc = [0.0f32; 8];
    let chunks = data.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for lane in 0..8 {
            acc[lane] += c[lane];
        }
    }
    acc.iter().chain(tail).map(|&x| x as f64).sum()
}
