//! Runtime choice of the widest SIMD kernel the CPU has. Every kernel accumulates in f64 and must give
//! the same results as `scalar` to rounding; the tests run each supported kernel against a float64
//! reference.

mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;
#[cfg(target_arch = "aarch64")]
mod neon;

use super::metric::{Metric, QueryStats};
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    Scalar,
    Avx2,
    Avx512,
    Neon,
}

impl Kernel {
    pub fn as_str(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
            Kernel::Neon => "neon",
        }
    }

    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every kernel this CPU can run, widest first.
    pub fn supported() -> Vec<Kernel> {
        [Kernel::Avx512, Kernel::Avx2, Kernel::Neon, Kernel::Scalar].into_iter().filter(|k| k.is_supported()).collect()
    }

    /// The kernel used by default: the widest supported one, unless `FACECOMPUTE_SIMD` names a
    /// narrower supported kernel (for benchmarks and for reproducing a customer's CPU). An unknown or
    /// unsupported name is ignored rather than trusted.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            let widest = Kernel::supported()[0];
            match std::env::var("FACECOMPUTE_SIMD") {
                Ok(name) => Kernel::supported().into_iter().find(|k| k.as_str() == name).unwrap_or(widest),
                Err(_) => widest,
            }
        })
    }

    /// A kernel that cannot run here silently becomes scalar, so this is safe to call with any value.
    pub(crate) fn distances(self, query: &[f64], stats: &QueryStats, metric: Metric, targets: &[f32], dims: usize, out: &mut [f64]) {
        debug_assert_eq!(query.len(), dims);
        debug_assert_eq!(targets.len(), out.len() * dims);
        match self {
            // SAFETY: the feature was detected at run time; lengths are checked by the caller.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 if self.is_supported() => unsafe { x86_avx512::distances(query, stats, metric, targets, dims, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.is_supported() => unsafe { x86_avx2::distances(query, stats, metric, targets, dims, out) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon if self.is_supported() => unsafe { neon::distances(query, stats, metric, targets, dims, out) },
            _ => scalar::distances(query, stats, metric, targets, dims, out),
        }
    }

    pub(crate) fn read_sum(self, data: &[f32]) -> f64 {
        match self {
            // SAFETY: the feature was detected at run time.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 if self.is_supported() => unsafe { x86_avx512::read_sum(data) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.is_supported() => unsafe { x86_avx2::read_sum(data) },
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon if self.is_supported() => unsafe { neon::read_sum(data) },
            _ => scalar::read_sum(data),
        }
    }
}
