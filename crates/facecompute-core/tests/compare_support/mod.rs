//! Shared by the compare tests: a seeded generator and a plain float64 port of DeepFace's formulas.
#![allow(dead_code)]

use facecompute_core::compare::Metric;

/// SplitMix64: deterministic, dependency-free, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn vector(&mut self, dims: usize) -> Vec<f32> {
        (0..dims).map(|_| self.unit()).collect()
    }
}

/// DeepFace's pairwise formulas (reference §4.1) in float64, written the obvious way. Two
/// documented choices: the cosine argument of arccos is clamped into [-1, 1], and a zero vector has
/// similarity 0 (DeepFace's batch form with ε = 1e-10).
pub fn reference(metric: Metric, a: &[f32], b: &[f32]) -> f64 {
    let a: Vec<f64> = a.iter().map(|&x| x as f64).collect();
    let b: Vec<f64> = b.iter().map(|&x| x as f64).collect();
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    let similarity = if na * nb == 0.0 { 0.0 } else { dot / (na * nb) };
    match metric {
        Metric::Cosine => 1.0 - similarity,
        Metric::Angular => similarity.clamp(-1.0, 1.0).acos() / std::f64::consts::PI,
        Metric::Euclidean => a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt(),
        Metric::EuclideanL2 => {
            let (da, db) = (na + 1e-10, nb + 1e-10);
            a.iter().zip(&b).map(|(x, y)| (x / da - y / db).powi(2)).sum::<f64>().sqrt()
        }
    }
}

/// 1e-6 absolute, or relative once a distance exceeds 1 (raw euclidean on large values).
pub fn assert_close(got: f64, want: f64, what: &str) {
    let tolerance = 1e-6 * want.abs().max(1.0);
    assert!((got - want).abs() <= tolerance, "{what}: got {got}, want {want} (diff {})", (got - want).abs());
}

/// Runs a kernel's check. The test of a kernel this CPU lacks is ignored when the tests are built
/// (`per_kernel!`), so arriving here without the kernel means they were built on another CPU: a
/// failure, never a silent fallback to another kernel.
pub fn on_kernel(kernel: facecompute_core::compare::Kernel, check: fn(facecompute_core::compare::Kernel)) {
    assert!(
        kernel.is_supported(),
        "{kernel:?} is not on this CPU, so its tests cannot run here: they are ignored when built on such a CPU (run with --include-ignored?), or were built on another one (touch crates/facecompute-core/build.rs to rebuild them here)"
    );
    check(kernel);
}

/// One `#[test]` per kernel for each named check (a `fn(Kernel)` of the test file), named
/// `check::avx512`, `check::avx2`, `check::neon`, `check::scalar` as the architecture has them. A kernel
/// this CPU lacks is reported by cargo as ignored, with the reason: "skipped: this CPU has no AVX-512"
/// (build.rs tells). Each check then compares that kernel's answers, never another's.
macro_rules! per_kernel {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            use facecompute_core::compare::Kernel;
            #[cfg(target_arch = "x86_64")]
            #[test]
            #[cfg_attr(facecompute_no_avx512, ignore = "skipped: this CPU has no AVX-512")]
            fn avx512() {
                crate::compare_support::on_kernel(Kernel::Avx512, super::$check);
            }
            #[cfg(target_arch = "x86_64")]
            #[test]
            #[cfg_attr(facecompute_no_avx2, ignore = "skipped: this CPU has no AVX2 and FMA")]
            fn avx2() {
                crate::compare_support::on_kernel(Kernel::Avx2, super::$check);
            }
            #[cfg(target_arch = "aarch64")]
            #[test]
            fn neon() {
                crate::compare_support::on_kernel(Kernel::Neon, super::$check);
            }
            #[test]
            fn scalar() {
                crate::compare_support::on_kernel(Kernel::Scalar, super::$check);
            }
        }
    )*};
}
pub(crate) use per_kernel;
