//! Tells the tests which SIMD kernels the CPU they are built on has, so that a kernel's tests on a CPU
//! without it are reported by `cargo test` as ignored with their reason ("skipped: this CPU has no
//! AVX-512"), not passed having compared nothing (tests/compare_support `per_kernel!`). libtest has
//! no run-time skip, hence the build-time cfg. The tests check that it still matches the CPU they run
//! on (compare_distances.rs `the_kernel_tests_were_built_for_this_cpu`). The library itself never
//! reads these cfgs: it picks its kernel at run time.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(facecompute_no_avx512)");
    println!("cargo::rustc-check-cfg=cfg(facecompute_no_avx2)");
    // Only when the tests will run on the machine that builds them (no cross-compilation).
    #[cfg(target_arch = "x86_64")]
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64") {
        if !std::arch::is_x86_feature_detected!("avx512f") {
            println!("cargo::rustc-cfg=facecompute_no_avx512");
        }
        if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
            println!("cargo::rustc-cfg=facecompute_no_avx2");
        }
    }
}
