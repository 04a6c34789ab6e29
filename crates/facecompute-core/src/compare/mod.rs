//! Vector comparison: one query against many, with DeepFace's four distance metrics.
//!
//! Targets arrive as f32 (from a Float32Array or base64), are validated in the same pass that
//! computes their distances, and every sum is accumulated in f64 so results match a float64
//! reference to ~1e-12 (the contract promises 1e-6). Distances are not rounded here.

mod b64;
mod json;
mod kernels;
mod many;
mod metric;
mod normalize;
mod parallel;
mod stream;
mod topk;
mod validate;

pub use b64::decode_vectors_b64;
pub use json::{find_confidence, round_distance, write_results, Confidence, Decide};
pub use kernels::Kernel;
pub use many::{compare_many_to_many, peak_f32_gflops, MIN_GEMM_SOURCES};
pub use metric::{Metric, L2_EPSILON};
pub use normalize::l2_normalize;
pub use stream::RowStream;
pub use topk::top_k;
pub use validate::{count_vectors, validate_query, validate_vectors};

use crate::error::{CoreError, CoreResult};
use metric::QueryStats;

/// Distances in target order (`indices` = 0..N) or, with top-k, the k nearest, nearest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub indices: Vec<u32>,
    pub distances: Vec<f64>,
    /// How many targets were compared (N), whatever k was.
    pub count: usize,
}

/// How to run a comparison; the defaults are what production uses.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// `None`: the widest kernel this CPU supports.
    pub kernel: Option<Kernel>,
    /// 0: as many threads as the work deserves, up to the machine's count.
    pub max_threads: usize,
}

/// Compares `query` (dims values) with every row of `targets` (N×dims, row-major).
/// `top_k`: `None` keeps all N in order; `Some(k)` keeps the k nearest (k ≥ 1).
pub fn compare_one_to_many(query: &[f32], targets: &[f32], dims: usize, metric: Metric, top_k: Option<usize>) -> CoreResult<Comparison> {
    compare_with(Options::default(), query, targets, dims, metric, top_k)
}

pub fn compare_with(options: Options, query: &[f32], targets: &[f32], dims: usize, metric: Metric, k: Option<usize>) -> CoreResult<Comparison> {
    validate_query(query, dims)?;
    let count = count_vectors(targets.len(), dims)?;
    let Prepared { kernel, query64, stats } = prepare(options, query, count, k)?;
    let mut distances = vec![0f64; count];
    let threads = parallel::threads_for(count, dims, options.max_threads);
    parallel::for_row_ranges(&mut distances, threads, 1, |first, out| {
        let t = &targets[first * dims..(first + out.len()) * dims];
        kernel.distances(&query64, &stats, metric, t, dims, out);
    });
    // The kernels mark a row whose sums are not finite with NaN; only a NaN or Infinity in that
    // row can cause it, so find the exact position for the error.
    if let Some(row) = distances.iter().position(|d| d.is_nan()) {
        let at = validate::first_non_finite(&targets[row * dims..(row + 1) * dims]).unwrap_or(0);
        return Err(validate::non_finite_error(row, at));
    }
    Ok(finish(distances, count, k))
}

/// Decodes base64 targets and compares them in one pass (the `targets_b64` path). Blocks of rows are
/// decoded into a small buffer that stays in cache and compared at once, so the N×dims matrix is
/// never materialised. Any failure is re-derived by the full decoder, so the error is exactly the
/// one `decode_vectors_b64` reports.
pub fn compare_one_to_many_b64(options: Options, query: &[f32], targets_b64: &[u8], dims: usize, metric: Metric, k: Option<usize>) -> CoreResult<Comparison> {
    validate_query(query, dims)?;
    let rows = b64::B64Rows::parse(targets_b64, dims)?;
    let count = rows.count;
    let Prepared { kernel, query64, stats } = prepare(options, query, count, k)?;
    // About 64 KiB of floats per block, a whole number of character-aligned groups.
    let block_rows = ((STREAM_BLOCK_FLOATS / dims).max(1)).div_ceil(rows.group_rows) * rows.group_rows;
    let mut distances = vec![0f64; count];
    let failed = std::sync::atomic::AtomicBool::new(false);
    let threads = parallel::threads_for(count, dims, options.max_threads);
    parallel::for_row_ranges(&mut distances, threads, block_rows, |first, out| {
        let mut buffer = vec![0f32; block_rows.min(out.len()) * dims];
        for (b, out_block) in out.chunks_mut(block_rows).enumerate() {
            let floats = &mut buffer[..out_block.len() * dims];
            if !rows.decode_rows(first + b * block_rows, floats) {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            kernel.distances(&query64, &stats, metric, floats, dims, out_block);
        }
    });
    if failed.into_inner() || distances.iter().any(|d| d.is_nan()) {
        return Err(match decode_vectors_b64(targets_b64, dims) {
            Err(e) => e,
            Ok(_) => CoreError::new(crate::error::ErrorCode::InternalError, "base64 comparison failed without a cause"),
        });
    }
    Ok(finish(distances, count, k))
}

/// What both entry points do once the targets are counted: the top_k and size checks, the kernel,
/// and the query in float64 with its statistics.
struct Prepared {
    kernel: Kernel,
    query64: Vec<f64>,
    stats: QueryStats,
}

fn prepare(options: Options, query: &[f32], count: usize, k: Option<usize>) -> CoreResult<Prepared> {
    if k == Some(0) {
        return Err(CoreError::invalid_request("top_k must be at least 1"));
    }
    if u32::try_from(count).is_err() {
        return Err(CoreError::invalid_request("too many target vectors for one comparison"));
    }
    let query64: Vec<f64> = query.iter().map(|&x| x as f64).collect();
    let stats = QueryStats::of(&query64);
    Ok(Prepared { kernel: options.kernel.unwrap_or_else(Kernel::best), query64, stats })
}

const STREAM_BLOCK_FLOATS: usize = 16 * 1024;

fn finish(distances: Vec<f64>, count: usize, k: Option<usize>) -> Comparison {
    match k {
        Some(k) if count > 0 => {
            let (indices, distances) = top_k(&distances, k);
            Comparison { indices, distances, count }
        }
        _ => Comparison { indices: (0..count as u32).collect(), distances, count },
    }
}

/// Benchmark yardstick: the sum of every float with the default kernel and the thread split a
/// comparison of `dims`-long rows would use, i.e. the fastest this machine can merely read them.
pub fn read_bandwidth_sum(data: &[f32], dims: usize) -> f64 {
    let kernel = Kernel::best();
    let dims = dims.max(1);
    let threads = parallel::threads_for(data.len() / dims, dims, 0);
    parallel::read_sum_parallel(data, threads, |part| kernel.read_sum(part))
}

/// Threads a comparison of `rows` × `dims` would use (reported by the benchmark).
pub fn threads_for(rows: usize, dims: usize) -> usize {
    parallel::threads_for(rows, dims, 0)
}
