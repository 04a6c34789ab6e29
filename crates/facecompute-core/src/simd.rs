//! Which SIMD instruction set the hot loops use (vector comparison, the Haar scan), chosen once at
//! run time: the widest the CPU has, unless `FACECOMPUTE_SIMD` asks for a narrower one.

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
            Kernel::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
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
        [Kernel::Avx512, Kernel::Avx2, Kernel::Neon, Kernel::Scalar]
            .into_iter()
            .filter(|k| k.is_supported())
            .collect()
    }

    /// The kernel used by default: the widest supported one, unless `FACECOMPUTE_SIMD` names a
    /// narrower supported kernel (for benchmarks and for reproducing a customer's CPU). An unknown or
    /// unsupported name is ignored rather than trusted.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            let widest = Kernel::supported()[0];
            match std::env::var("FACECOMPUTE_SIMD") {
                Ok(name) => Kernel::supported()
                    .into_iter()
                    .find(|k| k.as_str() == name)
                    .unwrap_or(widest),
                Err(_) => widest,
            }
        })
    }
}
