//! Reader for OpenCV's "new" cascade format (`<opencv_storage><cascade>`, written by
//! opencv_traincascade), the format of haarcascade_frontalface_default.xml and haarcascade_eye.xml.
//!
//! Numbers are parsed as f64 and then narrowed to f32, as OpenCV's FileStorage does (strtod, then a
//! `(float)` cast): parsing straight to f32 could round differently on a few thresholds.

use crate::error::{CoreError, CoreResult, ErrorCode};

use super::{Cascade, Feature, HaarRect, Node, Stage, Weak};

/// OpenCV subtracts this from every stage threshold when it loads a cascade (cascadedetect.cpp,
/// `THRESHOLD_EPS`), so that sums equal to the threshold pass.
const THRESHOLD_EPS: f32 = 1e-5;

/// Larger windows than this are not a cascade we could have been given on purpose, and they would
/// make the scan allocate without bound.
const MAX_WINDOW: i32 = 1024;

/// A broken cascade is the server's fault, never the request's.
fn bad(detail: impl Into<String>) -> CoreError {
    CoreError::new(ErrorCode::InternalError, format!("invalid cascade XML: {}", detail.into()))
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|c| c.is_element() && c.tag_name().name() == name)
}

fn req<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> CoreResult<roxmltree::Node<'a, 'i>> {
    child(node, name).ok_or_else(|| bad(format!("missing <{name}>")))
}

fn items<'a, 'i>(node: roxmltree::Node<'a, 'i>) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    node.children().filter(|c| c.is_element() && c.tag_name().name() == "_")
}

fn text<'a>(node: roxmltree::Node<'a, '_>) -> &'a str {
    node.text().unwrap_or("").trim()
}

fn parse_int(s: &str, what: &str) -> CoreResult<i32> {
    let v: f64 = s.parse().map_err(|_| bad(format!("{what} is not a number")))?;
    if !v.is_finite() || v.fract() != 0.0 || v.abs() > i32::MAX as f64 {
        return Err(bad(format!("{what} is not an integer")));
    }
    Ok(v as i32)
}

fn parse_f32(s: &str, what: &str) -> CoreResult<f32> {
    let v: f64 = s.parse().map_err(|_| bad(format!("{what} is not a number")))?;
    let f = v as f32;
    if !f.is_finite() {
        return Err(bad(format!("{what} is not finite")));
    }
    Ok(f)
}

fn int_field(node: roxmltree::Node, name: &str) -> CoreResult<i32> {
    parse_int(text(req(node, name)?), name)
}

pub(super) fn parse(xml: &str) -> CoreResult<Cascade> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| bad(format!("not well-formed XML ({e})")))?;
    let root = doc.root_element();
    if root.tag_name().name() != "opencv_storage" {
        return Err(bad("root element is not <opencv_storage>"));
    }
    let Some(cascade) = child(root, "cascade") else {
        return Err(bad("no <cascade> (the old haartraining format is not supported)"));
    };
    let stage_type = text(req(cascade, "stageType")?);
    if stage_type != "BOOST" {
        return Err(bad(format!("stageType {stage_type:?} is not BOOST")));
    }
    let feature_type = text(req(cascade, "featureType")?);
    if feature_type != "HAAR" {
        return Err(bad(format!("featureType {feature_type:?} is not HAAR")));
    }
    let win_w = int_field(cascade, "width")?;
    let win_h = int_field(cascade, "height")?;
    // The variance window is the window less one pixel on each side, so it needs at least 3x3.
    if !(3..=MAX_WINDOW).contains(&win_w) || !(3..=MAX_WINDOW).contains(&win_h) {
        return Err(bad("window size out of range"));
    }
    if let Some(fp) = child(cascade, "featureParams") {
        if let Some(mc) = child(fp, "maxCatCount") {
            if parse_int(text(mc), "maxCatCount")? != 0 {
                return Err(bad("categorical splits are not supported for HAAR"));
            }
        }
    }

    let features_node = req(cascade, "features")?;
    let mut features = Vec::new();
    for f in items(features_node) {
        let rects_node = req(f, "rects")?;
        let mut rects = [HaarRect::default(); 3];
        let mut n = 0;
        for r in items(rects_node) {
            if n == 3 {
                return Err(bad("a feature has more than 3 rectangles"));
            }
            let vals: Vec<&str> = text(r).split_whitespace().collect();
            if vals.len() != 5 {
                return Err(bad("a feature rectangle needs 5 numbers"));
            }
            let x = parse_int(vals[0], "rect x")?;
            let y = parse_int(vals[1], "rect y")?;
            let w = parse_int(vals[2], "rect width")?;
            let h = parse_int(vals[3], "rect height")?;
            let weight = parse_f32(vals[4], "rect weight")?;
            if x < 0 || y < 0 || w < 0 || h < 0 || x + w > win_w || y + h > win_h {
                return Err(bad("a feature rectangle lies outside the window"));
            }
            rects[n] = HaarRect { x, y, w, h, weight };
            n += 1;
        }
        if n == 0 {
            return Err(bad("a feature has no rectangle"));
        }
        let tilted = match child(f, "tilted") {
            Some(t) => parse_int(text(t), "tilted")? != 0,
            None => false,
        };
        if tilted {
            // Neither cascade DeepFace uses has tilted features; refusing is better than guessing.
            return Err(bad("tilted features are not supported"));
        }
        features.push(Feature { rects });
    }
    if features.is_empty() {
        return Err(bad("no features"));
    }

    let stages_node = req(cascade, "stages")?;
    let mut stages = Vec::new();
    let mut weaks = Vec::new();
    let mut nodes = Vec::new();
    let mut leaves = Vec::new();
    for s in items(stages_node) {
        let threshold = parse_f32(text(req(s, "stageThreshold")?), "stageThreshold")? - THRESHOLD_EPS;
        let first = weaks.len();
        for w in items(req(s, "weakClassifiers")?) {
            let inodes: Vec<&str> = text(req(w, "internalNodes")?).split_whitespace().collect();
            let lvals: Vec<&str> = text(req(w, "leafValues")?).split_whitespace().collect();
            if inodes.is_empty() || inodes.len() % 4 != 0 {
                return Err(bad("internalNodes must hold 4 numbers per node"));
            }
            let count = inodes.len() / 4;
            if lvals.len() != count + 1 {
                return Err(bad("leafValues must hold one more value than there are nodes"));
            }
            let node_ofs = nodes.len();
            let leaf_ofs = leaves.len();
            for (i, q) in inodes.chunks_exact(4).enumerate() {
                let left = parse_int(q[0], "node left")?;
                let right = parse_int(q[1], "node right")?;
                let feature = parse_int(q[2], "node feature")?;
                let threshold = parse_f32(q[3], "node threshold")?;
                // A positive child is a node of the same tree, a non-positive one a leaf. Children
                // after their parent keep every walk finite; OpenCV's trainer writes them that way.
                for c in [left, right] {
                    let ok = if c > 0 { (c as usize) > i && (c as usize) < count } else { (-(c as i64)) as usize <= count };
                    if !ok {
                        return Err(bad("a tree node points outside its tree"));
                    }
                }
                if feature < 0 || feature as usize >= features.len() {
                    return Err(bad("a tree node uses a feature that does not exist"));
                }
                nodes.push(Node { feature: feature as u32, threshold, left, right });
            }
            for v in &lvals {
                leaves.push(parse_f32(v, "leaf value")?);
            }
            weaks.push(Weak { node_ofs: node_ofs as u32, leaf_ofs: leaf_ofs as u32, node_count: count as u32 });
        }
        let count = weaks.len() - first;
        if count == 0 {
            return Err(bad("a stage has no weak classifier"));
        }
        stages.push(Stage { first: first as u32, count: count as u32, threshold });
    }
    if stages.is_empty() {
        return Err(bad("no stages"));
    }
    Ok(Cascade::assemble(win_w, win_h, features, stages, weaks, nodes, leaves))
}
