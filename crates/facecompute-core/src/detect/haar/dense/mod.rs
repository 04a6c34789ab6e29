//! The scan of a stump cascade, eight windows at once: the lattice origins of one scan row, eight
//! per AVX2 vector. Each lane computes exactly the values of `Cascade::run_at`'s scalar arithmetic
//! (no fused multiply-add), so the hits and their weights are bit-identical to the scalar scan,
//! which stays the reference and the fallback. Where the plan proves it exact, a value is computed
//! another way: feature values of integer-weighted features in i32 (`Shape`), stage sums as
//! integer counts of their leaves' unit (`Stage`).
//!
//! Why: the scalar scan spends about ten cycles per window and weak classifier, on twelve scattered
//! loads. Stored "planar" (each row's columns split by their phase modulo the scan step), one corner
//! of eight neighbouring origins is a single contiguous load. A vector keeps evaluating stages while
//! any of its lanes is alive: from the face cascade's fourth stage on, that is about 2.3 live lanes
//! of 8 (img5 and img6), yet 60% of all stump evaluations. Per stump the loop is bound by loads
//! (offsets, corners, constants), which is what the integer shapes and sums cut.
//!
//! With AVX-512F, `avx512` runs sixteen lanes while both halves of a vector have live lanes and
//! hands the one live half to this AVX2 code after that: a vector kept sixteen wide to the end
//! measured 8% slower on the AMD EPYC (Zen 5) we run on, as most of its lanes are dead in the late
//! stages and every unaligned 64-byte load splits across cache lines. Measurements and the scan's
//! roofline: docs/benchmarks.md, "Haar scan kernels".

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use crate::simd::Kernel;

/// Origins per AVX2 vector.
const LANES: usize = 8;

/// Origins per widest vector (AVX-512's sixteen). Every plane is padded by this many columns, and
/// `Level::new` checks rows rounded up to it, so that the last vector of a row reads inside the
/// buffer.
const PAD: usize = 16;

/// Where column `c` of integral row `r` lives: `r * stride + (c % step) * plane + c / step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub step: usize,
    pub plane: usize,
    pub stride: usize,
}

impl Layout {
    pub fn offset(&self, dx: usize, dy: usize) -> usize {
        // A mask and a shift for the steps 1 and 2, not two divisions: this runs for every corner
        // of every stump at every level (profiled at 5% of a detection with the divisions).
        debug_assert!(self.step == 1 || self.step == 2);
        let odd = self.step - 1;
        dy * self.stride + (dx & odd) * self.plane + (dx >> odd)
    }
}

/// Integral images of a `w` x `h` image (sum and sum of squares, `(w + 1) x (h + 1)` values, the
/// first row and column 0, wrapping like OpenCV's), stored planar for origins `step` apart
/// (`step` is 1 or 2, the steps OpenCV's scan uses).
pub(super) fn integrals_planar(
    img: &[u8],
    w: usize,
    h: usize,
    step: usize,
    kernel: Kernel,
    bufs: &mut PlanarBuffers,
) -> Layout {
    debug_assert!(step == 1 || step == 2);
    let cols = w + 1;
    let plane = cols.div_ceil(step) + PAD;
    let layout = Layout {
        step,
        plane,
        stride: plane * step,
    };
    let len = layout.stride * (h + 1);
    // Every value a valid lane reads is written below; the padding after each plane is read only
    // by lanes past the row's end, whose results are discarded, so it keeps whatever it held.
    bufs.sum.truncate(len);
    bufs.sum.resize(len, 0);
    bufs.sq.truncate(len);
    bufs.sq.resize(len, 0);
    bufs.sum[..cols.div_ceil(step)].fill(0);
    bufs.sq[..cols.div_ceil(step)].fill(0);
    if step == 2 {
        bufs.sum[plane..plane + cols / 2].fill(0);
        bufs.sq[plane..plane + cols / 2].fill(0);
    }
    for y in 0..h {
        let src = &img[y * w..(y + 1) * w];
        let (prev, cur) = bufs.sum.split_at_mut((y + 1) * layout.stride);
        let prev = &prev[y * layout.stride..];
        let (prev_q, cur_q) = bufs.sq.split_at_mut((y + 1) * layout.stride);
        let prev_q = &prev_q[y * layout.stride..];
        if step == 1 {
            cur[0] = 0;
            cur_q[0] = 0;
            super::pyramid::integral_row(
                kernel,
                src,
                &prev[1..],
                &mut cur[1..],
                &prev_q[1..],
                &mut cur_q[1..],
            );
        } else {
            integral_row_split(kernel, src, prev, cur, prev_q, cur_q, plane);
        }
    }
    layout
}

/// One integral row, stored in two planes (even columns, then odd ones from `plane` on): pixel
/// pair (2k, 2k + 1) ends columns 2k + 1 (odd plane, index k) and 2k + 2 (even plane, index k + 1).
fn integral_row_split(
    kernel: Kernel,
    src: &[u8],
    prev: &[i32],
    cur: &mut [i32],
    prev_q: &[u32],
    cur_q: &mut [u32],
    plane: usize,
) {
    let (pe, po) = prev.split_at(plane);
    let (ce, co) = cur.split_at_mut(plane);
    let (qpe, qpo) = prev_q.split_at(plane);
    let (qce, qco) = cur_q.split_at_mut(plane);
    ce[0] = 0;
    qce[0] = 0;
    let (mut done, mut s, mut q) = (0, 0i32, 0u32);
    #[cfg(target_arch = "x86_64")]
    if super::pyramid::use_avx2(kernel) {
        // SAFETY: AVX2 was detected at run time (`use_avx2`).
        (done, s, q) = unsafe { super::pyramid::avx2::integral_row_split(src, pe, po, ce, co, qpe, qpo, qce, qco) };
    }
    let _ = kernel;
    let pairs = src.chunks_exact(2);
    let tail = pairs.remainder();
    let n = pairs.len();
    for (k, pair) in pairs.enumerate().skip(done) {
        let (a, b) = (pair[0] as i32, pair[1] as i32);
        s = s.wrapping_add(a);
        q = q.wrapping_add((a * a) as u32);
        co[k] = po[k].wrapping_add(s);
        qco[k] = qpo[k].wrapping_add(q);
        s = s.wrapping_add(b);
        q = q.wrapping_add((b * b) as u32);
        ce[k + 1] = pe[k + 1].wrapping_add(s);
        qce[k + 1] = qpe[k + 1].wrapping_add(q);
    }
    if let [a] = tail {
        let a = *a as i32;
        s = s.wrapping_add(a);
        q = q.wrapping_add((a * a) as u32);
        co[n] = po[n].wrapping_add(s);
        qco[n] = qpo[n].wrapping_add(q);
    }
}

/// The dense scan's integral images and working rows, kept between levels and calls.
#[derive(Default)]
pub(super) struct PlanarBuffers {
    pub sum: Vec<i32>,
    pub sq: Vec<u32>,
}

/// A single-split weak classifier with its feature's corners as planar offsets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stump {
    /// For `Shape::Two` and `Shape::Three`, four corners (a - b - c + d) per rectangle, three
    /// rectangles (an unused third rectangle has weight 0 and four equal offsets); for the other
    /// shapes, the distinct corners in the order their formula reads them.
    pub ofs: [u32; 12],
    pub weight: [f32; 3],
    pub threshold: f32,
    pub left: f32,
    pub right: f32,
    /// With integer sums, what choosing `left` adds to the stage's two counters (see `Stage`).
    pub delta: [i32; 2],
}

/// How a stump's feature value `ret` is computed. OpenCV computes
/// `ret = (w0 * r0 + w1 * r1) + w2 * r2` in f32 from the rectangles' integer sums. Where the
/// weights are integers and no partial result can reach 2^24, every one of those f32 operations is
/// exact, so `ret` is the integer `sum of weight * corner value` over the feature's distinct
/// corners, which wrapping i32 arithmetic gets exactly (the true value fits). The shipped cascades'
/// features come in three such shapes (by the multiset of corner coefficients): fewer loads and no
/// float products per stump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// Coefficients +1 +1 -1 -1 +3 +3 -3 -3 (a rectangle less three times its middle third):
    /// `(c0 + c1 - c2 - c3) + 3 * (c4 + c5 - c6 - c7)`.
    Thirds,
    /// +1 +1 -1 -1 +2 -2 (a rectangle less twice one half): `(c0 + c1 - c2 - c3) + 2 * (c4 - c5)`.
    Halves,
    /// +1 x4 -2 x4 +4 (a rectangle less twice two diagonal quarters):
    /// `(c0 + c1 + c2 + c3) - 2 * (c4 + c5 + c6 + c7) + 4 * c8`.
    Quarters,
    /// The negation of `Quarters` (the other diagonal).
    QuartersNeg,
    /// Anything else, with a third rectangle of weight 0: OpenCV's f32 arithmetic, two rectangles.
    Two,
    /// Anything else: OpenCV's f32 arithmetic on all three rectangles.
    Three,
}

pub(super) const SHAPES: [Shape; 6] = [
    Shape::Thirds,
    Shape::Halves,
    Shape::Quarters,
    Shape::QuartersNeg,
    Shape::Two,
    Shape::Three,
];

/// A stage's stumps, grouped by `Shape` in the order of `SHAPES`: `count[k]` of shape
/// `SHAPES[k]`. Where a stage's sum depends on the order of its terms, all its stumps are
/// `Shape::Three`, in the cascade's order.
///
/// With integer sums (`Level::ints`), a window's stage sum is kept as two i32 counters that start
/// at `int_base` and gain the `delta` of each stump that chooses its left leaf; the sum is
/// `high * int_units[0] + low * int_units[1]`, exactly (the plan checks that nothing overflows and
/// that the sum is the exact sum of the leaves, which is what the scalar scan's f64 sum is).
#[derive(Clone, Copy, Debug)]
pub(super) struct Stage {
    pub first: usize,
    pub count: [usize; 6],
    pub threshold: f64,
    pub int_base: [i32; 2],
    pub int_units: [f64; 2],
}

impl Stage {
    pub fn end(&self) -> usize {
        self.first + self.count.iter().sum::<usize>()
    }
}

/// One pyramid level, ready for the kernels.
pub(super) struct Level<'a> {
    sum: &'a [i32],
    sq: &'a [u32],
    /// Corners of the variance rectangle, as planar offsets.
    nofs: [u32; 4],
    area: f64,
    flat_nf: f64,
    stumps: &'a [Stump],
    stages: &'a [Stage],
    /// Stage sums as integer counters (see `Stage`) rather than in f64.
    ints: bool,
}

impl<'a> Level<'a> {
    /// Checks once what the kernels rely on for every load: that rows `0..rows` of origins, `per_row`
    /// origins each (rounded up to whole vectors), plus the largest offset, stay inside the buffers.
    /// `None` means "use the scalar scan" and would be a bug in the caller's layout.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sum: &'a [i32],
        sq: &'a [u32],
        layout: Layout,
        rows: usize,
        per_row: usize,
        nofs: [u32; 4],
        norm_area: f64,
        stumps: &'a [Stump],
        stages: &'a [Stage],
        ints: bool,
    ) -> Option<Self> {
        let max_ofs = stumps.iter().flat_map(|s| s.ofs).chain(nofs).max()? as usize;
        let last = rows.checked_sub(1)? * layout.stride + per_row.div_ceil(PAD) * PAD
            - 1
            + max_ofs;
        let fits = last < sum.len() && sum.len() == sq.len();
        // The AVX2 kernel converts the variance rectangle's sum of squares as a signed integer.
        let sq_fits = norm_area * 255.0 * 255.0 < i32::MAX as f64;
        let stages_ok = stages.iter().all(|s| s.end() <= stumps.len()) && !stages.is_empty();
        (fits && sq_fits && stages_ok).then_some(Self {
            sum,
            sq,
            nofs,
            area: norm_area,
            flat_nf: super::flat_nf(norm_area),
            stumps,
            stages,
            ints,
        })
    }
}

/// Whether the dense scan runs for `kernel`, the instruction set chosen for the process: any x86
/// choice with AVX2.
pub(super) fn supports(kernel: Kernel) -> bool {
    matches!(kernel, Kernel::Avx512 | Kernel::Avx2) && Kernel::Avx2.is_supported()
}

/// Which kernel `scan_row` runs for `kernel`: sixteen lanes with AVX-512F, eight with AVX2, or
/// none (the scalar scan).
pub(super) fn scan_kernel(kernel: Kernel) -> Kernel {
    match kernel {
        Kernel::Avx512 if Kernel::Avx512.is_supported() && supports(kernel) => Kernel::Avx512,
        Kernel::Avx512 | Kernel::Avx2 if supports(kernel) => Kernel::Avx2,
        _ => Kernel::Scalar,
    }
}

/// Scans `n` origins, `base`, `base + 1`, ... of one row (planar indices, `step` pixels apart), with
/// OpenCV's rule that the origin after one rejected by the first stage is not evaluated. Appends
/// `(origin index, last-stage sum)` for every window that passes all stages, in scan order.
/// `base` is a multiple of the layout's stride, below `rows * stride` of the `Level`.
pub(super) fn scan_row(
    kernel: Kernel,
    level: &Level,
    base: usize,
    n: usize,
    hits: &mut Vec<(u32, f64)>,
) {
    let chosen = scan_kernel(kernel);
    assert!(chosen != Kernel::Scalar, "dense Haar scan without AVX2; callers check `supports`");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the instruction set was detected at run time (`scan_kernel`); `Level::new` checked the
    // extent of every load for origins below its row and vector counts (rounded up to `PAD`), and
    // the caller stays within them.
    unsafe {
        if chosen == Kernel::Avx512 {
            avx512::scan_row(level, base, n, hits)
        } else {
            avx2::scan_row(level, base, n, hits)
        }
    }
}

/// OpenCV's skip rule over one vector of origins: which lanes are evaluated at all, given which
/// are normalisable (`nonflat`) and which of those fail the first stage. `skip` carries "the
/// previous origin failed the first stage" from one vector to the next. Returns the lanes that go
/// on to the second stage. By table rather than lane by lane: the loop's data-dependent branches
/// mispredicted often.
#[inline(always)]
fn walk(lanes: usize, nonflat: u32, fail0: u32, skip: &mut bool) -> u32 {
    let e = SKIPPED[(*skip as usize) << LANES | (nonflat & fail0 & 0xff) as usize] as u32;
    // Past the last lane nothing fails, so lane `lanes` is skipped exactly when it would carry.
    *skip = e >> lanes & 1 != 0;
    nonflat & !fail0 & !e & ((1 << lanes) - 1)
}

/// For "the lane before the first failed" (bit 8 of the index) and which lanes fail the first
/// stage (bits 0-7), the lanes OpenCV skips (bits 0-7) and whether the next vector's first lane is
/// skipped (bit 8).
const SKIPPED: [u16; 512] = skipped_table();

const fn skipped_table() -> [u16; 512] {
    let mut t = [0u16; 512];
    let mut e = 0;
    while e < 512 {
        let mut skip = e >> LANES == 1;
        let mut out = 0u16;
        let mut i = 0;
        while i <= LANES {
            if skip {
                skip = false;
                out |= 1 << i;
            } else if i < LANES && e >> i & 1 == 1 {
                skip = true;
            }
            i += 1;
        }
        t[e] = out;
        e += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planar_integrals_hold_the_row_major_values() {
        let (w, h) = (13usize, 5usize);
        let img: Vec<u8> = (0..w * h).map(|i| (i * 37 % 256) as u8).collect();
        let (mut s1, mut q1) = (Vec::new(), Vec::new());
        super::super::pyramid::integrals(&img, w, h, &mut s1, &mut q1);
        for (step, kernel) in [1, 2].into_iter().flat_map(|s| Kernel::supported().into_iter().map(move |k| (s, k))) {
            let mut bufs = PlanarBuffers::default();
            // Stale values from a larger image must not leak into the valid region.
            bufs.sum = vec![-7; 10_000];
            bufs.sq = vec![7; 10_000];
            let layout = integrals_planar(&img, w, h, step, kernel, &mut bufs);
            let (s2, q2) = (&bufs.sum, &bufs.sq);
            for y in 0..=h {
                for x in 0..=w {
                    let i = layout.offset(x, y);
                    assert_eq!(
                        (s2[i], q2[i]),
                        (s1[y * (w + 1) + x], q1[y * (w + 1) + x]),
                        "step {step} at ({x}, {y})"
                    );
                }
            }
        }
    }

    /// The rule lane by lane, as OpenCV's loop applies it.
    fn walk_lanes(lanes: usize, nonflat: u32, fail0: u32, skip: &mut bool) -> u32 {
        let mut live = 0u32;
        for i in 0..lanes {
            if *skip {
                *skip = false;
                continue;
            }
            let bit = 1u32 << i;
            if nonflat & bit != 0 {
                if fail0 & bit != 0 {
                    *skip = true;
                } else {
                    live |= bit;
                }
            }
        }
        live
    }

    #[test]
    fn walk_by_table_is_the_lane_by_lane_rule() {
        for lanes in 1..=LANES {
            let valid = (1u32 << lanes) - 1;
            for carry in [false, true] {
                for nonflat in 0..=valid {
                    for fail0 in 0..256u32 {
                        let (mut a, mut b) = (carry, carry);
                        let live = walk(lanes, nonflat, fail0, &mut a);
                        assert_eq!(live, walk_lanes(lanes, nonflat, fail0, &mut b));
                        assert_eq!(a, b, "carry after {lanes} lanes {nonflat:#b} {fail0:#b} from {carry}");
                    }
                }
            }
        }
    }

    #[test]
    fn simd_planar_integrals_equal_scalar_for_every_width() {
        // Widths 1..50 cover every tail of the sixteen-pixel (eight-pair) step, odd and even.
        for w in 1..50usize {
            let h = 3;
            let img: Vec<u8> = (0..w * h).map(|i| (i * 193 + w * 7) as u8).collect();
            for step in [1, 2] {
                let mut reference = PlanarBuffers::default();
                let l0 = integrals_planar(&img, w, h, step, Kernel::Scalar, &mut reference);
                for kernel in Kernel::supported() {
                    let mut bufs = PlanarBuffers::default();
                    let l1 = integrals_planar(&img, w, h, step, kernel, &mut bufs);
                    assert_eq!(l1, l0);
                    for y in 0..=h {
                        for x in 0..=w {
                            let i = l0.offset(x, y);
                            assert_eq!((bufs.sum[i], bufs.sq[i]), (reference.sum[i], reference.sq[i]), "{kernel:?} step {step} w {w} at ({x}, {y})");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn walk_skips_the_origin_after_a_first_stage_failure() {
        let mut skip = false;
        // Lane 0 flat (evaluated, no skip), lane 1 fails stage 0, lane 2 skipped, lane 3 passes.
        assert_eq!(walk(4, 0b1110, 0b0110, &mut skip), 0b1000);
        assert!(!skip);
        // A failure in the last lane skips the first lane of the next vector.
        assert_eq!(walk(2, 0b11, 0b10, &mut skip), 0b01);
        assert!(skip);
        assert_eq!(walk(2, 0b11, 0b00, &mut skip), 0b10);
        assert!(!skip);
    }
}
