//! cv::groupRectangles (objdetect.cpp), the variant that carries reject levels and level weights,
//! with cv::partition's class numbering so that the output order matches OpenCV's.

use super::Rect;

fn similar(a: &Rect, b: &Rect, eps: f64) -> bool {
    let delta = eps * (a.w.min(b.w) + a.h.min(b.h)) as f64 * 0.5;
    ((a.x - b.x).abs() as f64) <= delta
        && ((a.y - b.y).abs() as f64) <= delta
        && ((a.x + a.w - b.x - b.w).abs() as f64) <= delta
        && ((a.y + a.h - b.y - b.h).abs() as f64) <= delta
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Connected components of the similarity graph, numbered by their first member in input order,
/// which is how cv::partition numbers them.
pub(super) fn partition(rects: &[Rect], eps: f64) -> (Vec<usize>, usize) {
    let n = rects.len();
    let mut parent: Vec<usize> = (0..n).collect();
    // Sorting by x lets the pair scan stop early: similar rectangles are at most `delta` apart in x,
    // and delta never exceeds eps times the larger width.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| rects[i].x);
    let max_w = rects.iter().map(|r| r.w.max(r.h)).max().unwrap_or(0) as f64;
    let reach = eps * max_w;
    for a in 0..n {
        let i = order[a];
        for &j in &order[a + 1..] {
            if (rects[j].x - rects[i].x) as f64 > reach {
                break;
            }
            if similar(&rects[i], &rects[j], eps) {
                let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                if ri != rj {
                    parent[ri.max(rj)] = ri.min(rj);
                }
            }
        }
    }
    let mut label_of_root = vec![usize::MAX; n];
    let mut labels = vec![0; n];
    let mut nclasses = 0;
    for i in 0..n {
        let r = find(&mut parent, i);
        if label_of_root[r] == usize::MAX {
            label_of_root[r] = nclasses;
            nclasses += 1;
        }
        labels[i] = label_of_root[r];
    }
    (labels, nclasses)
}

/// OpenCV's `saturate_cast<int>(float)`: round half to even, clamped.
fn round_f32(v: f32) -> i32 {
    let r = v.round_ties_even();
    if r.is_nan() {
        0
    } else {
        r.clamp(i32::MIN as f32, i32::MAX as f32) as i32
    }
}

fn round_f64(v: f64) -> i32 {
    let r = v.round_ties_even();
    if r.is_nan() {
        0
    } else {
        r.clamp(i32::MIN as f64, i32::MAX as f64) as i32
    }
}

pub struct Grouped {
    pub rect: Rect,
    /// The class (group) it averages: `partition`'s number, or the input index without grouping.
    pub class: usize,
    /// Reject level with levels, else the number of neighbours (OpenCV's `weights`).
    pub level: i32,
    pub level_weight: f64,
}

/// `levels` is Some for detectMultiScale3 with outputRejectLevels (one level and one weight per
/// rectangle); None for plain detectMultiScale.
pub fn group_rectangles(rects: &[Rect], levels: Option<(&[i32], &[f64])>, threshold: i32, eps: f64) -> Vec<Grouped> {
    if threshold <= 0 || rects.is_empty() {
        return rects
            .iter()
            .enumerate()
            .map(|(i, r)| Grouped {
                rect: *r,
                class: i,
                level: levels.map_or(1, |(l, _)| l[i]),
                level_weight: levels.map_or(0.0, |(_, w)| w[i]),
            })
            .collect();
    }
    let (labels, nclasses) = partition(rects, eps);
    let mut sums = vec![[0i64; 4]; nclasses];
    let mut counts = vec![0i32; nclasses];
    for (r, &c) in rects.iter().zip(&labels) {
        sums[c][0] += r.x as i64;
        sums[c][1] += r.y as i64;
        sums[c][2] += r.w as i64;
        sums[c][3] += r.h as i64;
        counts[c] += 1;
    }
    let mut reject_levels = vec![0i32; nclasses];
    let mut reject_weights = vec![f64::MIN_POSITIVE; nclasses];
    let use_default = match levels {
        Some((lv, lw)) if !lv.is_empty() && !lw.is_empty() => {
            for (i, &c) in labels.iter().enumerate() {
                if lv[i] > reject_levels[c] {
                    reject_levels[c] = lv[i];
                    reject_weights[c] = lw[i];
                } else if lv[i] == reject_levels[c] && lw[i] > reject_weights[c] {
                    reject_weights[c] = lw[i];
                }
            }
            false
        }
        _ => true,
    };
    // OpenCV sums in int and averages in float: (float)sum * (1.f/n), rounded half to even.
    let avg: Vec<Rect> = (0..nclasses)
        .map(|c| {
            let s = 1.0f32 / counts[c] as f32;
            let f = |v: i64| round_f32((v as i32) as f32 * s);
            Rect { x: f(sums[c][0]), y: f(sums[c][1]), w: f(sums[c][2]), h: f(sums[c][3]) }
        })
        .collect();
    let mut out = Vec::new();
    for i in 0..nclasses {
        let r1 = avg[i];
        let n1 = counts[i];
        if n1 <= threshold {
            continue;
        }
        // Drop a small rectangle inside a larger, better supported one.
        let swallowed = (0..nclasses).any(|j| {
            let n2 = counts[j];
            if j == i || n2 <= threshold {
                return false;
            }
            let r2 = avg[j];
            let dx = round_f64(r2.w as f64 * eps);
            let dy = round_f64(r2.h as f64 * eps);
            r1.x >= r2.x - dx
                && r1.y >= r2.y - dy
                && r1.x + r1.w <= r2.x + r2.w + dx
                && r1.y + r1.h <= r2.y + r2.h + dy
                && (n2 > 3.max(n1) || n1 < 3)
        });
        if !swallowed {
            out.push(Grouped {
                rect: r1,
                class: i,
                level: if use_default { n1 } else { reject_levels[i] },
                level_weight: reject_weights[i],
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: i32, y: i32, w: i32, h: i32) -> Rect {
        Rect { x, y, w, h }
    }

    #[test]
    fn clusters_below_threshold_vanish_and_averages_round_half_even() {
        let rects = vec![r(10, 10, 20, 20), r(11, 10, 20, 20), r(100, 100, 30, 30), r(12, 11, 21, 20)];
        let g = group_rectangles(&rects, None, 2, 0.2);
        assert_eq!(g.len(), 1);
        // x: 33/3 = 11; y: 31/3 = 10.33; w: 61/3 = 20.33.
        assert_eq!(g[0].rect, r(11, 10, 20, 20));
        assert_eq!(g[0].level, 3);
        // 2 rects averaging 10.5 round to 10 (half to even).
        let g = group_rectangles(&[r(10, 0, 20, 20), r(11, 0, 20, 20)], None, 1, 0.2);
        assert_eq!(g[0].rect.x, 10);
    }

    #[test]
    fn level_weight_is_the_max_of_the_highest_level() {
        let rects = vec![r(10, 10, 20, 20), r(11, 10, 20, 20), r(10, 11, 20, 20)];
        let g = group_rectangles(&rects, Some((&[25, 25, 24], &[1.5, 2.5, 9.0])), 2, 0.2);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].level, 25);
        assert_eq!(g[0].level_weight, 2.5);
    }

    #[test]
    fn inner_rectangle_is_dropped() {
        let mut rects = vec![];
        for i in 0..5 {
            rects.push(r(100 + i, 100, 100, 100));
        }
        for i in 0..3 {
            rects.push(r(130 + i, 130, 30, 30));
        }
        let g = group_rectangles(&rects, None, 2, 0.2);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].rect.w, 100);
    }

    #[test]
    fn partition_numbers_classes_by_first_member() {
        let rects = vec![r(500, 0, 20, 20), r(0, 0, 20, 20), r(501, 0, 20, 20), r(1, 0, 20, 20)];
        let (labels, n) = partition(&rects, 0.2);
        assert_eq!(n, 2);
        assert_eq!(labels, vec![0, 1, 0, 1]);
    }
}
