//! `np.argsort` of a float64 array as numpy 2.x runs it on an x86-64 CPU with AVX2 and without
//! AVX-512: numpy hands it to x86-simd-sort's `avx2_argsort` (numpy/_core/src/npysort/
//! x86_simd_argsort.dispatch.cpp; x86-simd-sort src/xss-common-argsort.h, xss-network-keyvaluesort.hpp,
//! avx2-64bit-qsort.hpp, avx2-emu-funcs.hpp, as vendored by numpy 2.1). This is the order mtcnn 1.0.0
//! leaves tied candidates in under DeepFace's numpy 2.1.3, and the order decides which of two tied,
//! overlapping boxes survives its suppression.
//!
//! The algorithm, lane by lane (4 float64 keys with 4 u64 indices per AVX2 register):
//! - quicksort with a pivot that is the 3rd smallest of 4 samples, partitioned 16 at a time by
//!   "compress stores" (the keys below the pivot keep their order on the left, those at or above it
//!   fill the register from its top lane down), both halves recursing unless the pivot was the
//!   range's smallest/largest value; past 2·⌊log2 n⌋ levels, libstdc++'s `std::sort`;
//! - ranges of at most 256 are sorted by bitonic networks over padded registers (+inf keys);
//!   a compare-exchange keeps the indices in place when the keys are equal.
//! Emulated here with scalar code, step for step: no SIMD, the same permutation.

use super::sorts::std_sort;

const LANES: usize = 4;
type Keys = [f64; LANES];
type Idx = [usize; LANES];

/// `np.argsort(v)` (default kind) under numpy 2.x with x86-simd-sort on AVX2, as indices into `v`.
pub fn numpy_avx2_argsort(v: &[f64]) -> Vec<usize> {
    let n = v.len();
    let mut arg: Vec<usize> = (0..n).collect();
    if n > 1 {
        if v.iter().any(|x| x.is_nan()) {
            // numpy passes hasnan=true: an array with a NaN goes to std::sort, NaN last.
            std_sort(&mut arg, &|&a: &usize, &b: &usize| if !v[a].is_nan() && !v[b].is_nan() { v[a] < v[b] } else { !v[a].is_nan() });
        } else {
            let max_iters = 2 * ((n as f64).log2() as i64);
            argsort(v, &mut arg, 0, n as i64 - 1, max_iters);
        }
    }
    arg
}

/// `argsort_`: `right` inclusive.
fn argsort(v: &[f64], arg: &mut [usize], left: i64, right: i64, max_iters: i64) {
    if max_iters <= 0 {
        std_sort(&mut arg[left as usize..(right + 1) as usize], &|&a: &usize, &b: &usize| v[a] < v[b]);
        return;
    }
    if right + 1 - left <= 256 {
        argsort_n(v, &mut arg[left as usize..(right + 1) as usize]);
        return;
    }
    let pivot = pivot_64bit(v, arg, left, right);
    let (pivot_index, smallest, biggest) = partition_unrolled(v, arg, left, right + 1, pivot);
    if pivot != smallest {
        argsort(v, arg, left, pivot_index - 1, max_iters - 1);
    }
    if pivot != biggest {
        argsort(v, arg, pivot_index, right, max_iters - 1);
    }
}

/// `get_pivot_64bit` for 4 lanes: the 3rd smallest of the keys at a quarter, half, three quarters
/// and the end of the range.
fn pivot_64bit(v: &[f64], arg: &[usize], left: i64, right: i64) -> f64 {
    if right - left >= LANES as i64 {
        let size = (right - left) / 4;
        let mut s = [1, 2, 3, 4].map(|k| v[arg[(left + k * size) as usize]]);
        s.sort_by(|a, b| a.partial_cmp(b).expect("no NaN here"));
        s[2]
    } else {
        v[arg[right as usize]]
    }
}

/// `partition_vec_avx2` + `avx2_double_compressstore64`: the register's lanes below the pivot in
/// order, then those at or above it from the top lane down, stored whole at `l_store` and then at
/// `r_store`. Returns how many were at or above the pivot.
fn partition_vec(arg: &mut [usize], l_store: i64, r_store: i64, idx: Idx, keys: Keys, pivot: f64) -> i64 {
    let mut temp = [0usize; LANES];
    let (mut lo, mut hi) = (0usize, LANES);
    for j in 0..LANES {
        if keys[j] >= pivot {
            hi -= 1;
            temp[hi] = idx[j];
        } else {
            temp[lo] = idx[j];
            lo += 1;
        }
    }
    arg[l_store as usize..l_store as usize + LANES].copy_from_slice(&temp);
    arg[r_store as usize..r_store as usize + LANES].copy_from_slice(&temp);
    (LANES - lo) as i64
}

/// `argpartition_unrolled<.., 4>` on `[left, right)`: returns the first index at or above the
/// pivot and the range's smallest and largest keys.
fn partition_unrolled(v: &[f64], arg: &mut [usize], mut left: i64, mut right: i64, pivot: f64) -> (i64, f64, f64) {
    const UNROLL: i64 = 4;
    const BLOCK: i64 = UNROLL * LANES as i64;
    // Reached only for ranges above 256; x86-simd-sort's plain `argpartition` takes those of 128 or less.
    debug_assert!(right - left > 8 * BLOCK);
    let (mut smallest, mut biggest) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut i = (right - left) % BLOCK;
    while i > 0 {
        let x = v[arg[left as usize]];
        // std::min / std::max with `a < b`: the first argument on a tie.
        if x < smallest {
            smallest = x;
        }
        if biggest < x {
            biggest = x;
        }
        if !(x < pivot) {
            right -= 1;
            arg.swap(left as usize, right as usize);
        } else {
            left += 1;
        }
        i -= 1;
    }
    if left == right {
        return (left, smallest, biggest);
    }
    let load = |arg: &[usize], at: i64| -> (Idx, Keys) {
        let idx: Idx = std::array::from_fn(|l| arg[at as usize + l]);
        (idx, idx.map(|i| v[i]))
    };
    let mut seen = |keys: &Keys| {
        for &k in keys {
            smallest = smallest.min(k);
            biggest = biggest.max(k);
        }
    };
    let vec_left: Vec<(Idx, Keys)> = (0..UNROLL).map(|ii| load(arg, left + LANES as i64 * ii)).collect();
    let vec_right: Vec<(Idx, Keys)> = (0..UNROLL).map(|ii| load(arg, right - LANES as i64 * (UNROLL - ii))).collect();
    let mut r_store = right - LANES as i64;
    let mut l_store = left;
    left += BLOCK;
    right -= BLOCK;
    while right - left != 0 {
        let block: Vec<(Idx, Keys)> = if (r_store + LANES as i64) - right < left - l_store {
            right -= BLOCK;
            (0..UNROLL).map(|ii| load(arg, right + ii * LANES as i64)).collect()
        } else {
            let b = (0..UNROLL).map(|ii| load(arg, left + ii * LANES as i64)).collect();
            left += BLOCK;
            b
        };
        for (idx, keys) in block {
            seen(&keys);
            let ge = partition_vec(arg, l_store, r_store, idx, keys, pivot);
            l_store += LANES as i64 - ge;
            r_store -= ge;
        }
    }
    for (idx, keys) in vec_left.into_iter().chain(vec_right) {
        seen(&keys);
        let ge = partition_vec(arg, l_store, r_store, idx, keys, pivot);
        l_store += LANES as i64 - ge;
        r_store -= ge;
    }
    (l_store, smallest, biggest)
}

const SWAP2: [usize; 4] = [1, 0, 3, 2];
const SWAP4: [usize; 4] = [2, 3, 0, 1];
const REVERSE: [usize; 4] = [3, 2, 1, 0];

/// The key-value `cmp_merge`: each lane takes the max (mask bit set) or the min of itself and its
/// partner lane, and its partner's index unless the result equals its own key.
fn cmp_merge(k: &mut Keys, x: &mut Idx, partner: [usize; 4], mask: u8) {
    let (k0, x0) = (*k, *x);
    for l in 0..LANES {
        let (a, b) = (k0[l], k0[partner[l]]);
        // _mm256_max_pd(b, a) / _mm256_min_pd(b, a): on equal keys, a.
        let nk = if mask >> l & 1 == 1 { if b > a { b } else { a } } else if b < a { b } else { a };
        k[l] = nk;
        x[l] = if nk == a { x0[l] } else { x0[partner[l]] };
    }
}

fn sort_reg(k: &mut Keys, x: &mut Idx) {
    cmp_merge(k, x, SWAP2, 0xA);
    cmp_merge(k, x, REVERSE, 0xC);
    cmp_merge(k, x, SWAP2, 0xA);
}

fn bitonic_merge_reg(k: &mut Keys, x: &mut Idx) {
    cmp_merge(k, x, SWAP4, 0xC);
    cmp_merge(k, x, SWAP2, 0xA);
}

/// The two-register COEX: lane by lane, the smaller key to the first register; equal keys stay.
fn coex(keys: &mut [Keys], idx: &mut [Idx], a: usize, b: usize) {
    for l in 0..LANES {
        let (k1, k2) = (keys[a][l], keys[b][l]);
        // _mm256_min_pd(k1, k2) == k1: the indices stay.
        let min = if k1 < k2 { k1 } else { k2 };
        if min != k1 {
            keys[a][l] = k2;
            keys[b][l] = k1;
            let t = idx[a][l];
            idx[a][l] = idx[b][l];
            idx[b][l] = t;
        } else {
            keys[a][l] = min;
            keys[b][l] = if k1 > k2 { k1 } else { k2 };
        }
    }
}

fn reverse(keys: &mut Keys, idx: &mut Idx) {
    keys.reverse();
    idx.reverse();
}

/// `bitonic_merge_n_vec` over `keys[base..base + n]`.
fn bitonic_merge_n(keys: &mut [Keys], idx: &mut [Idx], base: usize, n: usize) {
    for i in 0..n / 2 {
        let j = base + n - i - 1;
        reverse(&mut keys[j], &mut idx[j]);
        coex(keys, idx, base + i, j);
        reverse(&mut keys[j], &mut idx[j]);
    }
    let mut num = n / 2;
    while num >= 2 {
        for j in (0..n).step_by(num) {
            for i in 0..num / 2 {
                coex(keys, idx, base + i + j, base + i + j + num / 2);
            }
        }
        num /= 2;
    }
    for i in base..base + n {
        bitonic_merge_reg(&mut keys[i], &mut idx[i]);
    }
}

/// `argsort_n<.., 256>`: at most 256 indices sorted by their keys with the bitonic networks.
fn argsort_n(v: &[f64], arg: &mut [usize]) {
    let n = arg.len();
    let mut num_vecs = 256 / LANES;
    while num_vecs > 1 && n * 2 <= num_vecs * LANES {
        num_vecs /= 2;
    }
    // Lanes past the end: key +inf, index u64::MAX (never stored back for finite keys).
    let mut keys: Vec<Keys> = (0..num_vecs).map(|i| std::array::from_fn(|l| arg.get(i * LANES + l).map_or(f64::INFINITY, |&a| v[a]))).collect();
    let mut idx: Vec<Idx> = (0..num_vecs).map(|i| std::array::from_fn(|l| arg.get(i * LANES + l).copied().unwrap_or(usize::MAX))).collect();
    for i in 0..num_vecs {
        sort_reg(&mut keys[i], &mut idx[i]);
    }
    let mut per = 2;
    while per <= num_vecs {
        for i in 0..num_vecs / per {
            bitonic_merge_n(&mut keys, &mut idx, i * per, per);
        }
        per *= 2;
    }
    for (p, a) in arg.iter_mut().enumerate() {
        *a = idx[p / LANES][p % LANES];
    }
}

#[cfg(test)]
mod tests {
    use super::super::sorts::test_values::{assert_permutation, SmallInts};
    use super::*;

    #[test]
    fn sorts_and_is_a_permutation() {
        let mut values = SmallInts(11);
        for n in [0, 1, 2, 3, 4, 5, 9, 16, 17, 63, 64, 65, 255, 256, 257, 300, 1000, 4097] {
            let v = values.take(n, 6);
            let idx = numpy_avx2_argsort(&v);
            assert!(idx.windows(2).all(|w| v[w[0]] <= v[w[1]]), "n={n}");
            assert_permutation(&idx, n);
        }
    }

    #[test]
    fn equal_keys_keep_their_place_in_a_register() {
        // Four equal keys: every compare-exchange keeps the indices where they are.
        assert_eq!(numpy_avx2_argsort(&[1.0; 4]), vec![0, 1, 2, 3]);
    }
}
