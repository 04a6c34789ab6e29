//! The streaming comparison (compare::RowStream fed through delimit::PartEnd, as the gateway does for
//! binary /compare targets) must answer exactly what the one-shot kernels answer for the same bytes,
//! however the bytes are cut into pieces, and fail with the same errors.

mod compare_support;

use compare_support::{per_kernel, Rng};
use facecompute_core::compare::{compare_many_to_many, compare_with, Comparison, Kernel, Metric, Options, RowStream};
use facecompute_core::delimit::PartEnd;
use facecompute_core::ErrorCode;

const NEEDLE: &[u8] = b"\r\n--facecompute-boundary-0123";

fn bytes_of(floats: &[f32]) -> Vec<u8> {
    floats.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The body as the reader sees it from the start of the targets part: the rows, the delimiter, then
/// the next part. `skew` bytes of something else come first (the chunk's earlier bytes), so rows
/// start at every alignment.
fn wire(targets: &[u8], skew: usize) -> (Vec<u8>, usize) {
    let mut w = vec![0x5au8; skew];
    w.extend_from_slice(targets);
    w.extend_from_slice(NEEDLE);
    w.extend_from_slice(b"--\r\n");
    (w, skew)
}

/// Streams `wire[start..]` in pieces of the given sizes (cycled) through PartEnd and RowStream.
fn stream(kernel: Kernel, sources: &[f32], wire: &[u8], start: usize, dims: usize, metric: Metric, k: Option<usize>, finish_k: Option<usize>, pieces: &[usize]) -> Result<Vec<Comparison>, facecompute_core::CoreError> {
    let mut rows = RowStream::new(Some(kernel), sources, dims, metric, k, 1 << 20).unwrap();
    let mut end = PartEnd::new(NEEDLE).unwrap();
    let mut at = start;
    let mut done = None;
    for &size in pieces.iter().cycle() {
        let piece = &wire[at..(at + size.max(1)).min(wire.len())];
        if let Some(past) = end.feed(piece, |b| rows.feed(b)) {
            done = Some(at + past);
            break;
        }
        at += piece.len();
        assert!(at < wire.len(), "the delimiter was never found");
    }
    assert_eq!(done, Some(wire.len() - 4), "the part ends just past the delimiter");
    assert_eq!(rows.bytes() as usize, wire.len() - start - 4 - NEEDLE.len());
    rows.finish(finish_k)
}

fn one_shot(kernel: Kernel, sources: &[f32], targets: &[f32], dims: usize, metric: Metric, k: Option<usize>) -> Vec<Comparison> {
    let options = Options { kernel: Some(kernel), max_threads: 1 };
    if sources.len() == dims {
        return vec![compare_with(options, sources, targets, dims, metric, k).unwrap()];
    }
    compare_many_to_many(options, sources, targets, dims, metric, k).unwrap()
}

fn every_chunking_gives_the_one_shot_answer(kernel: Kernel) {
    let mut rng = Rng::new(41);
    for &dims in &[1usize, 5, 128] {
        let n = 300 + rng.below(200);
        let targets: Vec<f32> = rng.vector(n * dims);
        let row = dims * 4;
        for sources_count in [1usize, 3] {
            let sources: Vec<f32> = rng.vector(sources_count * dims);
            for skew in [0usize, 1, 2, 3] {
                let (w, start) = wire(&bytes_of(&targets), skew);
                for pieces in [vec![1usize], vec![row - 1], vec![row + 1], vec![65536], vec![7, 4093, 1, row * 3]] {
                    for metric in Metric::ALL {
                        for k in [None, Some(1), Some(10), Some(n + 5)] {
                            let want = one_shot(kernel, &sources, &targets, dims, metric, k);
                            let got = stream(kernel, &sources, &w, start, dims, metric, k, k, &pieces).unwrap();
                            assert_eq!(got, want, "{kernel:?} dims {dims} sources {sources_count} skew {skew} pieces {pieces:?} {metric:?} k {k:?}");
                        }
                    }
                }
            }
        }
    }
}

per_kernel!(every_chunking_gives_the_one_shot_answer);

#[test]
fn the_delimiter_split_at_every_offset_ends_the_part_exactly() {
    let mut rng = Rng::new(43);
    let dims = 4;
    let targets: Vec<f32> = rng.vector(50 * dims);
    let sources: Vec<f32> = rng.vector(dims);
    let (w, start) = wire(&bytes_of(&targets), 1);
    let want = one_shot(Kernel::best(), &sources, &targets, dims, Metric::Cosine, Some(7));
    let delimiter_at = w.len() - 4 - NEEDLE.len();
    // A cut at every offset from a row before the delimiter to past its end.
    for cut in delimiter_at - 20..w.len() - 3 {
        let pieces = [cut - start, w.len()];
        let got = stream(Kernel::best(), &sources, &w, start, dims, Metric::Cosine, Some(7), Some(7), &pieces).unwrap();
        assert_eq!(got, want, "cut at {cut}");
    }
}

#[test]
fn ties_keep_index_order_like_the_one_shot_top_k() {
    // Many exact duplicates: the running top-k must keep the lowest indices among equal distances.
    let dims = 8;
    let mut rng = Rng::new(47);
    let a: Vec<f32> = rng.vector(dims);
    let b: Vec<f32> = rng.vector(dims);
    let mut targets = Vec::new();
    for i in 0..400 {
        targets.extend_from_slice(if i % 3 == 0 { &a } else { &b });
    }
    let (w, start) = wire(&bytes_of(&targets), 0);
    for k in [1, 5, 133, 134, 400] {
        for metric in Metric::ALL {
            let want = one_shot(Kernel::best(), &a, &targets, dims, metric, Some(k));
            let got = stream(Kernel::best(), &a, &w, start, dims, metric, Some(k), Some(k), &[97]).unwrap();
            assert_eq!(got, want, "k {k} {metric:?}");
        }
    }
}

#[test]
fn top_k_decided_after_the_part_selects_from_every_distance() {
    let mut rng = Rng::new(53);
    let dims = 16;
    let targets: Vec<f32> = rng.vector(600 * dims);
    let sources: Vec<f32> = rng.vector(2 * dims);
    let (w, start) = wire(&bytes_of(&targets), 3);
    let want = one_shot(Kernel::best(), &sources, &targets, dims, Metric::Angular, Some(9));
    let got = stream(Kernel::best(), &sources, &w, start, dims, Metric::Angular, None, Some(9), &[1000]).unwrap();
    assert_eq!(got, want);
}

#[test]
fn a_nan_names_the_first_bad_row_and_position_as_the_one_shot_path_does() {
    let dims = 128;
    let mut rng = Rng::new(59);
    let mut targets: Vec<f32> = rng.vector(1000 * dims);
    // Row 7 of the third 64 KiB chunk (128 rows of 512 bytes per chunk), then a later one.
    targets[(2 * 128 + 7) * dims + 31] = f32::NAN;
    targets[900 * dims] = f32::INFINITY;
    let sources: Vec<f32> = rng.vector(dims);
    let want = compare_with(Options::default(), &sources, &targets, dims, Metric::Cosine, Some(10)).unwrap_err();
    assert_eq!(want.code, ErrorCode::InvalidEmbedding);
    for skew in [0, 1] {
        let (w, start) = wire(&bytes_of(&targets), skew);
        for metric in Metric::ALL {
            let got = stream(Kernel::best(), &sources, &w, start, dims, metric, Some(10), Some(10), &[65536]).unwrap_err();
            assert_eq!(got, want, "{metric:?} skew {skew}");
            assert!(got.detail.contains("vector 263") && got.detail.contains("position 31"), "{}", got.detail);
        }
    }
}

#[test]
fn a_truncated_row_and_rows_past_the_limit_are_refused() {
    let dims = 4;
    let sources = [1.0f32, 0.0, 0.0, 0.0];
    let mut s = RowStream::new(None, &sources, dims, Metric::Cosine, Some(3), 100).unwrap();
    s.feed(&[0u8; 16 * 10 + 5]);
    let err = s.finish(Some(3)).unwrap_err();
    assert_eq!(err.code, ErrorCode::EmbeddingDimensionMismatch);

    let mut s = RowStream::new(None, &sources, dims, Metric::Cosine, None, 100).unwrap();
    for _ in 0..101 {
        s.feed(&[0u8; 16]);
    }
    assert_eq!(s.bytes(), 101 * 16);
    assert!(s.finish(None).is_err(), "101 rows over a limit of 100");

    // Exactly at the limit: answered.
    let mut s = RowStream::new(None, &sources, dims, Metric::Cosine, None, 100).unwrap();
    s.feed(&[0u8; 1600]);
    assert_eq!(s.finish(None).unwrap()[0].count, 100);
}

#[test]
fn bad_setups_are_refused_not_panicked() {
    let q = [1.0f32; 4];
    assert!(RowStream::new(None, &q, 0, Metric::Cosine, None, 10).is_err(), "dims 0");
    assert!(RowStream::new(None, &q, 4, Metric::Cosine, Some(0), 10).is_err(), "top_k 0");
    assert!(RowStream::new(None, &q[..3], 4, Metric::Cosine, None, 10).is_err(), "not whole sources");
    assert!(RowStream::new(None, &[1.0f32; 16], 4, Metric::Cosine, None, 10).is_err(), "too many sources to stream");
    assert!(RowStream::new(None, &[f32::NAN, 0.0, 0.0, 0.0], 4, Metric::Cosine, None, 10).is_err(), "a NaN source");
    let mut s = RowStream::new(None, &q, 4, Metric::Cosine, Some(2), 10).unwrap();
    s.feed(&[0u8; 32]);
    assert!(s.finish(Some(3)).is_err(), "a top_k other than the streamed one");
}
