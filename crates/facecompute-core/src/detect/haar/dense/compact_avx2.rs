//! AVX2 compacted scan (see `compact`): the dense kernel's first stages on eight neighbouring
//! origins, then the later stages on eight survivors at a time, each copied into one lane. The
//! arithmetic per window is the dense kernel's (`avx2::stage`), only where the corners come from
//! differs.

use super::avx2::{self, Sums};
use super::compact::{dense_stages, Survivors};
use super::{walk, Level, LANES};
use std::arch::x86_64::*;

/// # Safety
/// As `avx2::scan_row`, for every row base of `bases`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn scan_rows<S: Sums>(
    level: &Level,
    bases: impl Iterator<Item = usize>,
    n: usize,
    list: &mut Survivors,
    hits: &mut Vec<(u32, f64)>,
) {
    for base in bases {
        unsafe { dense_row::<S>(level, base, n, list, hits) };
        unsafe { copied_stages::<S>(level, base, n, list, hits) };
    }
}

/// The first `DENSE_STAGES` stages over one row, with OpenCV's skip rule: the windows still alive
/// join `list` (or, for a cascade that short, are hits).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn dense_row<S: Sums>(level: &Level, base: usize, n: usize, list: &mut Survivors, hits: &mut Vec<(u32, f64)>) {
    let stages = level.stages;
    let dense = stages.len().min(dense_stages());
    let mut skip = false;
    let mut j0 = 0;
    while j0 < n {
        let lanes = (n - j0).min(LANES);
        let (ps, pq) = unsafe { (level.sum.as_ptr().add(base + j0), level.sq.as_ptr().add(base + j0).cast::<i32>()) };
        let Some((nonflat, vnf)) = (unsafe { avx2::normalise(level, ps, pq, lanes) }) else {
            skip = false;
            j0 += LANES;
            continue;
        };
        let mut live = 0;
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for (si, st) in stages[..dense].iter().enumerate() {
            (lo, hi) = unsafe { avx2::stage::<S>(ps, level.stumps, st, vnf) };
            let fail = avx2::below(lo, hi, st.threshold);
            live = if si == 0 { walk(lanes, nonflat, fail, &mut skip) } else { live & !fail };
            if live == 0 {
                break;
            }
        }
        if live != 0 {
            if dense == stages.len() {
                avx2::push_hits(base + j0, live, lo, hi, hits);
            } else {
                list.push(j0, live, vnf);
            }
        }
        j0 += LANES;
    }
}

/// Stages `dense_stages()..` for the survivors of one row in `list`, eight at a time: each
/// window's points are copied into one lane of `Survivors::copy` (point-major), so that every
/// corner of eight windows is one contiguous load at the stump's offset in `Level::copied`.
/// Empties `list`, appending the windows that pass the last stage to `hits` in origin order.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn copied_stages<S: Sums>(level: &Level, base: usize, n: usize, list: &mut Survivors, hits: &mut Vec<(u32, f64)>) {
    let stages = level.stages;
    let points = level.points;
    let (idx, vnf, copy) = list.parts(n, points.len() * LANES);
    for chunk in idx.chunks(LANES) {
        let mut f = [0f32; LANES];
        for (lane, &j) in chunk.iter().enumerate() {
            f[lane] = vnf[j as usize];
            // SAFETY: every point is one a stump reads, inside the buffer for every origin of
            // the row (`Level::new`); `copy` holds `points.len()` slots of eight.
            unsafe {
                let src = level.sum.as_ptr().add(base + j as usize);
                for (p, &o) in points.iter().enumerate() {
                    *copy.get_unchecked_mut(p * LANES + lane) = *src.add(o as usize);
                }
            }
        }
        let vf = unsafe { _mm256_loadu_ps(f.as_ptr()) };
        let mut live = (1u32 << chunk.len()) - 1;
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for st in &stages[dense_stages()..] {
            (lo, hi) = unsafe { avx2::stage::<S>(copy.as_ptr(), level.copied, st, vf) };
            live &= !avx2::below(lo, hi, st.threshold);
            if live == 0 {
                break;
            }
        }
        if live != 0 {
            let mut sums = [0f64; LANES];
            unsafe {
                _mm256_storeu_pd(sums.as_mut_ptr(), lo);
                _mm256_storeu_pd(sums.as_mut_ptr().add(4), hi);
            }
            while live != 0 {
                let k = live.trailing_zeros() as usize;
                hits.push(((base + chunk[k] as usize) as u32, sums[k]));
                live &= live - 1;
            }
        }
    }
    list.clear();
}
