//! Every kernel, every metric, against the float64 reference: one test per kernel (`per_kernel!`),
//! reported as ignored, with the reason, for a kernel this CPU lacks.

mod compare_support;

use compare_support::{assert_close, per_kernel, reference, Rng};
use facecompute_core::compare::{compare_one_to_many, compare_with, Kernel, Metric, Options};

fn dims_under_test() -> Vec<usize> {
    let mut dims: Vec<usize> = (1..=40).collect();
    dims.extend([63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024]);
    dims
}

fn check_all(kernel: Kernel, query: &[f32], targets: &[f32], dims: usize, label: &str) {
    for metric in Metric::ALL {
        let options = Options { kernel: Some(kernel), max_threads: 1 };
        let got = compare_with(options, query, targets, dims, metric, None).unwrap();
        assert_eq!(got.count, targets.len() / dims);
        assert_eq!(got.indices, (0..got.count as u32).collect::<Vec<_>>());
        for (i, row) in targets.chunks_exact(dims).enumerate() {
            let want = reference(metric, query, row);
            assert_close(got.distances[i], want, &format!("{label} {kernel:?} {metric:?} dims={dims} row={i}"));
        }
    }
}

fn random_vectors_match_the_float64_reference(kernel: Kernel) {
    let mut rng = Rng::new(7);
    for dims in dims_under_test() {
        let n = 1 + rng.below(9);
        let query = rng.vector(dims);
        let targets: Vec<f32> = (0..n).flat_map(|_| rng.vector(dims)).collect();
        check_all(kernel, &query, &targets, dims, "random");
    }
}

/// Rows chosen to break naive implementations: cancellation, extreme magnitudes, zero vectors,
/// exact (anti)parallels where arccos sits on its domain edge.
fn adversarial_rows(rng: &mut Rng, query: &[f32]) -> Vec<Vec<f32>> {
    let dims = query.len();
    let mut rows = vec![
        query.to_vec(),
        query.iter().map(|x| -x).collect(),
        query.iter().map(|x| x * 3.0).collect(),
        vec![0.0; dims],
        query.iter().map(|x| x * 1e30).collect(),
        query.iter().map(|x| x * 1e-30).collect(),
        query.iter().map(|x| x + 1e-6).collect(),
        (0..dims).map(|i| if i % 2 == 0 { 1e20 } else { -1e-20 }).collect(),
        (0..dims).map(|i| if i == dims / 2 { f32::MAX } else { f32::MIN_POSITIVE }).collect(),
        (0..dims).map(|_| rng.unit() * 1e-38).collect(),
    ];
    let mut nudged = query.to_vec();
    nudged[dims - 1] = f32::from_bits(nudged[dims - 1].to_bits() ^ 1);
    rows.push(nudged);
    rows
}

fn adversarial_vectors_match_the_float64_reference(kernel: Kernel) {
    let mut rng = Rng::new(11);
    for dims in dims_under_test() {
        let query = rng.vector(dims);
        let targets: Vec<f32> = adversarial_rows(&mut rng, &query).concat();
        check_all(kernel, &query, &targets, dims, "adversarial");
        let zero_query = vec![0.0f32; dims];
        check_all(kernel, &zero_query, &targets, dims, "zero query");
        let huge_query: Vec<f32> = query.iter().map(|x| x * 1e30).collect();
        check_all(kernel, &huge_query, &targets, dims, "huge query");
    }
}

#[test]
fn edge_values_are_exact_where_the_maths_says_so() {
    let q = [1.0f32, 2.0, 3.0];
    let targets = [1.0f32, 2.0, 3.0, -1.0, -2.0, -3.0, 0.0, 0.0, 0.0];
    let angular = compare_one_to_many(&q, &targets, 3, Metric::Angular, None).unwrap();
    assert!(angular.distances[0].abs() < 1e-7, "parallel: {}", angular.distances[0]);
    assert!((angular.distances[1] - 1.0).abs() < 1e-7, "antiparallel: {}", angular.distances[1]);
    assert_eq!(angular.distances[2], 0.5, "zero vector has similarity 0");
    assert!(angular.distances.iter().all(|d| d.is_finite()));
    let cosine = compare_one_to_many(&q, &targets, 3, Metric::Cosine, None).unwrap();
    assert_eq!(cosine.distances[2], 1.0);
    assert!((cosine.distances[1] - 2.0).abs() < 1e-12);
}

#[test]
fn threads_change_nothing_but_speed() {
    let mut rng = Rng::new(3);
    let dims = 128;
    let n = 40_000; // above the threshold for several threads
    let query = rng.vector(dims);
    let targets: Vec<f32> = rng.vector(n * dims);
    for metric in Metric::ALL {
        let one = compare_with(Options { kernel: None, max_threads: 1 }, &query, &targets, dims, metric, None).unwrap();
        let many = compare_with(Options { kernel: None, max_threads: 4 }, &query, &targets, dims, metric, None).unwrap();
        assert_eq!(one, many);
        for i in [0, n / 2, n - 1] {
            assert_close(many.distances[i], reference(metric, &query, &targets[i * dims..(i + 1) * dims]), "threaded");
        }
    }
}

fn agrees_with_the_scalar_kernel_to_rounding(kernel: Kernel) {
    let mut rng = Rng::new(5);
    let dims = 515;
    let query = rng.vector(dims);
    let targets: Vec<f32> = rng.vector(50 * dims);
    for metric in Metric::ALL {
        let scalar = compare_with(Options { kernel: Some(Kernel::Scalar), max_threads: 1 }, &query, &targets, dims, metric, None).unwrap();
        let got = compare_with(Options { kernel: Some(kernel), max_threads: 1 }, &query, &targets, dims, metric, None).unwrap();
        for (a, b) in got.distances.iter().zip(&scalar.distances) {
            assert!((a - b).abs() < 1e-12, "{kernel:?} {metric:?}: {a} vs {b}");
        }
    }
}

per_kernel!(random_vectors_match_the_float64_reference, adversarial_vectors_match_the_float64_reference, agrees_with_the_scalar_kernel_to_rounding);

/// The build-time record of this CPU's kernels (build.rs), which decides which kernel tests are
/// ignored, must be this CPU's: tests built on one machine and run on another would otherwise skip a
/// kernel the CPU has, or fail on one it lacks.
#[test]
fn the_kernel_tests_were_built_for_this_cpu() {
    #[cfg(target_arch = "x86_64")]
    {
        let rebuild = "rebuild the tests on this machine (touch crates/facecompute-core/build.rs)";
        assert_eq!(cfg!(facecompute_no_avx512), !Kernel::Avx512.is_supported(), "AVX-512 at build time vs now: {rebuild}");
        assert_eq!(cfg!(facecompute_no_avx2), !Kernel::Avx2.is_supported(), "AVX2 and FMA at build time vs now: {rebuild}");
    }
}

#[test]
fn the_widest_kernel_is_chosen_by_default() {
    let supported = Kernel::supported();
    assert_eq!(*supported.last().unwrap(), Kernel::Scalar);
    if std::env::var("FACECOMPUTE_SIMD").is_err() {
        assert_eq!(Kernel::best(), supported[0]);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        assert!(supported.contains(&Kernel::Avx2));
    }
}

#[test]
fn read_bandwidth_sum_reads_every_float() {
    let data: Vec<f32> = (0..100_003).map(|i| (i % 7) as f32).collect();
    let want: f64 = data.iter().map(|&x| x as f64).sum();
    assert_eq!(facecompute_core::compare::read_bandwidth_sum(&data, 128), want);
}
