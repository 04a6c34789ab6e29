//! Splits a one-to-many comparison over threads when it is big enough to pay for them.

use std::sync::OnceLock;

/// Below this many floats (4 MiB) a thread costs more to start than it saves.
const MIN_FLOATS_PER_THREAD: usize = 1 << 20;

pub fn available_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// How many threads `rows × dims` floats deserve, at most `limit` (0 means the machine's count).
pub fn threads_for(rows: usize, dims: usize, limit: usize) -> usize {
    let limit = if limit == 0 { available_threads() } else { limit };
    (rows * dims / MIN_FLOATS_PER_THREAD).clamp(1, limit.max(1)).min(rows.max(1))
}

/// Calls `work(first_row, out_slice)` on `threads` disjoint row ranges, each starting at a multiple
/// of `align`, the first on the calling thread. A panic in any part propagates to the caller (and
/// from there to the binding's guard).
pub fn for_row_ranges<F>(out: &mut [f64], threads: usize, align: usize, work: F)
where
    F: Fn(usize, &mut [f64]) + Sync,
{
    let rows = out.len();
    if threads <= 1 || rows < 2 {
        work(0, out);
        return;
    }
    let align = align.max(1);
    let per = rows.div_ceil(threads).div_ceil(align) * align;
    std::thread::scope(|scope| {
        let mut parts = out.chunks_mut(per).enumerate();
        let first = parts.next();
        for (i, o) in parts {
            let work = &work;
            scope.spawn(move || work(i * per, o));
        }
        if let Some((_, o)) = first {
            work(0, o);
        }
    });
}

/// The sum of every float, split the same way, so the bandwidth yardstick uses as many cores as
/// the comparison it is set against.
pub fn read_sum_parallel<F>(data: &[f32], threads: usize, sum: F) -> f64
where
    F: Fn(&[f32]) -> f64 + Sync,
{
    if threads <= 1 || data.len() < 2 {
        return sum(data);
    }
    let per = data.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut parts = data.chunks(per);
        let first = parts.next().unwrap_or(&[]);
        let handles: Vec<_> = parts.map(|p| { let sum = &sum; scope.spawn(move || sum(p)) }).collect();
        let mut total = sum(first);
        for h in handles {
            total += h.join().unwrap_or(f64::NAN);
        }
        total
    })
}
