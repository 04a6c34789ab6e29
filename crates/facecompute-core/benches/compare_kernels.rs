//! Our hand-written kernels against SimSIMD (the well-kept crate we would otherwise use), one thread,
//! one query against N rows, cosine and euclidean. Prints speed and the worst error against a float64
//! reference, and writes bench/results/compare-kernels.json.
//!
//!   cargo bench -p facecompute-core --bench compare_kernels
//!
//! SimSIMD's f32 kernels accumulate in f32, so they are faster in compute-bound cases but do not meet
//! the 1e-6 agreement with float64 that the service promises; both facts are printed.

use facecompute_core::compare::{compare_with, Kernel, Metric, Options};
use simsimd::SpatialSimilarity;
use std::hint::black_box;
use std::time::Instant;

/// One implementation under test: computes every row's distance.
type Impl = Box<dyn Fn() -> Vec<f64>>;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Best of several runs: the machine is shared, so the fastest run is the best estimate.
fn best_seconds(mut f: impl FnMut()) -> f64 {
    f();
    let mut best = f64::MAX;
    let start = Instant::now();
    let mut runs = 0;
    while runs < 7 || (start.elapsed().as_secs_f64() < 0.3 && runs < 200) {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    best
}

fn reference(metric: Metric, q: &[f32], t: &[f32]) -> f64 {
    let (mut dot, mut qq, mut tt, mut sq) = (0f64, 0f64, 0f64, 0f64);
    for (&a, &b) in q.iter().zip(t) {
        let (a, b) = (a as f64, b as f64);
        dot += a * b;
        qq += a * a;
        tt += b * b;
        sq += (a - b) * (a - b);
    }
    match metric {
        Metric::Euclidean => sq.sqrt(),
        _ => 1.0 - dot / (qq.sqrt() * tt.sqrt()),
    }
}

fn simsimd_rows(metric: Metric, q: &[f32], targets: &[f32], dims: usize, out: &mut [f64]) {
    for (slot, row) in out.iter_mut().zip(targets.chunks_exact(dims)) {
        *slot = match metric {
            Metric::Euclidean => <f32 as SpatialSimilarity>::l2(q, row).unwrap_or(f64::NAN),
            _ => <f32 as SpatialSimilarity>::cos(q, row).unwrap_or(f64::NAN),
        };
    }
}

fn main() {
    let mut json = Vec::new();
    println!("{:>7} {:>4} {:<10} {:<14} {:>14} {:>8} {:>12}", "n", "dims", "metric", "impl", "vectors/s", "GB/s", "max error");
    for dims in [128usize, 512] {
        for n in [1_000usize, 10_000, 100_000] {
            let q = random(dims, 1);
            let mut targets = random(n * dims, 2);
            // One adversarial row: a large offset that f32 accumulation loses.
            for x in &mut targets[..dims] {
                *x += 1000.0;
            }
            for metric in [Metric::Cosine, Metric::Euclidean] {
                let want: Vec<f64> = targets.chunks_exact(dims).map(|t| reference(metric, &q, t)).collect();
                let mut impls: Vec<(String, Impl)> = Vec::new();
                for kernel in Kernel::supported() {
                    let (q, t) = (q.clone(), targets.clone());
                    impls.push((
                        kernel.as_str().to_string(),
                        Box::new(move || compare_with(Options { kernel: Some(kernel), max_threads: 1 }, &q, &t, dims, metric, None).unwrap().distances),
                    ));
                }
                let (q2, t2) = (q.clone(), targets.clone());
                impls.push((
                    "simsimd".to_string(),
                    Box::new(move || {
                        let mut out = vec![0f64; n];
                        simsimd_rows(metric, &q2, &t2, dims, &mut out);
                        out
                    }),
                ));
                for (name, f) in &impls {
                    let got = f();
                    let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f64, f64::max);
                    let secs = best_seconds(|| {
                        black_box(f());
                    });
                    let vps = n as f64 / secs;
                    let gbps = (n * dims * 4) as f64 / secs / 1e9;
                    println!("{n:>7} {dims:>4} {:<10} {name:<14} {vps:>14.0} {gbps:>8.2} {err:>12.3e}", metric.as_str());
                    json.push(format!(
                        "{{\"n\":{n},\"dims\":{dims},\"metric\":\"{}\",\"impl\":\"{name}\",\"threads\":1,\"vectors_per_s\":{vps:.1},\"gb_per_s\":{gbps:.4},\"max_abs_error\":{err:e}}}",
                        metric.as_str()
                    ));
                }
            }
        }
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/results/compare-kernels.json");
    std::fs::write(path, format!("[\n  {}\n]\n", json.join(",\n  "))).expect("write bench/results/compare-kernels.json");
    println!("wrote bench/results/compare-kernels.json");
}
