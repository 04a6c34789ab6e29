//! The sorts the MTCNN references order their candidates with. Candidates with equal
//! scores are common (PNet's softmax saturates in float32), and which of two tied, overlapping boxes
//! survives non-maximum suppression depends on where the sort left them, so the order of ties is
//! reproduced, not just the order of values:
//! - numpy's `argsort` (default kind): introsort over an index array, median-of-3 pivot, insertion
//!   sort up to 16 elements, heapsort past a depth of 2·⌊log2 n⌋ (numpy/core/src/npysort
//!   `aquicksort_`): what numpy 1.26 does on a CPU without AVX-512, as in facenet-pytorch's reference.
//!   numpy 2.x hands argsort to x86-simd-sort instead, which mtcnn 1.0.0 (numpy 2.1) sorts with:
//!   `xss_argsort.rs`;
//! - libstdc++'s `std::sort` on (key, index) pairs with a descending comparator: what
//!   `torch.sort(descending=True)` does on the CPU in torch 2.2 (torchvision's per-class batched_nms
//!   re-sorts its kept boxes with it);
//! - torch's stable descending sort, which torchvision 0.17's CPU `nms` kernel sorts its scores with.
//!
//! NaN sorts last in numpy's and first in torch's descending sorts, as in the originals.

/// numpy's `less` for floats: NaN after everything.
#[inline]
fn np_less(a: f64, b: f64) -> bool {
    a < b || (b.is_nan() && !a.is_nan())
}

const SMALL_QUICKSORT: usize = 15;

/// `np.argsort(v)` (kind='quicksort'), as indices into `v`.
pub fn numpy_argsort(v: &[f64]) -> Vec<usize> {
    let n = v.len();
    let mut idx: Vec<usize> = (0..n).collect();
    if n < 2 {
        return idx;
    }
    let less = |a: usize, b: usize| np_less(v[a], v[b]);
    let mut stack: Vec<(usize, usize, i32)> = Vec::new();
    let (mut pl, mut pr) = (0usize, n - 1);
    let mut cdepth = 2 * (usize::BITS - 1 - n.leading_zeros()) as i32;
    loop {
        if cdepth < 0 {
            heapsort(&mut idx[pl..=pr], &less);
        } else {
            while pr - pl > SMALL_QUICKSORT {
                let pm = pl + ((pr - pl) >> 1);
                if less(idx[pm], idx[pl]) {
                    idx.swap(pm, pl);
                }
                if less(idx[pr], idx[pm]) {
                    idx.swap(pr, pm);
                }
                if less(idx[pm], idx[pl]) {
                    idx.swap(pm, pl);
                }
                let vp = v[idx[pm]];
                let mut pi = pl;
                let mut pj = pr - 1;
                idx.swap(pm, pj);
                loop {
                    loop {
                        pi += 1;
                        if !np_less(v[idx[pi]], vp) {
                            break;
                        }
                    }
                    loop {
                        pj -= 1;
                        if !np_less(vp, v[idx[pj]]) {
                            break;
                        }
                    }
                    if pi >= pj {
                        break;
                    }
                    idx.swap(pi, pj);
                }
                let pk = pr - 1;
                idx.swap(pi, pk);
                cdepth -= 1;
                // The larger part waits on the stack; the smaller is sorted next.
                if pi - pl < pr - pi {
                    stack.push((pi + 1, pr, cdepth));
                    pr = pi - 1;
                } else {
                    stack.push((pl, pi - 1, cdepth));
                    pl = pi + 1;
                }
            }
            for i in pl + 1..=pr {
                let vi = idx[i];
                let mut j = i;
                while j > pl && less(vi, idx[j - 1]) {
                    idx[j] = idx[j - 1];
                    j -= 1;
                }
                idx[j] = vi;
            }
        }
        match stack.pop() {
            None => break,
            Some((l, r, d)) => {
                pl = l;
                pr = r;
                cdepth = d;
            }
        }
    }
    idx
}

/// numpy's `aheapsort_` on a slice of indices (1-based sift-down, as numpy writes it).
fn heapsort(a: &mut [usize], less: &impl Fn(usize, usize) -> bool) {
    let n = a.len();
    if n < 2 {
        return;
    }
    // numpy indexes the heap from 1: a[k - 1] here is its a[k].
    let sift = |a: &mut [usize], mut i: usize, n: usize| {
        let tmp = a[i - 1];
        let mut j = i * 2;
        while j <= n {
            if j < n && less(a[j - 1], a[j]) {
                j += 1;
            }
            if less(tmp, a[j - 1]) {
                a[i - 1] = a[j - 1];
                i = j;
                j += j;
            } else {
                break;
            }
        }
        a[i - 1] = tmp;
    };
    for l in (1..=n / 2).rev() {
        sift(a, l, n);
    }
    let mut m = n;
    while m > 1 {
        a.swap(0, m - 1);
        m -= 1;
        sift(a, 1, m);
    }
}

/// `torch.sort(v, stable=True, descending=True)`'s indices: descending, ties in index order, NaN
/// first (torch orders NaN above every number). torchvision's CPU `nms` sorts its scores this way.
pub fn torch_stable_sort_desc(v: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| match (v[a].is_nan(), v[b].is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => v[b].partial_cmp(&v[a]).expect("not NaN"),
    });
    idx
}

/// `std::sort` (libstdc++ introsort) of the pairs (v[i], i) with torch's descending comparator;
/// returns the indices in their sorted order (the second output of `torch.sort(descending=True)`).
pub fn torch_sort_desc(v: &[f32]) -> Vec<usize> {
    let mut a: Vec<(f32, usize)> = v.iter().copied().zip(0..).collect();
    let comp = |x: &(f32, usize), y: &(f32, usize)| (x.0.is_nan() && !y.0.is_nan()) || x.0 > y.0;
    std_sort(&mut a, &comp);
    a.into_iter().map(|p| p.1).collect()
}

/// libstdc++'s `std::sort(first, last, comp)`: introsort, median-of-3 pivot moved to the front,
/// heapsort past 2·⌊log2 n⌋ levels, then one insertion sort (16 guarded, the rest unguarded).
pub(super) fn std_sort<T: Copy>(a: &mut [T], comp: &impl Fn(&T, &T) -> bool) {
    let n = a.len();
    if n > 1 {
        let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as i32;
        introsort_loop(a, 0, n, depth, comp);
        final_insertion_sort(a, comp);
    }
}

const THRESHOLD: usize = 16;

fn introsort_loop<T: Copy>(a: &mut [T], first: usize, mut last: usize, mut depth: i32, comp: &impl Fn(&T, &T) -> bool) {
    while last - first > THRESHOLD {
        if depth == 0 {
            // std::partial_sort(first, last, last): make_heap then sort_heap.
            heap_sort_range(&mut a[first..last], comp);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(a, first, last, comp);
        introsort_loop(a, cut, last, depth, comp);
        last = cut;
    }
}

fn partition_pivot<T: Copy>(a: &mut [T], first: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(a, first, first + 1, mid, last - 1, comp);
    // Unguarded partition of [first + 1, last) around a[first].
    let (mut lo, mut hi) = (first + 1, last);
    loop {
        while comp(&a[lo], &a[first]) {
            lo += 1;
        }
        hi -= 1;
        while comp(&a[first], &a[hi]) {
            hi -= 1;
        }
        if lo >= hi {
            return lo;
        }
        a.swap(lo, hi);
        lo += 1;
    }
}

fn move_median_to_first<T: Copy>(a: &mut [T], result: usize, x: usize, y: usize, z: usize, comp: &impl Fn(&T, &T) -> bool) {
    let pick = if comp(&a[x], &a[y]) {
        if comp(&a[y], &a[z]) {
            y
        } else if comp(&a[x], &a[z]) {
            z
        } else {
            x
        }
    } else if comp(&a[x], &a[z]) {
        x
    } else if comp(&a[y], &a[z]) {
        z
    } else {
        y
    };
    a.swap(result, pick);
}

fn final_insertion_sort<T: Copy>(a: &mut [T], comp: &impl Fn(&T, &T) -> bool) {
    let n = a.len();
    if n > THRESHOLD {
        insertion_sort(&mut a[..THRESHOLD], comp);
        for i in THRESHOLD..n {
            unguarded_linear_insert(a, i, comp);
        }
    } else {
        insertion_sort(a, comp);
    }
}

fn insertion_sort<T: Copy>(a: &mut [T], comp: &impl Fn(&T, &T) -> bool) {
    for i in 1..a.len() {
        if comp(&a[i], &a[0]) {
            let val = a[i];
            a.copy_within(0..i, 1);
            a[0] = val;
        } else {
            unguarded_linear_insert(a, i, comp);
        }
    }
}

fn unguarded_linear_insert<T: Copy>(a: &mut [T], i: usize, comp: &impl Fn(&T, &T) -> bool) {
    let val = a[i];
    let mut j = i;
    while comp(&val, &a[j - 1]) {
        a[j] = a[j - 1];
        j -= 1;
    }
    a[j] = val;
}

/// libstdc++ `__make_heap` + `__sort_heap` (the `__adjust_heap`/`__push_heap` pair).
fn heap_sort_range<T: Copy>(a: &mut [T], comp: &impl Fn(&T, &T) -> bool) {
    let len = a.len();
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let v = a[parent];
        adjust_heap(a, parent, len, v, comp);
        if parent == 0 {
            break;
        }
        parent -= 1;
    }
    let mut last = len;
    while last > 1 {
        last -= 1;
        let v = a[last];
        a[last] = a[0];
        adjust_heap(a, 0, last, v, comp);
    }
}

fn adjust_heap<T: Copy>(a: &mut [T], mut hole: usize, len: usize, value: T, comp: &impl Fn(&T, &T) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if comp(&a[child], &a[child - 1]) {
            child -= 1;
        }
        a[hole] = a[child];
        hole = child;
    }
    if len % 2 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        a[hole] = a[child - 1];
        hole = child - 1;
    }
    // __push_heap
    let mut parent = if hole > 0 { (hole - 1) / 2 } else { 0 };
    while hole > top && comp(&a[parent], &value) {
        a[hole] = a[parent];
        hole = parent;
        parent = if hole > 0 { (hole - 1) / 2 } else { 0 };
    }
    a[hole] = value;
}

/// Inputs and checks the sort tests here and in xss_argsort.rs share.
#[cfg(test)]
pub(super) mod test_values {
    /// Seeded small integers from a 64-bit LCG: arrays heavy in ties. The state runs on across calls.
    pub struct SmallInts(pub u64);

    impl SmallInts {
        pub fn take(&mut self, n: usize, distinct: u64) -> Vec<f64> {
            (0..n)
                .map(|_| {
                    self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((self.0 >> 33) % distinct) as f64
                })
                .collect()
        }
    }

    /// `idx` holds each of 0..n once.
    pub fn assert_permutation(idx: &[usize], n: usize) {
        let mut s = idx.to_vec();
        s.sort();
        assert_eq!(s, (0..n).collect::<Vec<_>>(), "n={n}");
    }
}

#[cfg(test)]
mod tests {
    use super::test_values::{assert_permutation, SmallInts};
    use super::*;

    fn is_sorted_by(idx: &[usize], v: &[f64]) -> bool {
        idx.windows(2).all(|w| !np_less(v[w[1]], v[w[0]]))
    }

    #[test]
    fn numpy_argsort_sorts_and_is_a_permutation() {
        let mut values = SmallInts(7);
        for n in [0, 1, 2, 5, 16, 17, 40, 1000] {
            let v = values.take(n, 7);
            let idx = numpy_argsort(&v);
            assert!(is_sorted_by(&idx, &v), "n={n}");
            assert_permutation(&idx, n);
        }
    }

    #[test]
    fn torch_sort_desc_sorts_and_is_a_permutation() {
        let mut values = SmallInts(3);
        for n in [0, 1, 2, 16, 17, 100, 3000] {
            let v: Vec<f32> = values.take(n, 5).into_iter().map(|x| x as f32).collect();
            let idx = torch_sort_desc(&v);
            assert!(idx.windows(2).all(|w| v[w[0]] >= v[w[1]]), "n={n}");
            assert_permutation(&idx, n);
        }
    }

    #[test]
    fn nan_sorts_last_and_heapsort_fallback_sorts() {
        let v = [1.0, f64::NAN, 0.5];
        assert_eq!(numpy_argsort(&v), vec![2, 0, 1]);
        let mut idx: Vec<usize> = (0..50).collect();
        let w: Vec<f64> = (0..50).map(|i| ((i * 37) % 11) as f64).collect();
        heapsort(&mut idx, &|a, b| np_less(w[a], w[b]));
        assert!(is_sorted_by(&idx, &w));
    }
}
