//! The comparison kernels, one per instruction set (`crate::simd::Kernel` picks which). Every kernel
//! accumulates in f64 and must give the same results as `scalar` to rounding; the tests run each
//! supported kernel against a float64 reference.

mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86_avx2;
#[cfg(target_arch = "x86_64")]
mod x86_avx512;
#[cfg(target_arch = "aarch64")]
mod neon;

use super::metric::{Metric, QueryStats};

pub use crate::simd::Kernel;

impl Kernel {
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

    /// `distances` over rows given as little-endian bytes at any alignment (a socket chunk read in
    /// place), with the same results. Returns false, having done nothing, where this kernel has no
    /// unaligned path (scalar, NEON, a big-endian host): the caller copies the rows to aligned floats.
    pub(crate) fn distances_unaligned(self, query: &[f64], stats: &QueryStats, metric: Metric, bytes: &[u8], dims: usize, out: &mut [f64]) -> bool {
        assert_eq!(bytes.len(), out.len() * dims * 4);
        let targets = bytes.as_ptr() as *const f32;
        match self {
            // SAFETY: the feature was detected at run time; `bytes` holds out.len() × dims floats,
            // read with unaligned loads only; x86-64 is little-endian.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 if self.is_supported() => unsafe { x86_avx512::distances_raw(query, stats, metric, targets, dims, out) },
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.is_supported() => unsafe { x86_avx2::distances_raw(query, stats, metric, targets, dims, out) },
            _ => return false,
        }
        true
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
