//! Many-to-many (the GEMM screen plus f64 refinement) must answer exactly what one one-to-many call
//! per source answers: same indices, same distances bit for bit, for every metric and kernel.

mod compare_support;

use compare_support::{assert_close, per_kernel, reference, Rng};
use facecompute_core::compare::{compare_many_to_many, compare_with, Kernel, Metric, Options, MIN_GEMM_SOURCES};
use facecompute_core::ErrorCode;

fn one_by_one(options: Options, sources: &[f32], targets: &[f32], dims: usize, metric: Metric, k: Option<usize>) -> Vec<facecompute_core::compare::Comparison> {
    sources.chunks_exact(dims).map(|s| compare_with(options, s, targets, dims, metric, k).unwrap()).collect()
}

fn check(options: Options, sources: &[f32], targets: &[f32], dims: usize, k: Option<usize>, label: &str) {
    for metric in Metric::ALL {
        let got = compare_many_to_many(options, sources, targets, dims, metric, k).unwrap();
        let want = one_by_one(options, sources, targets, dims, metric, k);
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{label} {metric:?} dims={dims} k={k:?} source {i}");
        }
    }
}

fn random_vectors_give_exactly_the_one_to_many_answer(kernel: Kernel) {
    let mut rng = Rng::new(17);
    for &dims in &[1usize, 3, 16, 127, 128, 129, 512] {
        let sources: Vec<f32> = rng.vector(9 * dims);
        let n = 700 + rng.below(900);
        let targets: Vec<f32> = rng.vector(n * dims);
        for k in [1, 5, 64] {
            check(Options { kernel: Some(kernel), max_threads: 1 }, &sources, &targets, dims, Some(k), "random");
        }
    }
}

per_kernel!(random_vectors_give_exactly_the_one_to_many_answer);

#[test]
fn threads_and_many_blocks_change_nothing() {
    let mut rng = Rng::new(23);
    let dims = 128;
    // More sources than one source block and targets over several target blocks and threads.
    let sources: Vec<f32> = rng.vector(300 * dims);
    let targets: Vec<f32> = rng.vector(5000 * dims);
    for threads in [1, 3] {
        check(Options { kernel: None, max_threads: threads }, &sources, &targets, dims, Some(10), "threads");
    }
}

/// Embeddings of one person cluster: near-duplicates whose f32 dot products are within the f32
/// error of each other, where a screen without exact refinement would reorder them.
#[test]
fn near_duplicates_and_exact_duplicates_keep_the_exact_order() {
    let mut rng = Rng::new(29);
    let dims = 128;
    let base: Vec<f32> = rng.vector(dims);
    let mut targets = Vec::new();
    for j in 0..3000 {
        let jitter = if j % 3 == 0 { 0.0 } else { 1e-7 * (j % 17) as f32 };
        targets.extend(base.iter().enumerate().map(|(d, &x)| if d == j % dims { x + jitter } else { x }));
    }
    let sources: Vec<f32> = (0..6).flat_map(|s| base.iter().map(move |&x| x * (1.0 + s as f32 * 1e-7)).collect::<Vec<_>>()).collect();
    // 1000 exact duplicates per source: more than the candidate limit, so this also takes the
    // fallback for sources whose candidates cannot be told apart.
    for k in [1, 7, 200] {
        check(Options { kernel: None, max_threads: 2 }, &sources, &targets, dims, Some(k), "near-duplicates");
    }
}

/// Vectors outside the range the f32 bound covers: huge components (f32 products overflow), tiny
/// norms (products underflow), zero vectors. They must take the exact path and still agree.
#[test]
fn vectors_outside_the_f32_range_are_exact() {
    let mut rng = Rng::new(31);
    let dims = 64;
    let mut targets: Vec<f32> = rng.vector(2000 * dims);
    let specials: Vec<Vec<f32>> = vec![
        vec![0.0; dims],
        (0..dims).map(|_| rng.unit() * 1e30).collect(),
        (0..dims).map(|_| rng.unit() * 1e-30).collect(),
        (0..dims).map(|i| if i % 2 == 0 { 1e20 } else { -1e-20 }).collect(),
        (0..dims).map(|i| if i == 3 { f32::MAX } else { f32::MIN_POSITIVE }).collect(),
    ];
    for (s, v) in specials.iter().enumerate() {
        let row = 100 * s + 7;
        targets[row * dims..(row + 1) * dims].copy_from_slice(v);
    }
    let mut sources: Vec<f32> = rng.vector(5 * dims);
    sources.extend(specials.concat());
    sources.extend(targets[707 * dims..708 * dims].to_vec());
    check(Options { kernel: None, max_threads: 1 }, &sources, &targets, dims, Some(6), "special");
    // And against the float64 reference directly.
    let got = compare_many_to_many(Options::default(), &sources, &targets, dims, Metric::Cosine, Some(3)).unwrap();
    for (i, c) in got.iter().enumerate() {
        for (&j, &d) in c.indices.iter().zip(&c.distances) {
            let j = j as usize;
            assert_close(d, reference(Metric::Cosine, &sources[i * dims..(i + 1) * dims], &targets[j * dims..(j + 1) * dims]), "reference");
        }
    }
}

#[test]
fn without_top_k_every_distance_comes_back_in_order() {
    let mut rng = Rng::new(37);
    let dims = 32;
    let sources: Vec<f32> = rng.vector(MIN_GEMM_SOURCES * 2 * dims);
    let targets: Vec<f32> = rng.vector(100 * dims);
    check(Options::default(), &sources, &targets, dims, None, "all");
    // k at least N also returns every target, sorted.
    check(Options::default(), &sources, &targets, dims, Some(100), "k = n");
    check(Options::default(), &sources, &targets, dims, Some(1000), "k > n");
    // Fewer sources than the GEMM needs.
    check(Options::default(), &sources[..dims * 2], &targets, dims, Some(3), "two sources");
}

#[test]
fn bad_input_is_refused_with_the_offending_vector() {
    let dims = 4;
    let good = vec![0.5f32; 8 * dims];
    let mut bad_target = vec![0.25f32; 20 * dims];
    bad_target[13 * dims + 2] = f32::NAN;
    let e = compare_many_to_many(Options::default(), &good, &bad_target, dims, Metric::Cosine, Some(2)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidEmbedding);
    assert!(e.detail.contains("vector 13") && e.detail.contains("position 2"), "{}", e.detail);
    let mut bad_source = good.clone();
    bad_source[5 * dims + 1] = f32::INFINITY;
    let e = compare_many_to_many(Options::default(), &bad_source, &bad_target[..dims * 10], dims, Metric::Cosine, Some(2)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidEmbedding);
    assert!(e.detail.contains("source 5") && e.detail.contains("position 1"), "{}", e.detail);
    let e = compare_many_to_many(Options::default(), &good[..dims * 8 - 1], &good, dims, Metric::Cosine, Some(2)).unwrap_err();
    assert_eq!(e.code, ErrorCode::EmbeddingDimensionMismatch);
    let e = compare_many_to_many(Options::default(), &good, &good[..dims * 3 + 1], dims, Metric::Cosine, Some(2)).unwrap_err();
    assert_eq!(e.code, ErrorCode::EmbeddingDimensionMismatch);
    let e = compare_many_to_many(Options::default(), &good, &good, dims, Metric::Cosine, Some(0)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
}
