//! Many sources against many targets: one top-k list per source.
//!
//! The dot products of every source with every target are a matrix product S·Tᵀ, computed block by
//! block with `matrixmultiply`'s f32 GEMM (packed panels, a register-blocked micro-kernel, AVX-512,
//! AVX2 or NEON chosen at run time): a few hundred FLOPs per pair at a large fraction of the core's
//! peak, where K separate scans would each be bound by reading the targets again.
//!
//! f32 sums miss the float64 agreement the service promises (a 128-term f32 dot product may be off by
//! ~1e-5), so the GEMM only *screens*: every pair gets a rigorous error bound (γₙ·‖s‖·‖t‖, Higham's
//! bound for any summation order, plus slack for the f64 arithmetic around it), each source keeps the
//! targets whose lower bound is below the k-th smallest upper bound, and those candidates (typically
//! k and a few more) are recomputed by the same f64 kernels as the one-to-many path. The answer is
//! therefore identical to K one-to-many calls, bit for bit, only faster.
//!
//! Vectors outside the range where the f32 bound holds (components beyond 2⁵⁰, which could overflow;
//! norms below 2⁻⁵⁰, which could underflow; zero vectors) are never screened: such a target is always
//! a candidate and such a source runs the one-to-many path.

use super::kernels::Kernel;
use super::metric::{Metric, QueryStats, L2_EPSILON};
use super::validate::{check_dims, count_vectors, first_non_finite, non_finite_error};
use super::{compare_with, parallel, topk, Comparison, Options};
use crate::error::{CoreError, CoreResult, ErrorCode};
use std::collections::BinaryHeap;

/// Below this many sources the matrix product has too little reuse to beat separate scans.
pub const MIN_GEMM_SOURCES: usize = 4;
/// Targets and sources per block: a 512 × 384 f32 block of dot products (768 KiB) stays in L2 next to
/// the packed panels (measured: 384/512 was the best of 256–1024 targets × 128–1024 sources).
const TARGET_BLOCK: usize = 384;
const SOURCE_BLOCK: usize = 512;
/// Components beyond this could overflow an f32 product sum; norms below its inverse could underflow.
const SAFE_MAX: f32 = (1u64 << 50) as f32;
const SAFE_MIN_NORM: f64 = 1.0 / (1u64 << 50) as f64;

/// `sources` (K×dims) against `targets` (N×dims), row-major. `k`: `None` returns every distance of
/// every source in target order; `Some(k)` the k nearest per source, nearest first, ties by index.
pub fn compare_many_to_many(options: Options, sources: &[f32], targets: &[f32], dims: usize, metric: Metric, k: Option<usize>) -> CoreResult<Vec<Comparison>> {
    check_dims(dims)?;
    if k == Some(0) {
        return Err(CoreError::invalid_request("top_k must be at least 1"));
    }
    if !sources.len().is_multiple_of(dims) || sources.is_empty() {
        return Err(CoreError::new(
            ErrorCode::EmbeddingDimensionMismatch,
            format!("{} source values do not split into vectors of {dims} dimensions", sources.len()),
        ));
    }
    if let Some(at) = first_non_finite(sources) {
        return Err(CoreError::new(
            ErrorCode::InvalidEmbedding,
            format!("source {} has a non-finite value (NaN or Infinity) at position {}", at / dims, at % dims),
        ));
    }
    let count = count_vectors(targets.len(), dims)?;
    if u32::try_from(count).is_err() {
        return Err(CoreError::invalid_request("too many target vectors for one comparison"));
    }
    let source_count = sources.len() / dims;
    let screened = match k {
        Some(k) if source_count >= MIN_GEMM_SOURCES && k < count => Some(k),
        _ => None,
    };
    let Some(k) = screened else {
        // Every distance is wanted (or there is too little to screen): the one-to-many path per source.
        return sources.chunks_exact(dims).map(|s| compare_with(options, s, targets, dims, metric, k)).collect();
    };
    let rows = TargetRows::of(targets, dims)?;
    let kernel = options.kernel.unwrap_or_else(Kernel::best);
    // Every thread keeps a selection per source; bound what they may hold together (a candidate
    // list can reach `candidate_limit` entries before it falls back) to ~256 MiB.
    let per_thread = source_count.saturating_mul(candidate_limit(k) * 16 + (k + 1) * 8);
    let threads = threads_for(source_count, count, dims, options.max_threads).min((SELECTION_BUDGET / per_thread.max(1)).max(1));
    let plan = Plan::new(sources, dims, metric);
    let selections = screen(kernel, &plan, &rows, targets, dims, k, threads);
    let mut out = Vec::with_capacity(source_count);
    let mut screened_iter = selections.into_iter();
    for (i, source) in sources.chunks_exact(dims).enumerate() {
        let one_to_many = Options { kernel: Some(kernel), ..options };
        if plan.exact[i] {
            out.push(compare_with(one_to_many, source, targets, dims, metric, Some(k))?);
            continue;
        }
        let selection = screened_iter.next().ok_or_else(|| CoreError::new(ErrorCode::InternalError, "a screened source has no selection"))?;
        match selection.finish(&rows.unscreened) {
            Some(candidates) => out.push(refine(kernel, source, targets, dims, metric, k, count, &candidates)),
            None => out.push(compare_with(one_to_many, source, targets, dims, metric, Some(k))?),
        }
    }
    Ok(out)
}

/// Threads for K×N×dims multiply-adds: one per 2²⁶ (a few milliseconds), up to the limit.
fn threads_for(sources: usize, targets: usize, dims: usize, limit: usize) -> usize {
    let limit = if limit == 0 { parallel::available_threads() } else { limit };
    let work = sources.saturating_mul(targets).saturating_mul(dims);
    (work >> 26).clamp(1, limit.max(1)).min(targets.div_ceil(TARGET_BLOCK)).max(1)
}

/// Per target, what the screen's keys need (precomputed so the hot loop never divides); NaN for the
/// targets the screen cannot bound, which makes every screening comparison false for them.
struct TargetRows {
    norm: Vec<f64>,
    squared: Vec<f64>,
    /// 1/‖t‖ (cosine, angular).
    inverse: Vec<f64>,
    /// 1/(‖t‖+ε) and ‖t‖²/(‖t‖+ε)² (euclidean_l2).
    l2_inverse: Vec<f64>,
    l2_self: Vec<f64>,
    /// Targets the screen cannot bound; always candidates.
    unscreened: Vec<u32>,
}

impl TargetRows {
    fn of(targets: &[f32], dims: usize) -> CoreResult<TargetRows> {
        let n = targets.len() / dims;
        let mut norm = Vec::with_capacity(n);
        let mut squared = Vec::with_capacity(n);
        let (mut inverse, mut l2_inverse, mut l2_self) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let mut unscreened = Vec::new();
        for (j, row) in targets.chunks_exact(dims).enumerate() {
            let (tt, max) = squared_norm_and_max(row);
            if !tt.is_finite() {
                let at = first_non_finite(row).unwrap_or(0);
                return Err(non_finite_error(j, at));
            }
            let tn = tt.sqrt();
            let (tn, tt) = if max > SAFE_MAX || tn < SAFE_MIN_NORM {
                unscreened.push(j as u32);
                (f64::NAN, f64::NAN)
            } else {
                (tn, tt)
            };
            let td = tn + L2_EPSILON;
            norm.push(tn);
            squared.push(tt);
            inverse.push(1.0 / tn);
            l2_inverse.push(1.0 / td);
            l2_self.push(tt / (td * td));
        }
        Ok(TargetRows { norm, squared, inverse, l2_inverse, l2_self, unscreened })
    }
}

/// Σx² in f64 and max |x|; a NaN or Infinity makes the sum non-finite.
fn squared_norm_and_max(row: &[f32]) -> (f64, f32) {
    let mut acc = [0.0f64; 8];
    let mut max = 0u32;
    let chunks = row.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for lane in 0..8 {
            let x = c[lane] as f64;
            acc[lane] += x * x;
            max = max.max(c[lane].to_bits() & 0x7fff_ffff);
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for &x in tail {
        s += (x as f64) * (x as f64);
        max = max.max(x.to_bits() & 0x7fff_ffff);
    }
    (s, f32::from_bits(max))
}

/// The screened sources packed for the GEMM, with what each one's bounds need.
struct Plan {
    metric: Metric,
    /// Per source: true when it runs the one-to-many path instead.
    exact: Vec<bool>,
    /// The screened sources, contiguous (S in S·Tᵀ).
    packed: Vec<f32>,
    norm: Vec<f64>,
    squared: Vec<f64>,
    /// Bound on |fl32(s·t) − s·t| / (‖s‖·‖t‖), with slack for the f64 arithmetic around it.
    gamma: f64,
}

impl Plan {
    fn new(sources: &[f32], dims: usize, metric: Metric) -> Plan {
        let mut exact = Vec::new();
        let mut packed = Vec::with_capacity(sources.len());
        let (mut norm, mut squared) = (Vec::new(), Vec::new());
        for row in sources.chunks_exact(dims) {
            let (qq, max) = squared_norm_and_max(row);
            let qn = qq.sqrt();
            let unsafe_range = max > SAFE_MAX || qn < SAFE_MIN_NORM;
            exact.push(unsafe_range);
            if !unsafe_range {
                packed.extend_from_slice(row);
                norm.push(qn);
                squared.push(qq);
            }
        }
        // Higham's γₙ = nu/(1−nu) with u = 2⁻²⁴ bounds any-order f32 summation of n products; the
        // factor and the 2⁻³⁰ term cover products that underflow (each off by < 2⁻¹⁴⁹, against
        // ‖s‖·‖t‖ ≥ 2⁻¹⁰⁰) and the few roundings of the f64 key arithmetic.
        let nu = dims as f64 * (f32::EPSILON as f64 / 2.0);
        let gamma = nu / (1.0 - nu) * (1.0 + 1.0 / 64.0) + 2f64.powi(-30);
        Plan { metric, exact, packed, norm, squared, gamma }
    }

    fn screened(&self) -> usize {
        self.norm.len()
    }
}

/// Bytes all threads' selections may hold together in the worst case (see `compare_many_to_many`).
const SELECTION_BUDGET: usize = 256 << 20;

/// Candidates a source may collect before it takes the one-to-many path instead.
fn candidate_limit(k: usize) -> usize {
    8 * k + 2048
}

/// The k smallest upper bounds seen so far (their maximum is the admission threshold τ), and every
/// target whose lower bound was at most τ when it was seen.
struct Selection {
    k: usize,
    upper: BinaryHeap<OrderedF64>,
    tau: f64,
    candidates: Vec<(f64, u32)>,
    /// Too many targets could not be told apart (e.g. many equal targets): this source falls back to
    /// the one-to-many path instead of holding an unbounded candidate list.
    overflowed: bool,
}

#[derive(Clone, Copy)]
struct OrderedF64(f64);
impl PartialEq for OrderedF64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrderedF64 {}
impl PartialOrd for OrderedF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Selection {
    fn new(k: usize) -> Selection {
        Selection { k, upper: BinaryHeap::with_capacity(k + 1), tau: f64::INFINITY, candidates: Vec::new(), overflowed: false }
    }

    #[inline]
    fn offer(&mut self, lower: f64, upper: f64, j: u32) {
        // NaN bounds (unscreened targets) never enter.
        if lower.is_nan() || lower > self.tau || self.overflowed {
            return;
        }
        self.candidates.push((lower, j));
        if self.upper.len() < self.k {
            self.upper.push(OrderedF64(upper));
        } else if upper < self.tau {
            self.upper.pop();
            self.upper.push(OrderedF64(upper));
        } else {
            return;
        }
        if self.upper.len() == self.k {
            self.tau = self.upper.peek().map_or(f64::INFINITY, |x| x.0);
        }
        if self.candidates.len() > 4 * self.k + 256 {
            let tau = self.tau;
            self.candidates.retain(|c| c.0 <= tau);
            if self.candidates.len() > self.limit() {
                self.overflow();
            }
        }
    }

    fn limit(&self) -> usize {
        candidate_limit(self.k)
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.candidates = Vec::new();
        self.upper.clear();
    }

    /// Merges another thread's selection over a disjoint target range.
    fn merge(&mut self, other: Selection) {
        if self.overflowed || other.overflowed {
            self.overflow();
            return;
        }
        for u in other.upper {
            if self.upper.len() < self.k {
                self.upper.push(u);
            } else if u.0 < self.tau {
                self.upper.pop();
                self.upper.push(u);
            }
            if self.upper.len() == self.k {
                self.tau = self.upper.peek().map_or(f64::INFINITY, |x| x.0);
            }
        }
        self.candidates.extend(other.candidates);
        let tau = self.tau;
        self.candidates.retain(|c| c.0 <= tau);
    }

    /// Candidate target indices, ascending, with the unscreened targets; `None` after an overflow.
    fn finish(self, unscreened: &[u32]) -> Option<Vec<u32>> {
        if self.overflowed {
            return None;
        }
        let tau = self.tau;
        let mut out: Vec<u32> = self.candidates.into_iter().filter(|c| c.0 <= tau).map(|c| c.1).chain(unscreened.iter().copied()).collect();
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}

/// Runs the blocked GEMM over every target, on `threads` disjoint target ranges; returns one
/// selection per screened source.
fn screen(kernel: Kernel, plan: &Plan, rows: &TargetRows, targets: &[f32], dims: usize, k: usize, threads: usize) -> Vec<Selection> {
    let n = rows.norm.len();
    let work = |first: usize, end: usize| -> Vec<Selection> {
        let mut selections: Vec<Selection> = (0..plan.screened()).map(|_| Selection::new(k)).collect();
        let mut block = vec![0f32; SOURCE_BLOCK.min(plan.screened()) * TARGET_BLOCK];
        let mut t0 = first;
        while t0 < end {
            let nb = TARGET_BLOCK.min(end - t0);
            let t = &targets[t0 * dims..(t0 + nb) * dims];
            let mut s0 = 0;
            while s0 < plan.screened() {
                let mb = SOURCE_BLOCK.min(plan.screened() - s0);
                let a = &plan.packed[s0 * dims..(s0 + mb) * dims];
                let c = &mut block[..mb * nb];
                // SAFETY: A is mb×dims row-major, B = Tᵀ (dims×nb, read through strides from the
                // nb×dims row-major block), C is mb×nb row-major; all three slices have those sizes.
                unsafe {
                    matrixmultiply::sgemm(mb, dims, nb, 1.0, a.as_ptr(), dims as isize, 1, t.as_ptr(), 1, dims as isize, 0.0, c.as_mut_ptr(), nb as isize, 1);
                }
                for (r, dots) in c.chunks_exact(nb).enumerate() {
                    let i = s0 + r;
                    screen_row(kernel, plan, i, dots, rows, t0, &mut selections[i]);
                }
                s0 += mb;
            }
            t0 += nb;
        }
        selections
    };
    if threads <= 1 {
        return work(0, n);
    }
    let per = n.div_ceil(threads).div_ceil(TARGET_BLOCK) * TARGET_BLOCK;
    let ranges: Vec<(usize, usize)> = (0..threads).map(|t| (t * per, ((t + 1) * per).min(n))).filter(|r| r.0 < r.1).collect();
    let parts: Vec<Vec<Selection>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges[1..].iter().map(|&(a, b)| { let work = &work; scope.spawn(move || work(a, b)) }).collect();
        let mut parts = vec![work(ranges[0].0, ranges[0].1)];
        for h in handles {
            // A panic in a worker re-raises here and reaches the binding's guard.
            parts.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        parts
    });
    let mut parts = parts.into_iter();
    let mut merged = parts.next().unwrap_or_default();
    for part in parts {
        for (m, p) in merged.iter_mut().zip(part) {
            m.merge(p);
        }
    }
    merged
}

/// Screens one source's row of dot products with the widest instruction set the kernel allows (the
/// crate is built for baseline x86-64, so the vectorised loop is compiled once per target feature).
fn screen_row(kernel: Kernel, plan: &Plan, i: usize, dots: &[f32], rows: &TargetRows, t0: usize, sel: &mut Selection) {
    if sel.overflowed {
        return;
    }
    match kernel {
        // SAFETY: the features were detected at run time (is_supported).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 if kernel.is_supported() => unsafe { screen_row_avx512(plan, i, dots, rows, t0, sel) },
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 if kernel.is_supported() => unsafe { screen_row_avx2(plan, i, dots, rows, t0, sel) },
        _ => screen_row_generic(plan, i, dots, rows, t0, sel),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn screen_row_avx512(plan: &Plan, i: usize, dots: &[f32], rows: &TargetRows, t0: usize, sel: &mut Selection) {
    screen_row_generic(plan, i, dots, rows, t0, sel)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn screen_row_avx2(plan: &Plan, i: usize, dots: &[f32], rows: &TargetRows, t0: usize, sel: &mut Selection) {
    screen_row_generic(plan, i, dots, rows, t0, sel)
}

/// The keys are monotone in the final distance: 1 − similarity for cosine and angular, the squared
/// distance for the euclidean metrics. A chunk none of whose lower bounds is at most τ is skipped
/// after one vectorised pass.
#[inline(always)]
fn screen_row_generic(plan: &Plan, i: usize, dots: &[f32], rows: &TargetRows, t0: usize, sel: &mut Selection) {
    let range = t0..t0 + dots.len();
    let (qn, qq, g) = (plan.norm[i], plan.squared[i], plan.gamma);
    match plan.metric {
        Metric::Cosine | Metric::Angular => {
            let iq = 1.0 / qn;
            scan(dots, [&rows.inverse[range]], t0, sel, |c, [w]| (1.0 - c * iq * w, g));
        }
        Metric::EuclideanL2 => {
            let qd = qn + L2_EPSILON;
            let (a, w2) = (qq / (qd * qd), 2.0 / qd);
            scan(dots, [&rows.l2_inverse[range.clone()], &rows.l2_self[range]], t0, sel, |c, [w, b]| (a + b - w2 * c * w, 2.0 * g));
        }
        Metric::Euclidean => {
            let (e2, slack) = (2.0 * g * qn, 2f64.powi(-40));
            scan(dots, [&rows.norm[range.clone()], &rows.squared[range]], t0, sel, |c, [tn, tt]| (qq + tt - 2.0 * c, e2 * tn + (qq + tt) * slack));
        }
    }
}

/// `key(dot, per-target values) -> (key, half-width)`. Every column is sliced to the chunk's length
/// first, so the inner loop has no bounds checks and vectorises.
#[inline(always)]
fn scan<const A: usize>(dots: &[f32], columns: [&[f64]; A], t0: usize, sel: &mut Selection, key: impl Fn(f64, [f64; A]) -> (f64, f64)) {
    const CHUNK: usize = 64;
    let mut base = 0;
    while base < dots.len() {
        let len = CHUNK.min(dots.len() - base);
        let d = &dots[base..base + len];
        let cols: [&[f64]; A] = columns.map(|c| &c[base..base + len]);
        // An OR of comparisons vectorises; a float min reduction would not (NaN ordering).
        let tau = sel.tau;
        let mut hit = 0u8;
        if len == CHUNK {
            // Fixed trip counts: fully vectorised, no remainder loop.
            for lane in 0..CHUNK / 16 {
                let d: &[f32; 16] = d[lane * 16..lane * 16 + 16].try_into().unwrap_or(&[0.0; 16]);
                let cols: [&[f64; 16]; A] = cols.map(|c| c[lane * 16..lane * 16 + 16].try_into().unwrap_or(&[0.0; 16]));
                for o in 0..16 {
                    let (k, e) = key(d[o] as f64, cols.map(|c| c[o]));
                    hit |= (k - e <= tau) as u8;
                }
            }
        } else {
            for o in 0..len {
                let (k, e) = key(d[o] as f64, cols.map(|c| c[o]));
                hit |= (k - e <= tau) as u8;
            }
        }
        if hit != 0 {
            for o in 0..len {
                let (k, e) = key(d[o] as f64, cols.map(|c| c[o]));
                sel.offer(k - e, k + e, (t0 + base + o) as u32);
            }
        }
        base += len;
    }
}

/// The exact f64 distances of the candidates (the one-to-many kernel on a gathered copy), then the
/// k nearest by (distance, index), exactly as `compare_with` would choose them.
#[allow(clippy::too_many_arguments)]
fn refine(kernel: Kernel, source: &[f32], targets: &[f32], dims: usize, metric: Metric, k: usize, count: usize, candidates: &[u32]) -> Comparison {
    let query64: Vec<f64> = source.iter().map(|&x| x as f64).collect();
    let stats = QueryStats::of(&query64);
    let mut gathered = Vec::with_capacity(candidates.len() * dims);
    for &j in candidates {
        let j = j as usize;
        gathered.extend_from_slice(&targets[j * dims..(j + 1) * dims]);
    }
    let mut distances = vec![0f64; candidates.len()];
    kernel.distances(&query64, &stats, metric, &gathered, dims, &mut distances);
    // Candidates are ascending, so ties by candidate position are ties by target index.
    let (positions, distances) = topk::top_k(&distances, k);
    Comparison { indices: positions.into_iter().map(|p| candidates[p as usize]).collect(), distances, count }
}

/// Benchmark yardstick: this core's peak f32 multiply-add rate in GFLOP/s, from a tight loop of
/// independent FMAs on the widest vectors the CPU has (12 accumulators hide the FMA latency), run
/// for about `seconds` on the calling thread in short slices. The best slice is the estimate: on a
/// shared machine a slice that lost the core to a neighbour says nothing about the core.
pub fn peak_f32_gflops(seconds: f64) -> f64 {
    let start = std::time::Instant::now();
    let mut best = 0f64;
    let mut sink = 0f32;
    while start.elapsed().as_secs_f64() < seconds {
        let slice = std::time::Instant::now();
        let (f, s) = fma_loop(1 << 18);
        best = best.max(f / slice.elapsed().as_secs_f64() / 1e9);
        sink += s;
    }
    std::hint::black_box(sink);
    best
}

/// Returns (FLOPs done, a value that depends on all of them).
fn fma_loop(iterations: usize) -> (f64, f32) {
    #[cfg(target_arch = "x86_64")]
    {
        if Kernel::Avx512.is_supported() {
            // SAFETY: detected at run time.
            return (iterations as f64 * 12.0 * 16.0 * 2.0, unsafe { fma_avx512(iterations) });
        }
        if Kernel::Avx2.is_supported() {
            // SAFETY: detected at run time.
            return (iterations as f64 * 12.0 * 8.0 * 2.0, unsafe { fma_avx2(iterations) });
        }
    }
    let mut acc = [0f32; 12];
    for _ in 0..iterations {
        for a in acc.iter_mut() {
            *a = a.mul_add(0.999_999, 1e-7);
        }
    }
    (iterations as f64 * 12.0 * 2.0, acc.iter().sum())
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_avx512(iterations: usize) -> f32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
    let mut acc = [_mm512_setzero_ps(); 12];
    for _ in 0..iterations {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, a, b);
        }
    }
    _mm512_reduce_add_ps(acc.iter().fold(_mm512_setzero_ps(), |s, &x| _mm512_add_ps(s, x)))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_avx2(iterations: usize) -> f32 {
    use std::arch::x86_64::*;
    let (a, b) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
    let mut acc = [_mm256_setzero_ps(); 12];
    for _ in 0..iterations {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, a, b);
        }
    }
    let total = acc.iter().fold(_mm256_setzero_ps(), |s, &x| _mm256_add_ps(s, x));
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), total);
    lanes.iter().sum()
}
