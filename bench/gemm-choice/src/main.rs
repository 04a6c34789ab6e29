//! C (1,000 × 8,192) = S · Tᵀ with 128-d rows, f32, one thread: GFLOP/s of each library against the
//! core's peak f32 FMA rate measured in the same run (facecompute_core::compare::peak_f32_gflops).
use std::time::Instant;

fn best<F: FnMut()>(mut f: F) -> f64 {
    f();
    (0..20).map(|_| { let t = Instant::now(); f(); t.elapsed().as_secs_f64() }).fold(f64::MAX, f64::min)
}

fn main() {
    let (m, n, k) = (1000usize, 8192usize, 128usize);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    let b: Vec<f32> = (0..n * k).map(|i| ((i * 104729) % 1000) as f32 / 1000.0 - 0.5).collect();
    let mut c = vec![0f32; m * n];
    let flops = (2 * m * n * k) as f64;
    let peak = facecompute_core::compare::peak_f32_gflops(0.5);
    // SAFETY (both): A is m×k row-major, B = Tᵀ read through strides from the n×k row-major T, C m×n.
    let mm = best(|| unsafe { matrixmultiply::sgemm(m, k, n, 1.0, a.as_ptr(), k as isize, 1, b.as_ptr(), 1, k as isize, 0.0, c.as_mut_ptr(), n as isize, 1) });
    let ge = best(|| unsafe {
        gemm::gemm(m, n, k, c.as_mut_ptr(), 1, n as isize, false, a.as_ptr(), 1, k as isize, b.as_ptr(), k as isize, 1, 0.0f32, 1.0f32, false, false, false, gemm::Parallelism::None)
    });
    println!("peak f32 FMA, one core: {peak:.1} GFLOP/s");
    for (name, s) in [("matrixmultiply 0.3", mm), ("gemm 0.18", ge)] {
        let g = flops / s / 1e9;
        println!("{name:>20}: {g:6.1} GFLOP/s = {:.0}% of peak", 100.0 * g / peak);
    }
    std::hint::black_box(&c);
}
