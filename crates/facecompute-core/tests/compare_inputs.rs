//! Validation, base64 decoding, top-k and normalisation: every bad input is a coded error.

mod compare_support;

use compare_support::{per_kernel, Rng};
use facecompute_core::compare::{
    compare_one_to_many, compare_one_to_many_b64, compare_with, decode_vectors_b64, l2_normalize, top_k, validate_query,
    validate_vectors, Kernel, Metric, Options,
};
use facecompute_core::ErrorCode;

fn encode(values: &[f32]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64_simd::STANDARD.encode_to_string(bytes)
}

#[test]
fn validation_names_the_offending_vector_and_position() {
    let mut data = vec![0.5f32; 4 * 3];
    assert_eq!(validate_vectors(&data, 3).unwrap(), 4);
    data[2 * 3 + 1] = f32::NAN;
    let err = validate_vectors(&data, 3).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEmbedding);
    assert!(err.detail.contains("vector 2") && err.detail.contains("position 1"), "{}", err.detail);
    data[2 * 3 + 1] = 0.0;
    data[3 * 3] = f32::NEG_INFINITY;
    assert!(validate_vectors(&data, 3).unwrap_err().detail.contains("vector 3"));
    assert_eq!(validate_vectors(&data[..11], 3).unwrap_err().code, ErrorCode::EmbeddingDimensionMismatch);
    assert_eq!(validate_vectors(&data, 0).unwrap_err().code, ErrorCode::InvalidRequest);
    assert_eq!(validate_vectors(&[], 3).unwrap(), 0);
}

#[test]
fn validation_finds_a_non_finite_value_deep_in_a_large_matrix() {
    let dims = 512;
    let mut data = vec![0.25f32; 10_000 * dims];
    data[9_876 * dims + 511] = f32::INFINITY;
    let err = validate_vectors(&data, dims).unwrap_err();
    assert!(err.detail.contains("vector 9876") && err.detail.contains("position 511"), "{}", err.detail);
}

#[test]
fn the_query_is_checked_for_length_and_finiteness() {
    assert_eq!(validate_query(&[1.0, 2.0], 3).unwrap_err().code, ErrorCode::EmbeddingDimensionMismatch);
    let err = validate_query(&[1.0, f32::NAN, 2.0], 3).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEmbedding);
    assert!(err.detail.contains("query") && err.detail.contains("position 1"));
    let err = compare_one_to_many(&[1.0, f32::INFINITY], &[1.0, 1.0], 2, Metric::Cosine, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEmbedding);
}

fn rejects_a_non_finite_target_with_its_index_for_every_metric_and_split(kernel: Kernel) {
    let dims = 130;
    let n = 20_000;
    let mut rng = Rng::new(9);
    let query = rng.vector(dims);
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut targets: Vec<f32> = rng.vector(n * dims);
        targets[17_345 * dims + 129] = bad;
        for metric in Metric::ALL {
            for max_threads in [1, 3] {
                let err = compare_with(Options { kernel: Some(kernel), max_threads }, &query, &targets, dims, metric, None).unwrap_err();
                assert_eq!(err.code, ErrorCode::InvalidEmbedding);
                assert!(err.detail.contains("vector 17345") && err.detail.contains("position 129"), "{kernel:?} {metric:?}: {}", err.detail);
            }
        }
    }
}

per_kernel!(rejects_a_non_finite_target_with_its_index_for_every_metric_and_split);

#[test]
fn compare_rejects_ragged_targets_and_bad_k() {
    let err = compare_one_to_many(&[1.0, 2.0], &[1.0, 2.0, 3.0], 2, Metric::Euclidean, None).unwrap_err();
    assert_eq!(err.code, ErrorCode::EmbeddingDimensionMismatch);
    let err = compare_one_to_many(&[1.0, 2.0], &[1.0, 2.0], 2, Metric::Euclidean, Some(0)).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidRequest);
    let empty = compare_one_to_many(&[1.0, 2.0], &[], 2, Metric::Cosine, Some(3)).unwrap();
    assert_eq!((empty.count, empty.indices.len()), (0, 0));
}

#[test]
fn metric_names_parse_and_unknown_ones_are_refused() {
    for m in Metric::ALL {
        assert_eq!(Metric::parse(m.as_str()).unwrap(), m);
    }
    assert_eq!(Metric::parse("manhattan").unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn top_k_is_nearest_first_with_ties_in_index_order() {
    let d = [0.5, 0.1, 0.5, 0.3, 0.1, 0.9];
    assert_eq!(top_k(&d, 3), (vec![1, 4, 3], vec![0.1, 0.1, 0.3]));
    assert_eq!(top_k(&d, 4).0, vec![1, 4, 3, 0]);
    assert_eq!(top_k(&d, 99).0, vec![1, 4, 3, 0, 2, 5]);
    assert_eq!(top_k(&d, 1), (vec![1], vec![0.1]));
    let equal = [0.2; 1000];
    assert_eq!(top_k(&equal, 5).0, vec![0, 1, 2, 3, 4]);
}

#[test]
fn top_k_matches_a_full_sort_on_random_distances() {
    let mut rng = Rng::new(21);
    let d: Vec<f64> = (0..5000).map(|_| (rng.below(100) as f64) / 10.0).collect();
    let mut all: Vec<(f64, u32)> = d.iter().enumerate().map(|(i, &x)| (x, i as u32)).collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for k in [1, 7, 100, 4999, 5000] {
        let (idx, dist) = top_k(&d, k);
        assert_eq!(idx, all[..k].iter().map(|p| p.1).collect::<Vec<_>>());
        assert_eq!(dist, all[..k].iter().map(|p| p.0).collect::<Vec<_>>());
    }
}

#[test]
fn compare_with_top_k_keeps_the_nearest_and_the_count() {
    let q = [1.0f32, 0.0];
    let targets = [0.0f32, 1.0, 1.0, 0.1, -1.0, 0.0, 1.0, 0.0];
    let all = compare_one_to_many(&q, &targets, 2, Metric::Cosine, None).unwrap();
    let best = compare_one_to_many(&q, &targets, 2, Metric::Cosine, Some(2)).unwrap();
    assert_eq!(best.indices, vec![3, 1]);
    assert_eq!(best.distances, vec![all.distances[3], all.distances[1]]);
    assert_eq!(best.count, 4);
}

#[test]
fn base64_round_trips_padded_and_unpadded() {
    let mut rng = Rng::new(1);
    for dims in [1, 2, 3, 5, 128, 512] {
        for n in [0, 1, 2, 7] {
            let values: Vec<f32> = rng.vector(n * dims);
            let padded = encode(&values);
            assert_eq!(decode_vectors_b64(padded.as_bytes(), dims).unwrap(), values);
            let unpadded = padded.trim_end_matches('=');
            assert_eq!(decode_vectors_b64(unpadded.as_bytes(), dims).unwrap(), values);
        }
    }
}

#[test]
fn base64_decodes_little_endian() {
    // 1.0f32 is 0x3f800000, little-endian bytes 00 00 80 3f.
    assert_eq!(decode_vectors_b64(b"AACAPw==", 1).unwrap(), vec![1.0]);
}

#[test]
fn base64_with_a_bad_character_names_the_vector() {
    let values = vec![0.5f32; 10 * 4];
    let mut text = encode(&values).into_bytes();
    // Vector 6 starts at byte 96, i.e. character 128.
    text[130] = b'*';
    let err = decode_vectors_b64(&text, 4).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEmbedding);
    assert!(err.detail.contains("vector 6") && err.detail.contains("'*'") && err.detail.contains("offset 130"), "{}", err.detail);
    for bad in [b' ', b'\n', b'-', b'_', 0xc3] {
        let mut t = encode(&values).into_bytes();
        t[4] = bad;
        assert_eq!(decode_vectors_b64(&t, 4).unwrap_err().code, ErrorCode::InvalidEmbedding);
    }
    assert_eq!(decode_vectors_b64(b"AAAAA", 1).unwrap_err().code, ErrorCode::InvalidEmbedding);
    assert_eq!(decode_vectors_b64(b"AA=A", 1).unwrap_err().code, ErrorCode::InvalidEmbedding);
}

#[test]
fn base64_of_the_wrong_length_is_a_dimension_mismatch() {
    let text = encode(&[1.0f32; 10]);
    assert_eq!(decode_vectors_b64(text.as_bytes(), 3).unwrap_err().code, ErrorCode::EmbeddingDimensionMismatch);
    assert_eq!(decode_vectors_b64(b"AAAA", 1).unwrap_err().code, ErrorCode::EmbeddingDimensionMismatch);
    assert_eq!(decode_vectors_b64(text.as_bytes(), 0).unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn base64_with_nan_or_infinity_names_the_vector() {
    let mut values = vec![0.5f32; 5 * 3];
    values[4 * 3 + 2] = f32::NAN;
    let err = decode_vectors_b64(encode(&values).as_bytes(), 3).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidEmbedding);
    assert!(err.detail.contains("vector 4") && err.detail.contains("position 2"), "{}", err.detail);
}

#[test]
fn the_base64_path_equals_the_float_path() {
    let mut rng = Rng::new(4);
    let dims = 77;
    let query = rng.vector(dims);
    let targets: Vec<f32> = rng.vector(300 * dims);
    for metric in Metric::ALL {
        let direct = compare_one_to_many(&query, &targets, dims, metric, Some(10)).unwrap();
        let b64 = compare_one_to_many_b64(Options::default(), &query, encode(&targets).as_bytes(), dims, metric, Some(10)).unwrap();
        assert_eq!(direct, b64);
    }
}

#[test]
fn l2_normalize_gives_unit_norm_and_leaves_zero_alone() {
    let v = l2_normalize(&[3.0, 4.0]).unwrap();
    assert!((v[0] - 0.6).abs() < 1e-7 && (v[1] - 0.8).abs() < 1e-7);
    let mut rng = Rng::new(8);
    let big: Vec<f32> = rng.vector(512).iter().map(|x| x * 1e20).collect();
    let n: f64 = l2_normalize(&big).unwrap().iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    assert!((n - 1.0).abs() < 1e-6);
    assert_eq!(l2_normalize(&[0.0, 0.0]).unwrap(), vec![0.0, 0.0]);
    assert_eq!(l2_normalize(&[1.0, f32::NAN]).unwrap_err().code, ErrorCode::InvalidEmbedding);
}

#[test]
fn the_streaming_base64_path_equals_the_float_path_across_blocks_and_threads() {
    let mut rng = Rng::new(12);
    // dims 3: rows fall on character boundaries; 128 and 130: only every third row does.
    for (dims, n) in [(3usize, 10_001usize), (128, 1_000), (128, 1_001), (130, 20_000), (1, 5), (512, 2)] {
        let query = rng.vector(dims);
        let targets: Vec<f32> = rng.vector(n * dims);
        let text = encode(&targets);
        for metric in Metric::ALL {
            for max_threads in [1, 3] {
                let options = Options { kernel: None, max_threads };
                let direct = compare_with(options, &query, &targets, dims, metric, None).unwrap();
                let streamed = compare_one_to_many_b64(options, &query, text.as_bytes(), dims, metric, None).unwrap();
                assert_eq!(direct, streamed, "dims={dims} n={n} {metric:?} threads={max_threads}");
                let unpadded = compare_one_to_many_b64(options, &query, text.trim_end_matches('=').as_bytes(), dims, metric, Some(3)).unwrap();
                assert_eq!(unpadded.indices, compare_with(options, &query, &targets, dims, metric, Some(3)).unwrap().indices);
            }
        }
    }
}

#[test]
fn the_streaming_base64_path_reports_the_decoders_error_from_any_block() {
    let mut rng = Rng::new(13);
    let dims = 130;
    let n = 20_000;
    let query = rng.vector(dims);
    let mut targets: Vec<f32> = rng.vector(n * dims);
    targets[15_432 * dims + 7] = f32::NAN;
    let text = encode(&targets);
    for max_threads in [1, 3] {
        let options = Options { kernel: None, max_threads };
        let err = compare_one_to_many_b64(options, &query, text.as_bytes(), dims, Metric::Cosine, None).unwrap_err();
        assert_eq!(err, decode_vectors_b64(text.as_bytes(), dims).unwrap_err());
        assert!(err.detail.contains("vector 15432") && err.detail.contains("position 7"), "{}", err.detail);
    }
    targets[15_432 * dims + 7] = 0.5;
    let mut bad = encode(&targets).into_bytes();
    let at = 19_000 * dims * 4 * 4 / 3 + 5; // a character inside vector 19000
    bad[at] = b'#';
    for max_threads in [1, 3] {
        let options = Options { kernel: None, max_threads };
        let err = compare_one_to_many_b64(options, &query, &bad, dims, Metric::Euclidean, None).unwrap_err();
        assert_eq!(err, decode_vectors_b64(&bad, dims).unwrap_err());
        assert_eq!(err.code, ErrorCode::InvalidEmbedding);
        assert!(err.detail.contains("vector 19000") && err.detail.contains("'#'"), "{}", err.detail);
    }
}
