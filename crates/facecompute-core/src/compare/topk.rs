//! The k nearest rows, nearest first; equal distances keep index order so results are reproducible.

use std::cmp::Ordering;

fn nearer(a: &(f64, u32), b: &(f64, u32)) -> Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// Indices and distances of the `k` smallest entries; `k >= distances.len()` sorts them all.
pub fn top_k(distances: &[f64], k: usize) -> (Vec<u32>, Vec<f64>) {
    let mut pairs: Vec<(f64, u32)> = distances.iter().enumerate().map(|(i, &d)| (d, i as u32)).collect();
    let k = k.min(pairs.len());
    if k < pairs.len() && k > 0 {
        pairs.select_nth_unstable_by(k - 1, nearer);
    }
    pairs.truncate(k);
    // Keys are unique (the index breaks ties), so an unstable sort is deterministic.
    pairs.sort_unstable_by(nearer);
    pairs.into_iter().map(|(d, i)| (i, d)).unzip()
}
