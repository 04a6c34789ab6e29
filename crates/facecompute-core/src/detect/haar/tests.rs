use super::*;
use std::path::PathBuf;

fn weights_dir() -> PathBuf {
    std::env::var_os("FACECOMPUTE_WEIGHTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/weights"))
}

fn load(name: &str) -> Cascade {
    let xml = std::fs::read_to_string(weights_dir().join(name)).expect("cascade file in the shared weights");
    Cascade::from_xml(&xml).expect("cascade parses")
}

const TINY: &str = r#"<?xml version="1.0"?>
<opencv_storage><cascade><stageType>BOOST</stageType><featureType>HAAR</featureType>
<height>4</height><width>4</width><stageNum>1</stageNum>
<stages><_><maxWeakCount>1</maxWeakCount><stageThreshold>-1.</stageThreshold>
<weakClassifiers><_><internalNodes>0 -1 0 0.5</internalNodes><leafValues>-2. 1.</leafValues></_></weakClassifiers></_></stages>
<features><_><rects><_>0 0 4 2 -1.</_><_>0 2 4 2 1.</_></rects></_></features></cascade></opencv_storage>"#;

#[test]
fn parses_the_shipped_cascades() {
    let face = load("haarcascade_frontalface_default.xml");
    assert_eq!(face.window_size(), (24, 24));
    assert_eq!(face.stage_count(), 25);
    assert!(face.stumps.is_some());
    assert_eq!(face.stages[0].count, 9);
    // -5.0425500869750977e+00 as f32, less OpenCV's 1e-5.
    assert_eq!(face.stages[0].threshold, -5.042_550_087f32 - 1e-5);
    let eye = load("haarcascade_eye.xml");
    assert_eq!(eye.window_size(), (20, 20));
    assert_eq!(eye.stage_count(), 24);
}

#[test]
fn malformed_xml_is_an_error_not_a_panic() {
    let cases = [
        "",
        "<opencv_storage>",
        "<opencv_storage></opencv_storage>",
        "<other><cascade/></other>",
        &TINY.replace("HAAR", "LBP"),
        &TINY.replace("<width>4</width>", "<width>-4</width>"),
        &TINY.replace("<width>4</width>", "<width>4.5</width>"),
        &TINY.replace("0 -1 0 0.5", "0 -1 7 0.5"),
        &TINY.replace("0 -1 0 0.5", "0 -1 0"),
        &TINY.replace("0 -1 0 0.5", "0 5 0 0.5"),
        &TINY.replace("0 -1 0 0.5", "0 -1 0 nan"),
        &TINY.replace("-2. 1.", "-2."),
        &TINY.replace("0 2 4 2 1.", "0 2 4 3 1."),
        &TINY.replace("0 2 4 2 1.", "0 2 4 1."),
        &TINY.replace("</rects>", "</rects><tilted>1</tilted>"),
        &TINY.replace("<stageThreshold>-1.</stageThreshold>", ""),
        &TINY.replace("<_><internalNodes>0 -1 0 0.5</internalNodes><leafValues>-2. 1.</leafValues></_>", ""),
    ];
    for (i, xml) in cases.iter().enumerate() {
        let err = Cascade::from_xml(xml).expect_err(&format!("case {i} must fail"));
        assert_eq!(err.code, crate::ErrorCode::InternalError, "case {i}");
    }
    assert!(Cascade::from_xml(TINY).is_ok());
}

#[test]
fn tiny_cascade_fires_on_a_bright_lower_half() {
    // One stump: lower half minus upper half, normalised by the window's spread, must exceed 0.5.
    let c = Cascade::from_xml(TINY).unwrap();
    let (w, h) = (12usize, 12usize);
    let mut img = vec![0u8; w * h];
    for y in 0..h {
        for x in 0..w {
            img[y * w + x] = if y >= 6 { 200 } else { 10 } + ((x * 7 + y * 3) % 5) as u8;
        }
    }
    let opts = DetectOptions { min_neighbors: 0, ..Default::default() };
    let found = c.detect_multi_scale3(Gray { width: w, height: h, data: &img }, &opts).unwrap();
    assert!(!found.is_empty());
    assert!(found.iter().all(|d| d.reject_level == 1 && d.level_weight == 1.0));
    // A flat image is rejected by the variance test before any stage.
    let flat = vec![90u8; w * h];
    assert!(c.detect_multi_scale3(Gray { width: w, height: h, data: &flat }, &opts).unwrap().is_empty());
}

#[test]
fn bad_options_and_images_are_errors() {
    let c = Cascade::from_xml(TINY).unwrap();
    let img = vec![0u8; 100];
    let g = Gray { width: 10, height: 10, data: &img };
    for sf in [1.0, 0.5, f64::NAN, f64::INFINITY, 1.0 + 1e-9] {
        assert!(c.detect_multi_scale(g, &DetectOptions { scale_factor: sf, ..Default::default() }).is_err(), "{sf}");
    }
    assert!(c.detect_multi_scale(Gray { width: 10, height: 11, data: &img }, &Default::default()).is_err());
    // Smaller than the window: nothing, as in OpenCV.
    let small = Gray { width: 3, height: 3, data: &img[..9] };
    assert!(c.detect_multi_scale(small, &Default::default()).unwrap().is_empty());
}

#[test]
fn scale_list_follows_opencv_rounding() {
    let face = load("haarcascade_frontalface_default.xml");
    let img = vec![0u8; 100 * 60];
    let s = face.scales(Gray { width: 100, height: 60, data: &img }, &DetectOptions::default()).unwrap();
    // Windows 24, 26, 29, 32, 35, 39, 43, 47, 51, 57 fit in 60 rows; 1.1^10 * 24 = 62.2 does not.
    assert_eq!(s.len(), 10);
    assert_eq!((s[1].w, s[1].h), (91, 55));
    assert_eq!(s[0].ystep, 2);
    let img = vec![0u8; 200 * 200];
    let s = face.scales(Gray { width: 200, height: 200, data: &img }, &DetectOptions::default()).unwrap();
    assert_eq!(s.iter().filter(|s| s.ystep == 1).count(), s.iter().filter(|s| s.scale >= 2.0).count());
    assert!(s.iter().any(|s| s.ystep == 1));
    let lim = DetectOptions { min_size: (30, 30), max_size: (50, 50), ..Default::default() };
    let s = face.scales(Gray { width: 200, height: 200, data: &img }, &lim).unwrap();
    let wins: Vec<i32> = s.iter().map(|s| cv_round_f32(24.0 * s.scale)).collect();
    assert_eq!(wins, vec![32, 35, 39, 43, 47]);
}

fn data_dir() -> PathBuf {
    std::env::var_os("SHARED_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"))
}

/// AT&T face s1/1 (8-bit PGM, no decoder involved) with DeepFace's align=True border, grey.
fn att_face_bordered() -> (usize, usize, Vec<u8>) {
    let buf = std::fs::read(data_dir().join("robustness/grayscale/att_faces__s1__1.pgm")).unwrap();
    let head = b"P5 92 112 255\n";
    assert_eq!(&buf[..head.len()], head);
    let px = &buf[head.len()..head.len() + 92 * 112];
    let (w, h, bw, bh) = (92 + 2 * 46, 112 + 2 * 56, 46, 56);
    let mut out = vec![0u8; w * h];
    for y in 0..112 {
        out[(y + bh) * w + bw..(y + bh) * w + bw + 92].copy_from_slice(&px[y * 92..(y + 1) * 92]);
    }
    (w, h, out)
}

#[test]
fn att_face_matches_opencv_python_with_any_thread_count() {
    // opencv-python 4.9.0 detectMultiScale3(bordered, 1.1, 10, outputRejectLevels=True) gives
    // [[53, 81, 81, 81]], rejectLevels [25], levelWeights [5.122573173022829]
    // (test/fixtures/opencv_haar.json, robustness/grayscale/att_faces__s1__1.pgm).
    let face = load("haarcascade_frontalface_default.xml");
    let (w, h, img) = att_face_bordered();
    let g = Gray { width: w, height: h, data: &img };
    for (threads, kernel) in [1, 2, 5].into_iter().flat_map(|t| scan_kernels().into_iter().map(move |k| (t, k))) {
        let opts = DetectOptions { scale_factor: 1.1, min_neighbors: 10, threads, ..Default::default() };
        let found = face.detect_multi_scale3_with(g, &opts, kernel).unwrap();
        assert_eq!(found.len(), 1, "threads {threads}, {kernel:?}");
        assert_eq!(found[0].rect, Rect { x: 53, y: 81, w: 81, h: 81 });
        assert_eq!(found[0].reject_level, 25);
        assert_eq!(found[0].level_weight, 5.122573173022829);
    }
}

#[test]
fn shipped_cascades_have_order_free_stage_sums() {
    // What lets the dense scan evaluate two-rectangle stumps first.
    let order_free = |c: Cascade| leaf_sums_exact(&c.stages, c.stumps.as_ref().unwrap());
    assert!(order_free(load("haarcascade_frontalface_default.xml")));
    assert!(order_free(load("haarcascade_eye.xml")));
    // Leaves 2^-40 apart from a leaf of 2^20 cannot all be summed exactly in f64.
    let wide = TINY.replace("<leafValues>-2. 1.</leafValues>", "<leafValues>1048576. 9.094947017729282e-13</leafValues>");
    assert!(!order_free(Cascade::from_xml(&wide).unwrap()));
}

/// Images the scans disagree on first, if they ever do: textured noise of odd sizes (partial
/// vectors at the end of rows), with flat patches and a black border like DeepFace's, and the
/// AT&T face.
fn scan_inputs() -> Vec<(usize, usize, Vec<u8>)> {
    let mut out = vec![att_face_bordered()];
    let mut seed = 0x2545_f491_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for (w, h) in [(61usize, 47usize), (130, 97), (203, 151)] {
        let mut img = vec![0u8; w * h];
        for y in h / 6..h - h / 6 {
            for x in w / 5..w - w / 5 {
                // Smooth blobs plus noise: many windows pass a few stages, some pass many.
                let blob = ((x as f32 / 9.0).sin() * (y as f32 / 7.0).cos() * 90.0 + 128.0) as i32;
                let v = if (x / 16 + y / 16) % 5 == 0 { 77 } else { blob + (next() % 41) as i32 - 20 };
                img[y * w + x] = v.clamp(0, 255) as u8;
            }
        }
        out.push((w, h, img));
    }
    out
}

/// Every Haar scan this CPU can run, each once: AVX-512, AVX2, scalar (the reference).
fn scan_kernels() -> Vec<Kernel> {
    let mut out: Vec<Kernel> = Kernel::supported().into_iter().map(scan_kernel).collect();
    out.dedup();
    out
}

#[test]
fn scan_kernels_follow_the_cpu() {
    let have = scan_kernels();
    assert_eq!(have.last(), Some(&Kernel::Scalar));
    assert_eq!(have.contains(&Kernel::Avx2), Kernel::Avx2.is_supported());
    assert_eq!(have.contains(&Kernel::Avx512), Kernel::Avx512.is_supported() && Kernel::Avx2.is_supported());
    // A narrower kernel asked for is the one that runs (FACECOMPUTE_SIMD's path).
    for k in &have {
        assert_eq!(scan_kernel(*k), *k);
    }
}

#[test]
fn dense_scans_find_the_windows_of_the_scalar_scan_bit_for_bit() {
    let kernels: Vec<Kernel> = scan_kernels().into_iter().filter(|k| *k != Kernel::Scalar).collect();
    if kernels.is_empty() {
        eprintln!("no AVX2 on this CPU: only the scalar scan runs here");
        return;
    }
    let face = load("haarcascade_frontalface_default.xml");
    let eye = load("haarcascade_eye.xml");
    let mut in_order = face.clone();
    in_order.dense_plan = dense_plan(&in_order.features, &in_order.stages, in_order.stumps.as_deref(), false);
    // One stump: about half of the windows pass, so OpenCV's skip after a first-stage failure
    // decides many hits.
    let tiny = Cascade::from_xml(TINY).unwrap();
    let mut windows = 0;
    for (w, h, img) in scan_inputs() {
        let g = Gray { width: w, height: h, data: &img };
        for (name, c) in [("face", &face), ("eye", &eye), ("face, stumps in order", &in_order), ("tiny", &tiny)] {
            for sf in [1.1, 1.3] {
                let opts = DetectOptions { scale_factor: sf, threads: 1, ..Default::default() };
                let scalar = c.candidates(g, &opts, Kernel::Scalar).unwrap();
                let bits = |v: &[(Rect, f64)]| v.iter().map(|(r, wt)| (*r, wt.to_bits())).collect::<Vec<_>>();
                for &kernel in &kernels {
                    let dense = c.candidates(g, &opts, kernel).unwrap();
                    assert_eq!(bits(&dense), bits(&scalar), "{kernel:?}: {name} on {w}x{h}, scale factor {sf}");
                }
                windows += scalar.len();
            }
        }
    }
    // The inputs must exercise hits, not only rejections.
    assert!(windows > 20, "only {windows} windows passed every stage");
}

#[test]
fn traced_detection_is_the_detection_and_each_box_the_mean_of_its_group() {
    let face = load("haarcascade_frontalface_default.xml");
    let (w, h, img) = att_face_bordered();
    let g = Gray { width: w, height: h, data: &img };
    let opts = DetectOptions { scale_factor: 1.1, min_neighbors: 10, threads: 1, ..Default::default() };
    let t = face.detect_multi_scale3_traced(g, &opts).unwrap();
    assert_eq!(t.boxes.iter().map(|b| b.0).collect::<Vec<_>>(), face.detect_multi_scale3(g, &opts).unwrap());
    // The raw windows are every candidate of the scan, in its order, with their groups.
    let cands = face.candidates(g, &opts, Kernel::Scalar).unwrap();
    assert_eq!(t.windows.iter().map(|w| (w.rect, w.weight)).collect::<Vec<_>>(), cands);
    assert!(t.windows.len() > 10, "{} windows", t.windows.len());
    // Groups are numbered by their first window: the first window opens group 0, and a window's
    // group never exceeds the number of groups opened before it.
    let mut opened = 0;
    for w in &t.windows {
        assert!(w.group <= opened);
        if w.group == opened {
            opened += 1;
        }
    }
    for (det, group) in &t.boxes {
        let members: Vec<Rect> = t.windows.iter().filter(|w| w.group == *group).map(|w| w.rect).collect();
        assert!(members.len() as i32 > opts.min_neighbors, "a box needs more than min_neighbors windows");
        // OpenCV: (float)sum * (1.f / n), rounded half to even.
        let mean = |f: fn(&Rect) -> i32| ((members.iter().map(f).sum::<i32>() as f32) * (1.0 / members.len() as f32)).round_ties_even() as i32;
        assert_eq!(det.rect, Rect { x: mean(|r| r.x), y: mean(|r| r.y), w: mean(|r| r.w), h: mean(|r| r.h) });
        // The level weight is the largest last-stage sum of the group.
        let best = t.windows.iter().filter(|w| w.group == *group).map(|w| w.weight).fold(f64::MIN, f64::max);
        assert_eq!(det.level_weight, best);
    }
}

/// The coefficients `dense::Shape`'s formulas give the points of `shape_of`, in order.
fn shape_coefficients(shape: dense::Shape) -> &'static [i64] {
    match shape {
        dense::Shape::Thirds => &[1, 1, -1, -1, 3, 3, -3, -3],
        dense::Shape::Halves => &[1, 1, -1, -1, 2, -2],
        dense::Shape::Quarters => &[1, 1, 1, 1, -2, -2, -2, -2, 4],
        dense::Shape::QuartersNeg => &[-1, -1, -1, -1, 2, 2, 2, 2, -4],
        dense::Shape::Two | dense::Shape::Three => &[],
    }
}

#[test]
fn shipped_cascades_scan_with_integer_shapes_and_sums() {
    // Every feature of both cascades has one of the integer shapes, and every stage sums in
    // integers: without them the dense scan is slower, not wrong, so only this test sees it.
    for (name, stumps) in [("haarcascade_frontalface_default.xml", 2913), ("haarcascade_eye.xml", 1066)] {
        let c = load(name);
        let plan = c.dense_plan.as_ref().unwrap();
        let mut count = [0usize; 6];
        for st in &plan.stages {
            for (total, n) in count.iter_mut().zip(st.count) {
                *total += n;
            }
        }
        assert_eq!(count.iter().sum::<usize>(), stumps, "{name}");
        assert_eq!(count[4] + count[5], 0, "{name}: {count:?}");
        assert!(count[0] > 0 && count[1] > 0 && count[2] + count[3] > 0, "{name}: {count:?}");
        assert_eq!(plan.deltas.len(), stumps, "{name}: integer stage sums");
    }
}

#[test]
fn a_levels_stumps_from_the_templates_are_its_layout_offsets() {
    for name in ["haarcascade_frontalface_default.xml", "haarcascade_eye.xml"] {
        let c = load(name);
        let plan = c.dense_plan.as_ref().unwrap();
        let stumps = c.stumps.as_ref().unwrap();
        for step in [1usize, 2] {
            for plane in [17usize, 64, 333, 4099] {
                let layout = dense::Layout { step, plane, stride: plane * step };
                let mut got = Vec::new();
                plan.stumps_for(&layout, &mut got);
                assert_eq!(got.len(), plan.order.len(), "{name}");
                for (k, ((sp, &i), points)) in got.iter().zip(&plan.order).zip(&plan.points).enumerate() {
                    let want = points.map(|(dx, dy)| layout.offset(dx as usize, dy as usize) as u32);
                    assert_eq!(sp.ofs, want, "{name} step {step} plane {plane} stump {k}");
                    let st = &stumps[i as usize];
                    assert_eq!((sp.threshold, sp.left, sp.right), (st.threshold, st.left, st.right), "{name} stump {k}");
                    assert_eq!(sp.delta, plan.deltas.get(k).copied().unwrap_or_default(), "{name} stump {k}");
                }
            }
        }
    }
}

#[test]
fn integer_shapes_read_the_points_their_formula_weighs() {
    // For every feature of the face cascade, the shape's formula over its points is OpenCV's
    // `sum of weight * (a - b - c + d)` for arbitrary integral values.
    let face = load("haarcascade_frontalface_default.xml");
    let value = |(x, y): (u16, u16)| (x as i64 * 7919 + y as i64 * 104_729) % 65_521 - 30_000;
    for f in &face.features {
        let (shape, points) = shape_of(f);
        let coef = shape_coefficients(shape);
        assert!(!coef.is_empty(), "{f:?} has no integer shape");
        let ours: i64 = coef.iter().zip(points).map(|(c, p)| c * value(p)).sum();
        let rects = rect_points(f);
        let theirs: i64 = (0..3)
            .map(|k| {
                let v = |j: usize| value(rects[k * 4 + j]);
                f.rects[k].weight as i64 * (v(0) - v(1) - v(2) + v(3))
            })
            .sum();
        assert_eq!(ours, theirs, "{f:?} as {shape:?}");
    }
    // Fractional weights, or sums that may reach 2^24, keep OpenCV's f32 arithmetic.
    let mut f = face.features[0].clone();
    f.rects[1].weight = 2.5;
    assert!(matches!(shape_of(&f).0, dense::Shape::Two | dense::Shape::Three));
    let mut f = face.features[0].clone();
    f.rects[0] = HaarRect { x: 0, y: 0, w: 300, h: 300, weight: -1.0 };
    assert!(matches!(shape_of(&f).0, dense::Shape::Two | dense::Shape::Three));
}

#[test]
fn integer_stage_sums_are_the_in_order_f64_sums() {
    // Leaves from 2^-20 to 40 and of both signs: every choice of leaves gives, bit for bit, the sum
    // the scalar scan adds up in f64, and the base and deltas span both counters.
    let leaves: Vec<(f32, f32)> = vec![
        (0.812_9, -0.5),
        (-1.0 / 1_048_576.0, 3.25),
        (40.0, -39.999_996),
        (0.1, 0.2),
        (-7.0, 0.0),
        (1.0e-3, -2.5e-4),
        (-0.333_333_34, 0.666_666_7),
        (12.5, -12.5),
        (0.0, 0.0),
        (5.0e-5, 17.0),
    ];
    let int = IntSums::new(&leaves).expect("these sums fit the counters");
    assert!(int.deltas.iter().any(|d| d[0] != 0) && int.deltas.iter().any(|d| d[1] != 0));
    for choice in 0u32..1 << leaves.len() {
        let (mut f64_sum, mut high, mut low) = (0.0f64, int.base[0], int.base[1]);
        for (i, l) in leaves.iter().enumerate() {
            let left = choice >> i & 1 == 1;
            f64_sum += if left { l.0 } else { l.1 } as f64;
            if left {
                high += int.deltas[i][0];
                low += int.deltas[i][1];
            }
        }
        let ours = high as f64 * int.units[0] + low as f64 * int.units[1];
        assert_eq!(ours.to_bits(), f64_sum.to_bits(), "choice {choice:#b}");
    }
    // Leaves 2^-40 apart from 2^20 need more than the two counters' 53 bits.
    assert!(IntSums::new(&[(1_048_576.0, 9.094_947e-13)]).is_none());
}
