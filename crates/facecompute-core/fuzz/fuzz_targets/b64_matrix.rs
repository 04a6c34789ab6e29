//! The base64 matrix decoder (`targets_b64`) on arbitrary text, checked against an independent
//! scalar RFC 4648 decoder written here: the same verdict (the same error code, or the same bits),
//! and the streaming comparison over the text (`compare_one_to_many_b64`, blocks decoded in place)
//! equal to decoding first and comparing (`compare_one_to_many`), with the scalar kernel and the
//! widest SIMD kernel agreeing to 1e-9. Any panic, disagreement or allocation beyond the RSS limit
//! is a bug.
//!
//! The first two bytes choose the dimension, the metric and top_k; the rest is the text.
//!   cargo +nightly fuzz run b64_matrix corpus/b64_matrix -- -max_len=4096 -rss_limit_mb=2048
#![no_main]

use facecompute_core::compare::{compare_one_to_many, compare_one_to_many_b64, compare_with, decode_vectors_b64, Kernel, Metric, Options};
use facecompute_core::error::ErrorCode;
use libfuzzer_sys::fuzz_target;

const DIMS: [usize; 8] = [1, 2, 3, 4, 5, 7, 16, 128];

fn value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// The contract's rules, written out plainly: standard alphabet, up to two '=' only where they
/// complete the last 4-character group, no whitespace, no bits set past the data, whole rows of
/// finite float32.
fn reference(text: &[u8], dims: usize) -> Result<Vec<f32>, ErrorCode> {
    let mut t = text;
    if t.len() % 4 == 0 {
        let pads = t.iter().rev().take(2).take_while(|&&c| c == b'=').count();
        t = &t[..t.len() - pads];
    }
    let vals: Vec<u32> = t.iter().map(|&c| value(c)).collect::<Option<_>>().ok_or(ErrorCode::InvalidEmbedding)?;
    let byte_len = match vals.len() % 4 {
        0 => vals.len() / 4 * 3,
        2 => vals.len() / 4 * 3 + 1,
        3 => vals.len() / 4 * 3 + 2,
        _ => return Err(ErrorCode::InvalidEmbedding),
    };
    if byte_len % (dims * 4) != 0 {
        return Err(ErrorCode::EmbeddingDimensionMismatch);
    }
    let mut bytes = Vec::with_capacity(byte_len);
    for group in vals.chunks(4) {
        let mut acc = 0u32;
        for (i, v) in group.iter().enumerate() {
            acc |= v << (18 - 6 * i);
        }
        let n = group.len() - 1;
        let spare = acc & ((1 << (24 - 8 * n)) - 1);
        if group.len() < 4 && spare != 0 {
            return Err(ErrorCode::InvalidEmbedding);
        }
        bytes.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    let floats: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    if floats.iter().any(|f| !f.is_finite()) {
        return Err(ErrorCode::InvalidEmbedding);
    }
    Ok(floats)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let dims = DIMS[(data[0] & 7) as usize];
    let metric = Metric::ALL[((data[0] >> 3) & 3) as usize];
    let k = match data[1] & 3 {
        0 => None,
        n => Some(n as usize),
    };
    let text = &data[2..];

    let ours = decode_vectors_b64(text, dims);
    let theirs = reference(text, dims);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert!(a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "decoded values differ"),
        (Err(e), Err(code)) => assert_eq!(e.code, *code, "different verdicts: {e:?}"),
        _ => panic!("decoder {:?} vs reference {:?}", ours.as_ref().map(|v| v.len()), theirs.as_ref().map(|v| v.len())),
    }

    // A finite query, different per input, with a non-zero norm.
    let seed = data.iter().fold(7u32, |a, &b| a.wrapping_mul(31).wrapping_add(b as u32));
    let query: Vec<f32> = (0..dims).map(|i| ((seed.wrapping_add(i as u32 * 2654435761) >> 8) % 2001) as f32 / 1000.0 - 1.0 + 0.0001).collect();
    let one = Options { kernel: None, max_threads: 1 };
    let streamed = compare_one_to_many_b64(one, &query, text, dims, metric, k);
    match &ours {
        Ok(targets) => {
            let direct = compare_one_to_many(&query, targets, dims, metric, k).expect("decoded targets compare");
            assert_eq!(streamed.as_ref().expect("streamed comparison of valid text"), &direct, "streamed != decode-then-compare");
            let scalar = compare_with(Options { kernel: Some(Kernel::Scalar), max_threads: 1 }, &query, targets, dims, metric, None).unwrap();
            let widest = compare_with(one, &query, targets, dims, metric, None).unwrap();
            for (s, w) in scalar.distances.iter().zip(&widest.distances) {
                assert!((s - w).abs() <= 1e-9 * s.abs().max(1.0), "scalar {s} vs simd {w}");
            }
        }
        Err(e) => assert_eq!(streamed.expect_err("streamed comparison of invalid text").code, e.code, "streamed error differs"),
    }
});
