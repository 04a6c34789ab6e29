//! What one scan takes from the process: threads, shared so that concurrent detections do not
//! oversubscribe the cores, and scratch buffers, reused across scans rather than allocated, zeroed
//! and page-faulted anew by each one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Scan threads running right now, over every scan that asked for an automatic thread count.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(8))
}

/// One scan's threads among those running; given back when it is dropped.
pub(super) struct Turn(usize);

impl Turn {
    /// Takes a share of the machine: up to one thread per core while fewer than two per core run,
    /// at least one. A scan alone, or the two images of one /verify, get the cores; under load
    /// each scan gets one thread, since the other requests keep the other cores busy.
    pub(super) fn take() -> (Self, usize) {
        let mut threads = 1;
        let _ = RUNNING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            threads = share(cores(), running);
            Some(running + threads)
        });
        (Self(threads), threads)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        RUNNING.fetch_sub(self.0, Ordering::AcqRel);
    }
}

fn share(cores: usize, running: usize) -> usize {
    cores.min((2 * cores).saturating_sub(running)).max(1)
}

/// Scratch kept between scans: at most this many sets, and none larger than `KEEP_BYTES`, so the
/// pool holds at most `KEEP_SETS * KEEP_BYTES` after a burst of large images.
const KEEP_SETS: usize = 8;
const KEEP_BYTES: usize = 16 << 20;

/// A pool of scratch sets of type `T`.
pub(super) struct Pool<T> {
    spare: Mutex<Vec<T>>,
}

/// What a scratch set holds, in bytes of capacity.
pub(super) trait Scratch: Default {
    fn bytes(&self) -> usize;
}

impl<T: Scratch> Pool<T> {
    pub(super) const fn new() -> Self {
        Self { spare: Mutex::new(Vec::new()) }
    }

    /// A set from the pool, or a new empty one.
    pub(super) fn get(&self) -> T {
        self.spare.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default()
    }

    /// Gives a set back; dropped when too large or when the pool is full.
    pub(super) fn put(&self, set: T) {
        if set.bytes() > KEEP_BYTES {
            return;
        }
        if let Ok(mut spare) = self.spare.lock() {
            if spare.len() < KEEP_SETS {
                spare.push(set);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Bytes(Vec<u8>);
    impl Scratch for Bytes {
        fn bytes(&self) -> usize {
            self.0.capacity()
        }
    }

    #[test]
    fn a_scan_gets_the_cores_while_fewer_than_two_threads_per_core_run() {
        assert_eq!(share(2, 0), 2, "alone: every core");
        assert_eq!(share(2, 2), 2, "the second image of a pair: every core too");
        assert_eq!(share(2, 3), 1);
        assert_eq!(share(2, 4), 1, "under load: one thread");
        assert_eq!(share(2, 15), 1);
        assert_eq!(share(8, 10), 6);
        assert_eq!(share(1, 0), 1);
    }

    #[test]
    fn a_turn_gives_its_threads_back() {
        // Other tests may scan meanwhile: only this turn's own contribution is checked.
        let (turn, threads) = Turn::take();
        assert!((1..=cores()).contains(&threads));
        assert_eq!(turn.0, threads);
        drop(turn);
    }

    #[test]
    fn the_pool_reuses_sets_and_drops_oversized_ones() {
        let pool: Pool<Bytes> = Pool::new();
        pool.put(Bytes(Vec::with_capacity(1024)));
        assert!(pool.get().0.capacity() >= 1024, "a kept set comes back");
        assert_eq!(pool.get().0.capacity(), 0, "an empty pool gives a new set");
        pool.put(Bytes(Vec::with_capacity(KEEP_BYTES + 1)));
        assert_eq!(pool.get().0.capacity(), 0, "an oversized set is not kept");
        for _ in 0..KEEP_SETS + 3 {
            pool.put(Bytes(Vec::with_capacity(16)));
        }
        assert_eq!(pool.spare.lock().unwrap().len(), KEEP_SETS);
    }
}
