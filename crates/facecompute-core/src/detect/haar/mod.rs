//! OpenCV's Haar cascade classifier (`cv::CascadeClassifier`, objdetect/cascadedetect.cpp of OpenCV
//! 4.x), reproduced to give the same boxes, reject levels and level weights as opencv-python:
//! the same scale list, pyramid resize, integral images, variance normalisation, float arithmetic
//! and candidate order, then OpenCV's `groupRectangles`.

mod dense;
mod group;
mod pyramid;
mod workers;
mod xml;

use crate::error::{CoreError, CoreResult};
use crate::simd::Kernel;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use pyramid::{bgr_to_gray_cascade, resize_linear_exact_cascade, resize_linear_exact_cascade_roi, Roi};

/// What one detection's face scan evaluates (see [`Cascade::scan_work`]): the inputs of the
/// scan's roofline in docs/benchmarks.md.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScanWork {
    /// Window origins evaluated (OpenCV's skip after a first-stage failure left out).
    pub windows: u64,
    /// Of those, windows that pass the variance test and run stage 0.
    pub normalised: u64,
    /// Weak classifiers (stumps) evaluated over all windows.
    pub stumps: u64,
    /// Integral-image values read by those stumps (four per rectangle, OpenCV's way).
    pub corner_reads: u64,
    /// Bytes of the integral images built (sum and squared sum, every level).
    pub integral_bytes: u64,
}

impl ScanWork {
    fn add(&mut self, c: &Cascade, e: &Eval, p: usize, result: i32) {
        self.windows += 1;
        let nf = e.area * rect_sum_u(e.sq, p, &e.nofs) as f64 - (rect_sum(e.sum, p, &e.nofs) as f64).powi(2);
        if !(nf >= e.flat_nf) || !(e.area * ((1.0 / nf.sqrt()) as f32 as f64) < 1e-1) {
            return;
        }
        self.normalised += 1;
        // `run_at` returns 1 past the last stage, else -(the stage that failed).
        let last = if result == 1 { c.stages.len() - 1 } else { (-result) as usize };
        let Some(stumps) = &c.stumps else { return };
        for st in &c.stages[..=last] {
            for sp in &stumps[st.first as usize..(st.first + st.count) as usize] {
                let rects = c.features[sp.feature as usize].rects.iter().filter(|r| r.weight != 0.0).count();
                self.stumps += 1;
                self.corner_reads += 4 * rects as u64;
            }
        }
    }
}

thread_local! {
    /// Set only by `Cascade::scan_work`, on its own thread: the scalar scan counts into it.
    static WORK: std::cell::RefCell<Option<ScanWork>> = const { std::cell::RefCell::new(None) };
}

/// The Haar scan that runs for `kernel` (the process's choice is `Kernel::best()`): `Avx512`
/// (sixteen lanes), `Avx2` (eight) or `Scalar`. What benchmarks report as the kernel that ran.
pub fn scan_kernel(kernel: Kernel) -> Kernel {
    dense::scan_kernel(kernel)
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HaarRect {
    x: i32,
    y: i32,
    w: i32,
    h: i32,
    weight: f32,
}

#[derive(Clone, Debug)]
pub(crate) struct Feature {
    rects: [HaarRect; 3],
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    feature: u32,
    threshold: f32,
    left: i32,
    right: i32,
}

#[derive(Clone, Debug)]
pub(crate) struct Weak {
    node_ofs: u32,
    leaf_ofs: u32,
    node_count: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct Stage {
    first: u32,
    count: u32,
    threshold: f32,
}

#[derive(Clone, Debug)]
struct Stump {
    feature: u32,
    threshold: f32,
    left: f32,
    right: f32,
}

/// A parsed cascade. Immutable and `Sync`: one instance serves concurrent detections.
#[derive(Clone, Debug)]
pub struct Cascade {
    win_w: i32,
    win_h: i32,
    features: Vec<Feature>,
    stages: Vec<Stage>,
    weaks: Vec<Weak>,
    nodes: Vec<Node>,
    leaves: Vec<f32>,
    /// Set when every tree is a single split, OpenCV's `predictOrderedStump` path.
    stumps: Option<Vec<Stump>>,
    /// The dense scan's order of evaluation, fixed per cascade; `None` without stumps. It may
    /// reorder a stage's stumps only when `leaf_sums_exact` holds.
    dense_plan: Option<DensePlan>,
}

/// Per stage, which stumps the dense scan evaluates, in order, and how (`dense::Shape`): where the
/// order of a stage's terms cannot change its sum, its stumps are grouped by shape, the integer
/// shapes first, then two-rectangle stumps (the third rectangle, of weight 0, adds +-0, which no
/// comparison sees); otherwise every stump in the cascade's order, with all three rectangles.
/// Where the sums are exact and small enough, the stage sums are also counted in integers (see
/// `IntSums`).
#[derive(Clone, Debug)]
struct DensePlan {
    /// Indices into `Cascade::stumps`.
    order: Vec<u32>,
    /// Per stump of `order`, the window points whose integral values it reads, as
    /// `dense::Stump::ofs` lists them.
    points: Vec<[(u16, u16); 12]>,
    stages: Vec<dense::Stage>,
    /// Per stump of `order`, `dense::Stump::delta`; empty when the sums stay in f64.
    deltas: Vec<[i32; 2]>,
    /// Per scan step (1 and 2), the level's stumps with everything but the corners' offsets, which
    /// depend on the level's plane width: a point (dx, dy) lies at `plane * row + col` (see
    /// `Layout::offset`), and `ofs` holds `row`, `cols` holds `col`.
    templates: [Vec<dense::Stump>; 2],
    cols: [Vec<[u16; 12]>; 2],
}

impl DensePlan {
    /// Fills `out` with the stumps of a level of `layout`.
    fn stumps_for(&self, layout: &dense::Layout, out: &mut Vec<dense::Stump>) {
        let k = layout.step - 1;
        out.clear();
        out.extend_from_slice(&self.templates[k]);
        let plane = layout.plane as u32;
        for (sp, cols) in out.iter_mut().zip(&self.cols[k]) {
            for (o, &c) in sp.ofs.iter_mut().zip(cols) {
                *o = *o * plane + c as u32;
            }
        }
    }
}

fn dense_plan(features: &[Feature], stages: &[Stage], stumps: Option<&[Stump]>, order_free: bool) -> Option<DensePlan> {
    let stumps = stumps?;
    let mut plan = DensePlan {
        order: Vec::with_capacity(stumps.len()),
        points: Vec::new(),
        stages: Vec::with_capacity(stages.len()),
        deltas: Vec::new(),
        templates: [Vec::new(), Vec::new()],
        cols: [Vec::new(), Vec::new()],
    };
    let mut ints = Vec::with_capacity(stages.len());
    for st in stages {
        let first = plan.order.len();
        let mut own: Vec<(usize, u32, [(u16, u16); 12])> = (st.first..st.first + st.count)
            .map(|i| {
                let f = &features[stumps[i as usize].feature as usize];
                let (shape, points) = if order_free { shape_of(f) } else { (dense::Shape::Three, rect_points(f)) };
                (dense::SHAPES.iter().position(|s| *s == shape).unwrap_or(dense::SHAPES.len() - 1), i, points)
            })
            .collect();
        // Stable: within a shape, the cascade's order.
        own.sort_by_key(|o| o.0);
        let mut count = [0usize; 6];
        for (k, i, points) in own {
            count[k] += 1;
            plan.order.push(i);
            plan.points.push(points);
        }
        let leaves: Vec<(f32, f32)> = plan.order[first..].iter().map(|&i| (stumps[i as usize].left, stumps[i as usize].right)).collect();
        ints.push(if order_free { IntSums::new(&leaves) } else { None });
        plan.stages.push(dense::Stage { first, count, threshold: st.threshold as f64, int_base: [0; 2], int_units: [0.0; 2] });
    }
    // One kernel per level: integers for every stage or for none.
    if let Some(ints) = ints.into_iter().collect::<Option<Vec<IntSums>>>() {
        for (st, int) in plan.stages.iter_mut().zip(ints) {
            st.int_base = int.base;
            st.int_units = int.units;
            plan.deltas.extend(int.deltas);
        }
    }
    for step in [1usize, 2] {
        let odd = step - 1;
        let mut templates = Vec::with_capacity(plan.order.len());
        let mut cols = Vec::with_capacity(plan.order.len());
        for (k, (&i, points)) in plan.order.iter().zip(&plan.points).enumerate() {
            let sp = &stumps[i as usize];
            let f = &features[sp.feature as usize];
            let ofs = points.map(|(dx, dy)| (dy as usize * step + (dx as usize & odd)) as u32);
            cols.push(points.map(|(dx, _)| dx >> odd));
            let delta = plan.deltas.get(k).copied().unwrap_or_default();
            templates.push(dense::Stump { ofs, weight: f.rects.map(|r| r.weight), threshold: sp.threshold, left: sp.left, right: sp.right, delta });
        }
        plan.templates[odd] = templates;
        plan.cols[odd] = cols;
    }
    Some(plan)
}

/// The four corners (a, b, c, d: `a - b - c + d`) of each of a feature's three rectangles.
fn rect_points(f: &Feature) -> [(u16, u16); 12] {
    let mut out = [(0u16, 0u16); 12];
    for (k, r) in f.rects.iter().enumerate() {
        let (x, y, x1, y1) = (r.x as u16, r.y as u16, (r.x + r.w) as u16, (r.y + r.h) as u16);
        out[k * 4..k * 4 + 4].copy_from_slice(&[(x, y), (x1, y), (x, y1), (x1, y1)]);
    }
    out
}

/// Which `dense::Shape` computes a feature, with the points it reads. An integer shape needs
/// integer weights and `sum of |weight| * area * 255` below 2^24: then every f32 operation of
/// OpenCV's `ret` is exact (see `dense::Shape`).
fn shape_of(f: &Feature) -> (dense::Shape, [(u16, u16); 12]) {
    use dense::Shape;
    let fallback = (if f.rects[2].weight == 0.0 { Shape::Two } else { Shape::Three }, rect_points(f));
    let integral = f.rects.iter().all(|r| r.weight.fract() == 0.0 && r.weight.abs() <= 16.0);
    let bound: f64 = f.rects.iter().map(|r| (r.weight.abs() as f64) * (r.w as f64) * (r.h as f64) * 255.0).sum();
    if !integral || bound >= (1 << 24) as f64 {
        return fallback;
    }
    // Each corner's coefficient in `sum of weight * (a - b - c + d)`.
    let mut coef: Vec<((u16, u16), i32)> = Vec::with_capacity(12);
    let pts = rect_points(f);
    for (k, r) in f.rects.iter().enumerate() {
        let w = r.weight as i32;
        for (j, sign) in [1, -1, -1, 1].into_iter().enumerate() {
            let p = pts[k * 4 + j];
            match coef.iter_mut().find(|c| c.0 == p) {
                Some(c) => c.1 += sign * w,
                None => coef.push((p, sign * w)),
            }
        }
    }
    coef.retain(|c| c.1 != 0);
    let mut sorted: Vec<i32> = coef.iter().map(|c| c.1).collect();
    sorted.sort_unstable();
    // The formula's order of coefficients, per shape (see `dense::Shape`).
    let (shape, order): (Shape, &[i32]) = match sorted.as_slice() {
        [-3, -3, -1, -1, 1, 1, 3, 3] => (Shape::Thirds, &[1, 1, -1, -1, 3, 3, -3, -3]),
        [-2, -1, -1, 1, 1, 2] => (Shape::Halves, &[1, 1, -1, -1, 2, -2]),
        [-2, -2, -2, -2, 1, 1, 1, 1, 4] => (Shape::Quarters, &[1, 1, 1, 1, -2, -2, -2, -2, 4]),
        [-4, -1, -1, -1, -1, 2, 2, 2, 2] => (Shape::QuartersNeg, &[-1, -1, -1, -1, 2, 2, 2, 2, -4]),
        _ => return fallback,
    };
    let mut out = [(0u16, 0u16); 12];
    for (slot, want) in out.iter_mut().zip(order) {
        let i = coef.iter().position(|c| c.1 == *want).expect("the multiset matched");
        *slot = coef.swap_remove(i).0;
    }
    (shape, out)
}

/// A stage's sums as two i32 counters. Where every partial sum is exact (`leaf_sums_exact`), a
/// stage's leaves are integer multiples of a unit 2^e, and its sum is
/// `sum(right) + sum over stumps that choose left of (left - right)`, an integer count of units.
/// Split in base 2^INT_SPLIT, (high, low) with the low part in [0, 2^INT_SPLIT), each part sums
/// exactly in an i32 lane; `high * 2^(e + INT_SPLIT) + low * 2^e` is then the exact sum, the very
/// value the in-order f64 sum of the scalar scan reaches. Cheaper than the f64 sums: an integer add
/// per leaf instead of two conversions and two f64 adds, once per stage the conversion back.
struct IntSums {
    base: [i32; 2],
    units: [f64; 2],
    deltas: Vec<[i32; 2]>,
}

/// Low parts hold INT_SPLIT bits: up to 2^(31 - INT_SPLIT) - 1 of them fit an i32 sum.
const INT_SPLIT: i32 = 22;

impl IntSums {
    /// `None` when a part could overflow its i32 or a leaf is not a whole number of units.
    fn new(leaves: &[(f32, f32)]) -> Option<Self> {
        let all = || leaves.iter().flat_map(|l| [l.0, l.1]);
        let e = all().filter(|v| *v != 0.0).map(ulp_exp).min().unwrap_or(0);
        let unit = 2f64.powi(e);
        let count = |v: f32| -> Option<i64> {
            let k = v as f64 / unit;
            (k.is_finite() && k.fract() == 0.0 && k.abs() < 2f64.powi(53)).then_some(k as i64)
        };
        let split = |k: i64| [k >> INT_SPLIT, k & ((1 << INT_SPLIT) - 1)];
        let base = leaves.iter().try_fold(0i64, |acc, l| Some(acc + count(l.1)?))?;
        let deltas: Vec<[i64; 2]> = leaves.iter().map(|l| Some(split(count(l.0)? - count(l.1)?))).collect::<Option<_>>()?;
        let [bh, bl] = split(base);
        // Bounds on every partial sum of each part, whatever the choices.
        let high = bh.abs() + deltas.iter().map(|d| d[0].abs()).sum::<i64>();
        let low = bl + deltas.iter().map(|d| d[1]).sum::<i64>();
        let fits = |v: i64| v <= i32::MAX as i64;
        (fits(high) && fits(low)).then(|| Self {
            base: [bh as i32, bl as i32],
            units: [2f64.powi(e + INT_SPLIT), unit],
            deltas: deltas.iter().map(|d| [d[0] as i32, d[1] as i32]).collect(),
        })
    }
}

/// The exponent of the unit in the last place of an f32 value: 2^(exponent - 23).
fn ulp_exp(v: f32) -> i32 {
    let biased = ((v.to_bits() >> 23) & 0xff) as i32;
    if biased == 0 { -149 } else { biased - 127 - 23 }
}

/// Windows whose `nf` (area * sum of squares - sum^2) is below this fail OpenCV's variance test
/// for certain: there 1/sqrt(nf) exceeds 0.1005/area, which no float32 rounding brings under the
/// 0.1/area the test needs. Both scans reject them before the square root and the division.
fn flat_nf(area: f64) -> f64 {
    99.0 * area * area
}

/// True when every partial sum of every stage's leaves is exactly representable in f64: all leaves
/// are multiples of the smallest leaf's unit in the last place, 2^e, and no sum can exceed
/// 2^(53 + e) in magnitude. Exact additions do not depend on their order.
fn leaf_sums_exact(stages: &[Stage], stumps: &[Stump]) -> bool {
    stages.iter().all(|st| {
        let own = &stumps[st.first as usize..(st.first + st.count) as usize];
        let leaves = || own.iter().flat_map(|s| [s.left, s.right]);
        let e = leaves().filter(|v| *v != 0.0).map(ulp_exp).min().unwrap_or(0);
        let bound: f64 = own.iter().map(|s| s.left.abs().max(s.right.abs()) as f64).sum();
        leaves().all(f32::is_finite) && bound < 2f64.powi(53 + e)
    })
}

/// One detection of detectMultiScale3 with outputRejectLevels=true.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    pub rect: Rect,
    pub reject_level: i32,
    /// The largest last-stage sum among the grouped windows (OpenCV's `levelWeights`).
    pub level_weight: f64,
}

/// One window that passed every stage (see [`Cascade::detect_multi_scale3_traced`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RawWindow {
    pub rect: Rect,
    /// The last stage's sum (OpenCV's `levelWeights` entry for this window).
    pub weight: f64,
    /// The group it joins, numbered by each group's first window in this order.
    pub group: usize,
}

/// The grouped boxes, each with its group, and the raw windows they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct HaarTrace {
    pub windows: Vec<RawWindow>,
    pub boxes: Vec<(Detection, usize)>,
}

#[derive(Clone, Copy, Debug)]
pub struct DetectOptions {
    pub scale_factor: f64,
    pub min_neighbors: i32,
    /// (width, height); (0, 0) means no limit, as in OpenCV.
    pub min_size: (i32, i32),
    pub max_size: (i32, i32),
    /// Worker threads for the scales; 0 picks from the machine and the image size.
    pub threads: usize,
}

impl Default for DetectOptions {
    fn default() -> Self {
        Self { scale_factor: 1.1, min_neighbors: 3, min_size: (0, 0), max_size: (0, 0), threads: 0 }
    }
}

/// A borrowed 8-bit grey image, rows packed.
#[derive(Clone, Copy, Debug)]
pub struct Gray<'a> {
    pub width: usize,
    pub height: usize,
    pub data: &'a [u8],
}

/// More scales than this means a scale factor so close to 1 that the scan would never end.
const MAX_SCALES: usize = 4096;
/// Below this many pyramid pixels, threads cost more than they save.
const PARALLEL_MIN_PIXELS: usize = 160_000;

struct ScaleData {
    scale: f32,
    /// Size of the resized image (OpenCV's `szi` less one).
    w: usize,
    h: usize,
    ystep: usize,
    /// Window origins scanned: [0, work_w) x [0, work_h).
    work_w: usize,
    work_h: usize,
}

/// One window that passed every stage: origin and last-stage sum.
#[derive(Clone, Copy)]
struct Hit {
    x: u32,
    y: u32,
    weight: f64,
}

struct OptFeature {
    ofs: [[usize; 4]; 3],
    weight: [f32; 3],
}

/// A stump with its feature's offsets inlined for one integral-image stride: the hot loop reads
/// one contiguous record per weak classifier.
#[derive(Clone, Copy)]
struct FlatStump {
    ofs: [u32; 12],
    weight: [f32; 3],
    threshold: f32,
    left: f32,
    right: f32,
}

/// Integral values of one window: `sum[p..p + span]`, where every feature offset is below `span`.
struct Window<'a> {
    sum: &'a [i32],
}

impl Window<'_> {
    #[inline(always)]
    fn rect(&self, o: &[u32]) -> i32 {
        // SAFETY: `Window` is only built over `span` values, and `flat_stumps` checked that every
        // offset is below `span`; `o` has 4 entries (a chunk of `FlatStump::ofs`).
        unsafe {
            let s = self.sum;
            s.get_unchecked(*o.get_unchecked(0) as usize)
                .wrapping_sub(*s.get_unchecked(*o.get_unchecked(1) as usize))
                .wrapping_sub(*s.get_unchecked(*o.get_unchecked(2) as usize))
                .wrapping_add(*s.get_unchecked(*o.get_unchecked(3) as usize))
        }
    }
}

fn cv_round_f32(v: f32) -> i32 {
    v.round_ties_even() as i32
}

fn cv_round_f64(v: f64) -> i32 {
    v.round_ties_even() as i32
}

#[inline(always)]
fn rect_sum(s: &[i32], p: usize, o: &[usize; 4]) -> i32 {
    s[p + o[0]].wrapping_sub(s[p + o[1]]).wrapping_sub(s[p + o[2]]).wrapping_add(s[p + o[3]])
}

#[inline(always)]
fn rect_sum_u(s: &[u32], p: usize, o: &[usize; 4]) -> u32 {
    s[p + o[0]].wrapping_sub(s[p + o[1]]).wrapping_sub(s[p + o[2]]).wrapping_add(s[p + o[3]])
}

fn offsets(x: i32, y: i32, w: i32, h: i32, stride: usize) -> [usize; 4] {
    let (x, y, w, h) = (x as usize, y as usize, w as usize, h as usize);
    [y * stride + x, y * stride + x + w, (y + h) * stride + x, (y + h) * stride + x + w]
}

impl Cascade {
    /// Parses the XML text of an OpenCV cascade (the `<opencv_storage><cascade>` format).
    pub fn from_xml(xml: &str) -> CoreResult<Self> {
        xml::parse(xml)
    }

    pub(crate) fn assemble(
        win_w: i32,
        win_h: i32,
        features: Vec<Feature>,
        stages: Vec<Stage>,
        weaks: Vec<Weak>,
        nodes: Vec<Node>,
        leaves: Vec<f32>,
    ) -> Self {
        let stumps = weaks.iter().all(|w| w.node_count == 1).then(|| {
            weaks
                .iter()
                .map(|w| {
                    let n = &nodes[w.node_ofs as usize];
                    Stump {
                        feature: n.feature,
                        threshold: n.threshold,
                        left: leaves[w.leaf_ofs as usize],
                        right: leaves[w.leaf_ofs as usize + 1],
                    }
                })
                .collect()
        });
        let order_free = stumps.as_ref().is_some_and(|sp: &Vec<Stump>| leaf_sums_exact(&stages, sp));
        let dense_plan = dense_plan(&features, &stages, stumps.as_deref(), order_free);
        Self { win_w, win_h, features, stages, weaks, nodes, leaves, stumps, dense_plan }
    }

    pub fn window_size(&self) -> (i32, i32) {
        (self.win_w, self.win_h)
    }

    pub fn stage_count(&self) -> usize {
        self.stages.len()
    }

    /// `CascadeClassifier::detectMultiScale3(img, scaleFactor, minNeighbors, 0, minSize, maxSize,
    /// outputRejectLevels=true)`, clipped to the image like OpenCV's public wrapper.
    pub fn detect_multi_scale3(&self, img: Gray, opts: &DetectOptions) -> CoreResult<Vec<Detection>> {
        self.detect_multi_scale3_with(img, opts, Kernel::best())
    }

    /// What `detect_multi_scale3` evaluates on `img` (counted by the scalar scan on this thread,
    /// which evaluates exactly the windows and stumps every kernel must): for the roofline of
    /// bench/haar.
    pub fn scan_work(&self, img: Gray, opts: &DetectOptions) -> CoreResult<ScanWork> {
        WORK.with(|w| *w.borrow_mut() = Some(ScanWork::default()));
        let run = self.candidates(img, &DetectOptions { threads: 1, ..*opts }, Kernel::Scalar);
        let mut work = WORK.with(|w| w.borrow_mut().take()).unwrap_or_default();
        run?;
        for s in self.scales(img, opts)? {
            work.integral_bytes += 8 * ((s.w + 1) * (s.h + 1)) as u64;
        }
        Ok(work)
    }

    /// [`detect_multi_scale3`](Self::detect_multi_scale3) with the scan of `kernel` (or the
    /// narrower one `scan_kernel` falls back to): for tests and benchmarks of each kernel on one CPU.
    pub fn detect_multi_scale3_with(&self, img: Gray, opts: &DetectOptions, kernel: Kernel) -> CoreResult<Vec<Detection>> {
        let cands = self.candidates(img, opts, kernel)?;
        Ok(self.group3(&cands, img, opts).into_iter().map(|(d, _)| d).collect())
    }

    /// [`detect_multi_scale3`](Self::detect_multi_scale3) with the windows it grouped: every window
    /// that passed all stages, before `groupRectangles`, in OpenCV's single-threaded order, each
    /// with the group it joined (`cv::partition`'s class number, eps 0.2) and its last-stage sum;
    /// each box names its group. A debugging view: a box is the rounded mean of its group, so a box
    /// one pixel off OpenCV's is diagnosed by comparing these windows with OpenCV's own
    /// (detectMultiScale3 with minNeighbors=0, which returns them clipped to the image; these are
    /// unclipped, as the grouping sees them).
    pub fn detect_multi_scale3_traced(&self, img: Gray, opts: &DetectOptions) -> CoreResult<HaarTrace> {
        let cands = self.candidates(img, opts, Kernel::best())?;
        let boxes = self.group3(&cands, img, opts);
        let rects: Vec<Rect> = cands.iter().map(|c| c.0).collect();
        let (labels, _) = group::partition(&rects, 0.2);
        let windows = cands.into_iter().zip(labels).map(|((rect, weight), group)| RawWindow { rect, weight, group }).collect();
        Ok(HaarTrace { windows, boxes })
    }

    fn group3(&self, cands: &[(Rect, f64)], img: Gray, opts: &DetectOptions) -> Vec<(Detection, usize)> {
        let rects: Vec<Rect> = cands.iter().map(|c| c.0).collect();
        let levels: Vec<i32> = vec![self.stages.len() as i32; cands.len()];
        let weights: Vec<f64> = cands.iter().map(|c| c.1).collect();
        let grouped = group::group_rectangles(&rects, Some((&levels, &weights)), opts.min_neighbors, 0.2);
        grouped
            .into_iter()
            .filter_map(|g| {
                clip(g.rect, img).map(|rect| (Detection { rect, reject_level: g.level, level_weight: g.level_weight }, g.class))
            })
            .collect()
    }

    /// `CascadeClassifier::detectMultiScale(img, scaleFactor, minNeighbors, 0, minSize, maxSize)`.
    pub fn detect_multi_scale(&self, img: Gray, opts: &DetectOptions) -> CoreResult<Vec<Rect>> {
        let cands = self.candidates(img, opts, Kernel::best())?;
        let rects: Vec<Rect> = cands.iter().map(|c| c.0).collect();
        let grouped = group::group_rectangles(&rects, None, opts.min_neighbors, 0.2);
        Ok(grouped.into_iter().filter_map(|g| clip(g.rect, img)).collect())
    }

    /// The scale list of `detectMultiScaleNoGrouping` and the per-scale data of `updateScaleData`.
    fn scales(&self, img: Gray, opts: &DetectOptions) -> CoreResult<Vec<ScaleData>> {
        let (iw, ih) = (img.width as i32, img.height as i32);
        if iw < self.win_w || ih < self.win_h {
            return Ok(Vec::new());
        }
        let (max_w, max_h) = if opts.max_size.0 == 0 || opts.max_size.1 == 0 { (iw, ih) } else { opts.max_size };
        let mut all = Vec::new();
        // The break test uses the double factor, the kept scales are its float rounding.
        let mut factor = 1.0f64;
        loop {
            let ww = cv_round_f64(self.win_w as f64 * factor);
            let wh = cv_round_f64(self.win_h as f64 * factor);
            if ww > iw || wh > ih {
                break;
            }
            if all.len() == MAX_SCALES {
                return Err(CoreError::invalid_request("scaleFactor is too close to 1"));
            }
            all.push(factor as f32);
            factor *= opts.scale_factor;
        }
        let mut out = Vec::new();
        for &sc in &all {
            let ww = cv_round_f32(self.win_w as f32 * sc);
            let wh = cv_round_f32(self.win_h as f32 * sc);
            if ww > max_w || wh > max_h {
                break;
            }
            if ww < opts.min_size.0 || wh < opts.min_size.1 {
                continue;
            }
            let w = cv_round_f32(iw as f32 / sc).max(0) as usize;
            let h = cv_round_f32(ih as f32 / sc).max(0) as usize;
            out.push(ScaleData {
                scale: sc,
                w,
                h,
                ystep: if sc >= 2.0 { 1 } else { 2 },
                work_w: (w as i64 + 1 - self.win_w as i64).max(0) as usize,
                work_h: (h as i64 + 1 - self.win_h as i64).max(0) as usize,
            });
        }
        Ok(out)
    }

    /// Every window that passes all stages, in the order OpenCV's single-threaded scan appends them
    /// (one call over all stripes: scale by scale, row by row). With more threads OpenCV appends
    /// stripes as they finish; the grouped faces are the same, only their order can change.
    /// `kernel` picks the scan: the dense SIMD one where the CPU has it, else the scalar one; both
    /// find the same windows with the same weights.
    fn candidates(&self, img: Gray, opts: &DetectOptions, kernel: Kernel) -> CoreResult<Vec<(Rect, f64)>> {
        if !(opts.scale_factor > 1.0) || !opts.scale_factor.is_finite() {
            return Err(CoreError::invalid_request("scaleFactor must be a finite number above 1"));
        }
        if img.width == 0 || img.height == 0 || img.data.len() < img.width * img.height {
            return Err(CoreError::invalid_image("empty or truncated grey image"));
        }
        let scales = self.scales(img, opts)?;
        if scales.is_empty() {
            return Ok(Vec::new());
        }
        // A black image has no window with any variance: nothing to scan.
        let Some(content) = pyramid::nonzero_bounds(img.data, img.width, img.height) else {
            return Ok(Vec::new());
        };
        // OpenCV cuts every scale into the same number of horizontal stripes, from the first scale's
        // width, and rounds the stripe height down to whole steps: rows past the last stripe are
        // never scanned.
        let nstripes = (scales[0].work_w as f64 / 32.0).ceil() as usize;
        if nstripes == 0 {
            return Ok(Vec::new());
        }
        let stripe_sizes: Vec<usize> = scales
            .iter()
            .map(|s| ((s.work_h / s.ystep + nstripes - 1) / nstripes).max(1) * s.ystep)
            .collect();

        let pixels: usize = scales.iter().map(|s| s.w * s.h).sum();
        // Held to the end of the scan: concurrent scans share the cores rather than each spawning
        // one thread per core.
        let mut _turn = None;
        let threads = if opts.threads > 0 {
            opts.threads
        } else if pixels < PARALLEL_MIN_PIXELS {
            1
        } else {
            let (turn, threads) = workers::Turn::take();
            _turn = Some(turn);
            threads
        }
        .min(scales.len());

        let mut per_scale: Vec<Vec<Hit>> = Vec::with_capacity(scales.len());
        if threads <= 1 {
            let mut bufs = SCRATCH.get();
            for (i, s) in scales.iter().enumerate() {
                per_scale.push(self.scan_scale(img, content, s, (nstripes * stripe_sizes[i]).min(s.work_h), kernel, &mut bufs));
            }
            SCRATCH.put(bufs);
        } else {
            let next = AtomicUsize::new(0);
            let mut slots: Vec<Option<Vec<Hit>>> = (0..scales.len()).map(|_| None).collect();
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let (next, scales, stripe_sizes) = (&next, &scales, &stripe_sizes);
                        scope.spawn(move || {
                            let mut bufs = SCRATCH.get();
                            let mut done = Vec::new();
                            loop {
                                // Scales come largest first, so the long ones start early.
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                if i >= scales.len() {
                                    break;
                                }
                                let rows = (nstripes * stripe_sizes[i]).min(scales[i].work_h);
                                done.push((i, self.scan_scale(img, content, &scales[i], rows, kernel, &mut bufs)));
                            }
                            SCRATCH.put(bufs);
                            done
                        })
                    })
                    .collect();
                for h in handles {
                    // A panicking worker is a bug; resume it so that the binding's guard reports it.
                    match h.join() {
                        Ok(done) => {
                            for (i, hits) in done {
                                slots[i] = Some(hits);
                            }
                        }
                        Err(p) => std::panic::resume_unwind(p),
                    }
                }
            });
            per_scale = slots.into_iter().map(|s| s.unwrap_or_default()).collect();
        }

        let mut out = Vec::new();
        for (s, hits) in scales.iter().zip(&per_scale) {
            let win = (cv_round_f32(self.win_w as f32 * s.scale), cv_round_f32(self.win_h as f32 * s.scale));
            for h in hits {
                let rect = Rect { x: cv_round_f32(h.x as f32 * s.scale), y: cv_round_f32(h.y as f32 * s.scale), w: win.0, h: win.1 };
                out.push((rect, h.weight));
            }
        }
        Ok(out)
    }

    /// Windows of one scale whose origin row is below `rows`. Only the part of the pyramid level
    /// that can differ from 0 is resized and integrated: a window that sees only zeros fails
    /// OpenCV's variance test (-1, no extra skip), so skipping it by whole steps scans the same
    /// lattice of origins and finds the same hits. DeepFace's align border makes three quarters
    /// of every opencv-detector image black.
    fn scan_scale(&self, img: Gray, content: Roi, s: &ScaleData, rows: usize, kernel: Kernel, bufs: &mut Buffers) -> Vec<Hit> {
        let mut hits = Vec::new();
        if s.work_w == 0 || s.work_h == 0 {
            return hits;
        }
        let (win_w, win_h) = (self.win_w as usize, self.win_h as usize);
        let lit = pyramid::content_reach(img.width, img.height, s.w, s.h, content);
        let step = s.ystep;
        let first_on_lattice = |v: usize| v.div_ceil(step) * step;
        // Origins whose window overlaps the lit pixels, on the scan's lattice of multiples of step.
        let ox0 = first_on_lattice((lit.x0 + 1).saturating_sub(win_w));
        let ox1 = lit.x1.min(s.work_w);
        let oy0 = first_on_lattice((lit.y0 + 1).saturating_sub(win_h));
        let oy1 = lit.y1.min(rows);
        if ox0 >= ox1 || oy0 >= oy1 {
            return hits;
        }
        // Every window read stays inside the crop: origins up to (ox1 - 1, oy1 - 1) plus the window.
        let crop = Roi { x0: ox0, y0: oy0, x1: (ox1 - 1 + win_w).min(s.w), y1: (oy1 - 1 + win_h).min(s.h) };
        pyramid::resize_linear_exact_cascade_roi(kernel, img.data, img.width, img.height, s.w, s.h, crop, &mut bufs.pixels);
        let (cw, ch) = (crop.width(), crop.height());
        let origins = Roi { x0: ox0, y0: oy0, x1: ox1, y1: oy1 };
        if dense::supports(kernel) {
            if let Some(hits) = self.scan_dense(origins, step, cw, ch, kernel, bufs) {
                return hits;
            }
        }
        pyramid::integrals(&bufs.pixels, cw, ch, &mut bufs.sum, &mut bufs.sq);
        let stride = cw + 1;
        let opt: Vec<OptFeature> = self
            .features
            .iter()
            .map(|f| OptFeature {
                ofs: f.rects.map(|r| offsets(r.x, r.y, r.w, r.h, stride)),
                weight: f.rects.map(|r| r.weight),
            })
            .collect();
        let nofs = offsets(1, 1, self.win_w - 2, self.win_h - 2, stride);
        let area = ((self.win_w - 2) * (self.win_h - 2)) as f64;
        // Offsets are below (win_h)*stride + win_w + 1 by the XML checks; `span` bounds them all.
        let span = win_h * stride + win_w + 1;
        let flat = self.flat_stumps(&opt, span);
        let eval = Eval { sum: &bufs.sum, sq: &bufs.sq, opt: &opt, nofs, area, flat_nf: flat_nf(area), flat: flat.as_deref(), span };
        for y in (oy0..oy1).step_by(step) {
            let row = (y - oy0) * stride;
            let mut x = ox0;
            while x < ox1 {
                let (result, weight) = self.run_at(&eval, row + (x - ox0));
                WORK.with(|w| {
                    if let Some(work) = w.borrow_mut().as_mut() {
                        work.add(self, &eval, row + (x - ox0), result);
                    }
                });
                if result == 1 {
                    hits.push(Hit { x: x as u32, y: y as u32, weight });
                }
                // OpenCV skips one more step after a window that fails the first stage.
                if result == 0 {
                    x += step;
                }
                x += step;
            }
        }
        hits
    }

    /// `scan_scale`'s loop with the dense kernel, over the resized crop in `bufs.pixels` (`cw` x
    /// `ch`, its origin at the first scanned origin). `None` when the cascade does not fit it.
    fn scan_dense(&self, o: Roi, step: usize, cw: usize, ch: usize, kernel: Kernel, bufs: &mut Buffers) -> Option<Vec<Hit>> {
        let plan = self.dense_plan.as_ref()?;
        let layout = dense::integrals_planar(&bufs.pixels, cw, ch, step, kernel, &mut bufs.planar);
        let corners = |r: &HaarRect| -> [u32; 4] {
            let (x, y, w, h) = (r.x as usize, r.y as usize, r.w as usize, r.h as usize);
            [(x, y), (x + w, y), (x, y + h), (x + w, y + h)].map(|(dx, dy)| layout.offset(dx, dy) as u32)
        };
        // The corners are planar offsets, which depend on the level's layout.
        plan.stumps_for(&layout, &mut bufs.stumps);
        let norm = HaarRect { x: 1, y: 1, w: self.win_w - 2, h: self.win_h - 2, weight: 0.0 };
        let area = ((self.win_w - 2) * (self.win_h - 2)) as f64;
        let per_row = (o.x1 - o.x0).div_ceil(step);
        // Origin rows o.y0, o.y0 + step, ...: the last one's integral row, relative to the crop.
        let last_row = (o.y1 - 1 - o.y0) / step * step;
        let level = dense::Level::new(&bufs.planar.sum, &bufs.planar.sq, layout, last_row + 1, per_row, corners(&norm), area, &bufs.stumps, &plan.stages, !plan.deltas.is_empty())?;
        let mut hits = Vec::new();
        for y in (o.y0..o.y1).step_by(step) {
            bufs.row_hits.clear();
            dense::scan_row(kernel, &level, (y - o.y0) * layout.stride, per_row, &mut bufs.row_hits);
            hits.extend(bufs.row_hits.iter().map(|&(j, weight)| Hit { x: (o.x0 + j as usize * step) as u32, y: y as u32, weight }));
        }
        Some(hits)
    }

    fn flat_stumps(&self, opt: &[OptFeature], span: usize) -> Option<Vec<FlatStump>> {
        let stumps = self.stumps.as_ref()?;
        let flat: Vec<FlatStump> = stumps
            .iter()
            .map(|sp| {
                let f = &opt[sp.feature as usize];
                let mut ofs = [0u32; 12];
                for (k, o) in f.ofs.iter().flatten().enumerate() {
                    ofs[k] = *o as u32;
                }
                FlatStump { ofs, weight: f.weight, threshold: sp.threshold, left: sp.left, right: sp.right }
            })
            .collect();
        // The soundness condition of `Window::rect`; a failure would be a bug in the XML checks.
        flat.iter().all(|f| f.ofs.iter().all(|&o| (o as usize) < span)).then_some(flat)
    }

    /// The stages of a stump cascade on one window. Every stump computes its third rectangle:
    /// a two-rectangle feature has weight 0 and an empty rectangle there, and adding that zero
    /// can only flip the sign of a zero sum, which no comparison sees. Always computing it is
    /// cheaper than branching on the feature kind, a branch that mispredicts often.
    #[inline(always)]
    fn run_stumps(&self, flat: &[FlatStump], sum: &[i32], vnf: f32) -> (i32, f64) {
        let win = Window { sum };
        let mut tmp = 0.0f64;
        for (si, st) in self.stages.iter().enumerate() {
            tmp = 0.0;
            for sp in &flat[st.first as usize..(st.first + st.count) as usize] {
                let ret = sp.weight[0] * win.rect(&sp.ofs[0..4]) as f32
                    + sp.weight[1] * win.rect(&sp.ofs[4..8]) as f32
                    + sp.weight[2] * win.rect(&sp.ofs[8..12]) as f32;
                tmp += if ret * vnf < sp.threshold { sp.left } else { sp.right } as f64;
            }
            if tmp < st.threshold as f64 {
                return (-(si as i32), tmp);
            }
        }
        (1, tmp)
    }

    /// `CascadeClassifierImpl::runAt`: -1 when the window is too flat to normalise, -stage when it
    /// fails `stage`, 1 when it passes them all; with the last evaluated stage's sum.
    #[inline]
    fn run_at(&self, e: &Eval, p: usize) -> (i32, f64) {
        let valsum = rect_sum(e.sum, p, &e.nofs);
        let valsqsum = rect_sum_u(e.sq, p, &e.nofs);
        let nf = e.area * valsqsum as f64 - valsum as f64 * valsum as f64;
        // Most windows are too flat: reject them before the square root (see `flat_nf`; nf <= 0
        // lands here too).
        if !(nf >= e.flat_nf) {
            return (-1, 0.0);
        }
        let vnf = (1.0 / nf.sqrt()) as f32;
        if !(e.area * (vnf as f64) < 1e-1) {
            return (-1, 0.0);
        }
        let value = |fi: u32| -> f32 {
            let f = &e.opt[fi as usize];
            let mut ret = f.weight[0] * rect_sum(e.sum, p, &f.ofs[0]) as f32 + f.weight[1] * rect_sum(e.sum, p, &f.ofs[1]) as f32;
            if f.weight[2] != 0.0 {
                ret += f.weight[2] * rect_sum(e.sum, p, &f.ofs[2]) as f32;
            }
            ret * vnf
        };
        let mut tmp = 0.0f64;
        if let Some(flat) = e.flat {
            // p + span never passes the end: the last origin is ((h - win_h) * stride + w - win_w).
            return self.run_stumps(flat, &e.sum[p..p + e.span], vnf);
        } else if let Some(stumps) = &self.stumps {
            for (si, st) in self.stages.iter().enumerate() {
                tmp = 0.0;
                for sp in &stumps[st.first as usize..(st.first + st.count) as usize] {
                    tmp += if value(sp.feature) < sp.threshold { sp.left } else { sp.right } as f64;
                }
                if tmp < st.threshold as f64 {
                    return (-(si as i32), tmp);
                }
            }
        } else {
            for (si, st) in self.stages.iter().enumerate() {
                tmp = 0.0;
                for w in &self.weaks[st.first as usize..(st.first + st.count) as usize] {
                    let mut idx: i32 = 0;
                    loop {
                        let n = &self.nodes[w.node_ofs as usize + idx as usize];
                        idx = if value(n.feature) < n.threshold { n.left } else { n.right };
                        if idx <= 0 {
                            break;
                        }
                    }
                    tmp += self.leaves[w.leaf_ofs as usize + (-idx) as usize] as f64;
                }
                if tmp < st.threshold as f64 {
                    return (-(si as i32), tmp);
                }
            }
        }
        (1, tmp)
    }
}

struct Eval<'a> {
    sum: &'a [i32],
    sq: &'a [u32],
    opt: &'a [OptFeature],
    nofs: [usize; 4],
    area: f64,
    /// Windows with `nf` below this fail the variance test for certain (see `run_at`).
    flat_nf: f64,
    flat: Option<&'a [FlatStump]>,
    span: usize,
}

#[derive(Default)]
struct Buffers {
    pixels: Vec<u8>,
    sum: Vec<i32>,
    sq: Vec<u32>,
    /// The dense scan's integral images, hits of one row and stumps of one level.
    planar: dense::PlanarBuffers,
    row_hits: Vec<(u32, f64)>,
    stumps: Vec<dense::Stump>,
}

impl workers::Scratch for Buffers {
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.pixels.capacity()
            + (self.sum.capacity() + self.planar.sum.capacity()) * size_of::<i32>()
            + (self.sq.capacity() + self.planar.sq.capacity()) * size_of::<u32>()
            + self.row_hits.capacity() * size_of::<(u32, f64)>()
            + self.stumps.capacity() * size_of::<dense::Stump>()
    }
}

/// Scratch buffers shared by every cascade's scans.
static SCRATCH: workers::Pool<Buffers> = workers::Pool::new();

/// OpenCV's `clipObjects`: intersect with the image, drop what becomes empty.
fn clip(r: Rect, img: Gray) -> Option<Rect> {
    let x0 = r.x.max(0);
    let y0 = r.y.max(0);
    let x1 = (r.x as i64 + r.w as i64).min(img.width as i64) as i32;
    let y1 = (r.y as i64 + r.h as i64).min(img.height as i64) as i32;
    (x1 > x0 && y1 > y0).then_some(Rect { x: x0, y: y0, w: x1 - x0, h: y1 - y0 })
}

#[cfg(test)]
mod tests;
