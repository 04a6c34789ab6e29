//! DeepFace's extract_face steps (border, expand, padded sub-image, eye rotation, projected crop,
//! reporting) against a cv2 transcription of detection.py (extract.tsv).

mod common;
use common::*;
use facecompute_core::align::{deepface_border, extract_faces, Detection, ExtractOptions};
use facecompute_core::pixels::crop_clipped;

fn parse_point(a: &str, b: &str) -> Option<(f64, f64)> {
    (a != "-").then(|| (a.parse().unwrap(), b.parse().unwrap()))
}

#[test]
fn extract_faces_matches_deepface() {
    let full = decode_bgr(&std::fs::read(shared().join("deepface/img11.jpg")).unwrap());
    let img = crop_clipped(&full, 150, 200, 450, 600);
    let table = std::fs::read_to_string(fixtures().join("extract.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = table.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').collect()).collect();
    let mut compared = 0;
    for (align, expand) in [("1", "0"), ("1", "25"), ("0", "0"), ("0", "10")] {
        let dets: Vec<Detection> = rows
            .iter()
            .filter(|r| r[0] == "det" && r[1] == align && r[2] == expand)
            .map(|r| {
                let v: Vec<&str> = r[3].split(' ').collect();
                let n = |i: usize| v[i].parse::<f64>().unwrap();
                Detection {
                    x: n(0),
                    y: n(1),
                    w: n(2),
                    h: n(3),
                    left_eye: parse_point(v[4], v[5]),
                    right_eye: parse_point(v[6], v[7]),
                    confidence: n(8),
                    ..Default::default()
                }
            })
            .collect();
        let (work, top, left) = if align == "1" { deepface_border(&img).unwrap() } else { (img.clone(), 0, 0) };
        let opts = ExtractOptions {
            align: align == "1",
            expand_percentage: expand.parse().unwrap(),
            border_top: top as i64,
            border_left: left as i64,
            original_width: img.width as i64,
            original_height: img.height as i64,
        };
        let faces = extract_faces(&work, &dets, &opts).unwrap();
        let expected: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "face" && r[1] == align && r[2] == expand).collect();
        assert_eq!(faces.len(), expected.len(), "align={align} expand={expand}");
        for (got, exp) in faces.iter().zip(expected) {
            let v: Vec<&str> = exp[5].split(' ').collect();
            let n = |i: usize| v[i].parse::<i64>().unwrap();
            let a = &got.area;
            assert_eq!((a.x, a.y, a.w, a.h), (n(0), n(1), n(2), n(3)), "{}", exp[4]);
            let pt = |p: Option<(i64, i64)>| p.map(|(x, y)| format!("{x} {y}")).unwrap_or("- -".into());
            assert_eq!(pt(a.left_eye), format!("{} {}", v[4], v[5]), "{} left eye", exp[4]);
            assert_eq!(pt(a.right_eye), format!("{} {}", v[6], v[7]), "{} right eye", exp[4]);
            assert_eq!(got.confidence, v[8].parse::<f64>().unwrap(), "{}", exp[4]);
            let reference = load_png(&fixtures().join("extract").join(exp[4]));
            let (max, n) = diff(&got.face, &reference, exp[4]);
            assert!(max <= 1, "{}: max abs diff {max} ({n} samples)", exp[4]);
            compared += 1;
        }
    }
    assert!(compared >= 20);
}
