//! One-to-many comparison over targets that arrive in pieces (the streaming path of /compare with
//! binary targets): each piece's complete rows are scored at once, while they are still in cache,
//! by the same kernels as `compare_with`, and only the running results are kept (a top-k per source,
//! or without top_k one distance per row), never the N×dims matrix. A row split between pieces is
//! carried over (at most one row's bytes). The answer is the one `compare_with` (or, for several
//! sources, `compare_many_to_many`, which runs `compare_with` per source below `MIN_GEMM_SOURCES`)
//! gives for the same bytes, bit for bit: same kernels, same per-row sums, same order of ties.
//!
//! Errors are decided at `finish`, in the order of the contiguous path: the byte length (not whole
//! rows), then the first row with a NaN or Infinity. The row limit is the caller's (it owns the
//! message); past it, rows are counted but no longer scored.

use super::kernels::Kernel;
use super::metric::{Metric, QueryStats};
use super::validate::{check_dims, first_non_finite, non_finite_error, validate_query};
use super::{topk, Comparison, MIN_GEMM_SOURCES};
use crate::error::{CoreError, CoreResult, ErrorCode};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Rows scored per kernel call: the distances of one block stay in L1.
const BLOCK_ROWS: usize = 256;

/// A (distance, row) pair ordered as `topk::top_k` orders them: by distance (total order), then row.
#[derive(Debug, Clone, Copy)]
struct Near(f64, u32);

impl PartialEq for Near {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Little-endian f32 bytes into `out` (cleared first), aligned and in host order.
fn floats_of(bytes: &[u8], out: &mut Vec<f32>) {
    out.clear();
    out.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
}

/// What is kept per source.
#[derive(Debug)]
enum Kept {
    /// Every distance, in row order (no top_k, or top_k not known yet).
    All(Vec<f64>),
    /// The k nearest so far; the heap's top is the farthest of them.
    Nearest(usize, BinaryHeap<Near>),
}

#[derive(Debug)]
struct Source {
    query: Vec<f64>,
    stats: QueryStats,
    kept: Kept,
}

#[derive(Debug)]
pub struct RowStream {
    kernel: Kernel,
    metric: Metric,
    dims: usize,
    row_bytes: usize,
    max_rows: usize,
    sources: Vec<Source>,
    /// The bytes of a row not yet complete (fewer than `row_bytes`).
    partial: Vec<u8>,
    /// Whole rows seen, scored or not.
    rows: usize,
    bytes: u64,
    /// The first row with a NaN or Infinity, and the position in it; nothing is scored after it.
    bad: Option<(usize, usize)>,
    /// Rows copied here for kernels that cannot read unaligned bytes in place.
    aligned: Vec<f32>,
    out: Vec<f64>,
}

impl RowStream {
    /// `sources`: K×dims, row-major, 1 ≤ K < MIN_GEMM_SOURCES (more sources take the matrix product,
    /// which needs all targets at once). `k`: the top_k if it is known, else every distance is kept.
    /// `max_rows`: rows beyond it are counted, not scored (the caller refuses the request).
    pub fn new(kernel: Option<Kernel>, sources: &[f32], dims: usize, metric: Metric, k: Option<usize>, max_rows: usize) -> CoreResult<RowStream> {
        check_dims(dims)?;
        if k == Some(0) {
            return Err(CoreError::invalid_request("top_k must be at least 1"));
        }
        let count = sources.len() / dims;
        if sources.len() % dims != 0 || count == 0 || count >= MIN_GEMM_SOURCES {
            return Err(CoreError::invalid_request(format!("a streamed comparison takes 1 to {} sources of {dims} values", MIN_GEMM_SOURCES - 1)));
        }
        let row_bytes = dims.checked_mul(4).ok_or_else(|| CoreError::invalid_request("dims is too large"))?;
        let mut list = Vec::with_capacity(count);
        for source in sources.chunks_exact(dims) {
            validate_query(source, dims)?;
            let query: Vec<f64> = source.iter().map(|&x| x as f64).collect();
            let stats = QueryStats::of(&query);
            let kept = match k {
                Some(k) => Kept::Nearest(k, BinaryHeap::with_capacity(k.min(1 << 16) + 1)),
                None => Kept::All(Vec::new()),
            };
            list.push(Source { query, stats, kept });
        }
        Ok(RowStream {
            kernel: kernel.unwrap_or_else(Kernel::best),
            metric,
            dims,
            row_bytes,
            max_rows: max_rows.min(u32::MAX as usize),
            sources: list,
            partial: Vec::with_capacity(row_bytes),
            rows: 0,
            bytes: 0,
            bad: None,
            aligned: Vec::new(),
            out: vec![0.0; BLOCK_ROWS],
        })
    }

    /// Bytes fed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Scores the complete rows of the next piece of the targets; any split row is carried over.
    pub fn feed(&mut self, mut piece: &[u8]) {
        self.bytes += piece.len() as u64;
        if !self.partial.is_empty() {
            let need = (self.row_bytes - self.partial.len()).min(piece.len());
            self.partial.extend_from_slice(&piece[..need]);
            piece = &piece[need..];
            if self.partial.len() < self.row_bytes {
                return;
            }
            let row = std::mem::take(&mut self.partial);
            self.score_bytes(&row);
            self.partial = row;
            self.partial.clear();
        }
        let whole = piece.len() / self.row_bytes * self.row_bytes;
        self.score_bytes(&piece[..whole]);
        self.partial.extend_from_slice(&piece[whole..]);
    }

    /// Scores whole rows given as bytes, in place when they are aligned f32 on a little-endian host.
    fn score_bytes(&mut self, bytes: &[u8]) {
        debug_assert_eq!(bytes.len() % self.row_bytes, 0);
        let n = bytes.len() / self.row_bytes;
        let first = self.rows;
        self.rows += n;
        // Past the limit, or after a bad row, the answer is an error: nothing more to score.
        if self.bad.is_some() || first >= self.max_rows {
            return;
        }
        let n = n.min(self.max_rows - first);
        let dims = self.dims;
        for (b, block) in bytes[..n * self.row_bytes].chunks(BLOCK_ROWS * self.row_bytes).enumerate() {
            let rows = block.len() / self.row_bytes;
            let base = first + b * BLOCK_ROWS;
            let out = &mut self.out[..rows];
            for (s, source) in self.sources.iter_mut().enumerate() {
                // Socket chunks put rows at any alignment: the SIMD kernels read them in place, the
                // others from an aligned copy (which the NaN position below also needs).
                if !self.kernel.distances_unaligned(&source.query, &source.stats, self.metric, block, dims, out) {
                    floats_of(block, &mut self.aligned);
                    self.kernel.distances(&source.query, &source.stats, self.metric, &self.aligned, dims, out);
                }
                if s == 0 {
                    // The kernels give NaN exactly for a row holding a NaN or Infinity (metric.rs).
                    if let Some(r) = out.iter().position(|d| d.is_nan()) {
                        floats_of(&block[r * self.row_bytes..(r + 1) * self.row_bytes], &mut self.aligned);
                        let at = first_non_finite(&self.aligned).unwrap_or(0);
                        self.bad = Some((base + r, at));
                        return;
                    }
                }
                match &mut source.kept {
                    Kept::All(all) => all.extend_from_slice(out),
                    Kept::Nearest(k, heap) => {
                        for (r, &d) in out.iter().enumerate() {
                            let near = Near(d, (base + r) as u32);
                            if heap.len() < *k {
                                heap.push(near);
                            } else if let Some(mut top) = heap.peek_mut() {
                                if near < *top {
                                    *top = near;
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The results, one per source, as `compare_with` would give them with top_k `k` (which must be
    /// the one given to `new` when one was; without one there, any). Errors: a byte length that is
    /// not whole rows, more rows than `max_rows`, then the first non-finite row.
    pub fn finish(self, k: Option<usize>) -> CoreResult<Vec<Comparison>> {
        if !self.partial.is_empty() {
            return Err(CoreError::new(
                ErrorCode::EmbeddingDimensionMismatch,
                format!("{} bytes are not whole vectors of {} float32 values", self.bytes, self.dims),
            ));
        }
        if self.rows > self.max_rows {
            return Err(CoreError::invalid_request(format!("more than {} target vectors", self.max_rows)));
        }
        if let Some((row, at)) = self.bad {
            return Err(non_finite_error(row, at));
        }
        if k == Some(0) {
            return Err(CoreError::invalid_request("top_k must be at least 1"));
        }
        let count = self.rows;
        self.sources
            .into_iter()
            .map(|s| match (s.kept, k) {
                (Kept::All(all), Some(k)) if count > 0 => {
                    let (indices, distances) = topk::top_k(&all, k);
                    Ok(Comparison { indices, distances, count })
                }
                (Kept::All(all), _) => Ok(Comparison { indices: (0..count as u32).collect(), distances: all, count }),
                (Kept::Nearest(kept, heap), Some(k)) if kept == k => {
                    let (indices, distances) = heap.into_sorted_vec().into_iter().map(|Near(d, i)| (i, d)).unzip();
                    Ok(Comparison { indices, distances, count })
                }
                (Kept::Nearest(..), _) => Err(CoreError::new(ErrorCode::InternalError, "the streamed comparison kept another top_k")),
            })
            .collect()
    }
}
