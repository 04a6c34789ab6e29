//! Non-maximum suppression in the two flavours the detectors' references use. They differ in the
//! area convention and the suppression comparison, which changes which near-duplicates survive, so
//! each detector uses the one its reference uses.

use std::cmp::Ordering;

/// Indices sorted by descending score; ties keep input order (stable), NaN scores last.
fn order_desc(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or_else(|| scores[a].is_nan().cmp(&scores[b].is_nan())));
    order
}

/// insightface / serengil `cpu_nms` (also biubug6 `py_cpu_nms`): boxes are `[x1, y1, x2, y2]` with
/// the inclusive-pixel `+1` width, and a box is dropped when its IoU with a kept box is `>= iou`.
/// Returns the kept indices in descending score order.
pub fn nms_plus_one(boxes: &[[f32; 4]], scores: &[f32], iou: f32) -> Vec<usize> {
    let n = boxes.len().min(scores.len());
    let order = order_desc(&scores[..n]);
    let area = |b: &[f32; 4]| (b[2] - b[0] + 1.0) * (b[3] - b[1] + 1.0);
    let mut suppressed = vec![false; n];
    let mut keep = Vec::new();
    for (oi, &i) in order.iter().enumerate() {
        if suppressed[i] {
            continue;
        }
        keep.push(i);
        let bi = &boxes[i];
        let ai = area(bi);
        for &j in &order[oi + 1..] {
            if suppressed[j] {
                continue;
            }
            let bj = &boxes[j];
            let w = (bi[2].min(bj[2]) - bi[0].max(bj[0]) + 1.0).max(0.0);
            let h = (bi[3].min(bj[3]) - bi[1].max(bj[1]) + 1.0).max(0.0);
            let inter = w * h;
            let ovr = inter / (ai + area(bj) - inter);
            if ovr >= iou {
                suppressed[j] = true;
            }
        }
    }
    keep
}

/// OpenCV `dnn::NMSBoxes` on integer rectangles `[x, y, w, h]` with eta = 1: candidates with
/// `score > score_threshold`, best `top_k` (0 = all) by score, kept when IoU with every kept box is
/// `<= iou`. Integer rectangles matter: YuNet's NMS truncates its float boxes before comparing.
pub fn nms_opencv(rects: &[[i32; 4]], scores: &[f32], score_threshold: f32, iou: f32, top_k: usize) -> Vec<usize> {
    let n = rects.len().min(scores.len());
    let mut cand: Vec<usize> = (0..n).filter(|&i| scores[i] > score_threshold).collect();
    // std::stable_sort with a greater-than comparator in OpenCV's GetMaxScoreIndex.
    cand.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(Ordering::Equal));
    if top_k > 0 && cand.len() > top_k {
        cand.truncate(top_k);
    }
    let area = |r: &[i32; 4]| (r[2].max(0) as i64) * (r[3].max(0) as i64);
    let overlap = |a: &[i32; 4], b: &[i32; 4]| -> f32 {
        let x1 = a[0].max(b[0]) as i64;
        let y1 = a[1].max(b[1]) as i64;
        let x2 = (a[0] as i64 + a[2] as i64).min(b[0] as i64 + b[2] as i64);
        let y2 = (a[1] as i64 + a[3] as i64).min(b[1] as i64 + b[3] as i64);
        let inter = if x2 > x1 && y2 > y1 { (x2 - x1) * (y2 - y1) } else { 0 };
        let union = area(a) + area(b) - inter;
        if union <= 0 {
            0.0
        } else {
            (inter as f64 / union as f64) as f32
        }
    };
    let mut keep: Vec<usize> = Vec::new();
    for &i in &cand {
        if keep.iter().all(|&k| overlap(&rects[i], &rects[k]) <= iou) {
            keep.push(i);
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_one_suppresses_overlaps_and_keeps_disjoint() {
        let boxes = [[0.0, 0.0, 9.0, 9.0], [1.0, 1.0, 10.0, 10.0], [50.0, 50.0, 60.0, 60.0], [0.0, 0.0, 9.0, 9.0]];
        let scores = [0.8, 0.95, 0.7, 0.1];
        assert_eq!(nms_plus_one(&boxes, &scores, 0.4), vec![1, 2]);
    }

    #[test]
    fn plus_one_uses_inclusive_area_and_ge() {
        // Two 10x10 (inclusive) boxes sharing 5 columns: inter 50, union 150 → IoU 1/3.
        let boxes = [[0.0, 0.0, 9.0, 9.0], [5.0, 0.0, 14.0, 9.0]];
        let scores = [0.9, 0.8];
        assert_eq!(nms_plus_one(&boxes, &scores, 0.34), vec![0, 1]);
        assert_eq!(nms_plus_one(&boxes, &scores, 1.0 / 3.0), vec![0]);
    }

    #[test]
    fn opencv_nms_threshold_topk_and_le() {
        // 10x10 boxes shifted by 5: IoU 50/150.
        let rects = [[0, 0, 10, 10], [5, 0, 10, 10], [100, 100, 10, 10], [200, 200, 5, 5]];
        let scores = [0.9, 0.95, 0.91, 0.5];
        assert_eq!(nms_opencv(&rects, &scores, 0.6, 0.3, 0), vec![1, 2]);
        assert_eq!(nms_opencv(&rects, &scores, 0.6, 0.34, 0), vec![1, 2, 0]);
        assert_eq!(nms_opencv(&rects, &scores, 0.6, 0.34, 2), vec![1, 2]);
        // Strictly greater than the score threshold.
        assert_eq!(nms_opencv(&rects, &scores, 0.95, 0.3, 0), Vec::<usize>::new());
    }

    #[test]
    fn empty_and_nan_inputs_do_not_panic() {
        assert!(nms_plus_one(&[], &[], 0.4).is_empty());
        let k = nms_plus_one(&[[0.0, 0.0, 1.0, 1.0], [5.0, 5.0, 6.0, 6.0]], &[f32::NAN, 0.5], 0.4);
        assert_eq!(k.len(), 2);
        assert!(nms_opencv(&[[0, 0, 0, 0]], &[1.0], 0.5, 0.3, 0) == vec![0]);
    }
}
