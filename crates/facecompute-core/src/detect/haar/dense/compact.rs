//! An experiment, off unless `HAAR_COMPACT=1`: the compacted scan. The dense scan keeps a vector
//! of neighbouring origins evaluating while any lane is alive; the compacted one runs the first
//! `dense_stages()` stages densely, then copies each surviving window's points into one lane of a
//! point-major buffer and runs the later stages on eight survivors per vector (full lanes, one
//! contiguous load per corner). Bit-exact (the same arithmetic per window), but not faster on the
//! AMD EPYC measured: see docs/benchmarks.md, "Haar scan kernels".

/// Stages evaluated densely before compaction.
pub(super) fn dense_stages() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::env::var("HAAR_DENSE").ok().and_then(|v| v.parse().ok()).unwrap_or(1))
}

/// The windows of one row alive after the dense stages, by origin index in order, and every
/// evaluated origin's normalisation factor, by origin index.
#[derive(Default)]
pub(in crate::detect::haar) struct Survivors {
    idx: Vec<u32>,
    vnf: Vec<f32>,
    /// Eight windows' points, point-major (see `compact_avx2::copied_stages`).
    copy: Vec<i32>,
}

impl Survivors {
    /// Records the eight origins from `j0`: their factors, and those of `live` as survivors.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn push(&mut self, j0: usize, mut live: u32, vnf: std::arch::x86_64::__m256) {
        if self.vnf.len() < j0 + super::LANES {
            self.vnf.resize(j0 + super::LANES, 0.0);
        }
        // SAFETY: `vnf` holds eight values from `j0` (just resized); AVX is enabled wherever an
        // `__m256` exists.
        unsafe { std::arch::x86_64::_mm256_storeu_ps(self.vnf.as_mut_ptr().add(j0), vnf) };
        while live != 0 {
            self.idx.push((j0 + live.trailing_zeros() as usize) as u32);
            live &= live - 1;
        }
    }

    /// The survivors of a row of `n` origins; the factors of origins `0..n` (those of origins that
    /// did not survive are stale); room for `copy` values of eight windows' points.
    pub fn parts(&mut self, n: usize, copy: usize) -> (&[u32], &[f32], &mut [i32]) {
        if self.vnf.len() < n.max(super::LANES) {
            self.vnf.resize(n.max(super::LANES), 0.0);
        }
        if self.copy.len() < copy {
            self.copy.resize(copy, 0);
        }
        (&self.idx, &self.vnf, &mut self.copy)
    }

    pub fn clear(&mut self) {
        self.idx.clear();
    }
}
