//! Speed of the `opencv` detector (faces with detectMultiScale3 + eyes) on the deepface images with
//! DeepFace's align=True border. Run through bench/haar/run.sh; compares with
//! bench/results/haar-opencv.json written by tools/reference/opencv_haar.py --bench.

use facecompute_core::detect::opencv::OpenCvDetector;
use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use facecompute_core::pixels::Image;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let data = std::env::var_os("SHARED_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("../shared/data"));
    let weights =
        std::env::var_os("FACECOMPUTE_WEIGHTS_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("../shared/weights"));
    let face = std::fs::read_to_string(weights.join("haarcascade_frontalface_default.xml")).expect("face cascade");
    let eye = std::fs::read_to_string(weights.join("haarcascade_eye.xml")).expect("eye cascade");
    let det = OpenCvDetector::from_xml(&face, &eye).unwrap();
    let runs: usize = std::env::var("RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);

    let mut files: Vec<PathBuf> = std::fs::read_dir(data.join("deepface"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jpg"))
        .collect();
    files.sort();
    let mut images = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let limits = DecodeLimits { max_bytes: usize::MAX, max_pixels: u64::MAX };
        let Ok(im) = decode(&bytes, limits, ChannelOrder::Bgr) else { continue };
        let (w, h, px) = (im.width as usize, im.height as usize, im.data);
        // DeepFace's align=True border: int(0.5*H) top/bottom, int(0.5*W) left/right.
        let (bw, bh) = (w / 2, h / 2);
        let mut b = Image::new((w + 2 * bw) as u32, (h + 2 * bh) as u32, 3);
        let stride = b.stride();
        for y in 0..h {
            let o = (y + bh) * stride + bw * 3;
            b.data[o..o + w * 3].copy_from_slice(&px[y * w * 3..(y + 1) * w * 3]);
        }
        images.push((f.file_name().unwrap().to_string_lossy().to_string(), b));
    }

    let mut report = serde_json::Map::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (label, threads) in [("threads_auto", 0usize), ("threads_1", 1)] {
        let mut total = 0.0;
        let mut per = Vec::new();
        for (name, img) in &images {
            det.detect_with_threads(img, threads).unwrap();
            let mut t: Vec<f64> = (0..runs)
                .map(|_| {
                    let t0 = Instant::now();
                    std::hint::black_box(det.detect_with_threads(img, threads).unwrap());
                    t0.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            t.sort_by(|a, b| a.total_cmp(b));
            let ms = t[t.len() / 2];
            total += ms;
            per.push(serde_json::json!({ "path": format!("deepface/{name}"), "ms": (ms * 1000.0).round() / 1000.0 }));
        }
        let mean = total / images.len() as f64;
        println!("facecompute opencv detector ({label}): {mean:.2} ms/image over {} deepface images", images.len());
        report.insert(label.into(), serde_json::json!({ "ms_per_image": (mean * 1000.0).round() / 1000.0, "per_image": per }));
    }
    let reference = std::fs::read_to_string(root.join("bench/results/haar-opencv.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok());
    if let Some(r) = &reference {
        let theirs = r["ms_per_image"].as_f64().unwrap_or(f64::NAN);
        let ours = report["threads_auto"]["ms_per_image"].as_f64().unwrap();
        let ours1 = report["threads_1"]["ms_per_image"].as_f64().unwrap();
        println!(
            "opencv-python faces+eyes ({} threads): {theirs:.2} ms/image; ratio ours/opencv: {:.2} (auto threads), {:.2} (1 thread)",
            r["threads"], ours / theirs, ours1 / theirs
        );
        report.insert("opencv_python".into(), serde_json::json!({ "ms_per_image": theirs, "threads": r["threads"], "source": "bench/results/haar-opencv.json" }));
        report.insert("ratio_ours_over_opencv".into(), serde_json::json!((ours / theirs * 1000.0).round() / 1000.0));
    } else {
        println!("no bench/results/haar-opencv.json: run tools/reference/opencv_haar.py --bench for the opencv-python figure");
    }
    report.insert("cores".into(), serde_json::json!(cores));
    report.insert("runs_per_image".into(), serde_json::json!(runs));
    report.insert("note".into(), serde_json::json!("faces+eyes (DeepFace OpenCv.detect_faces) on the align=True bordered image; median of runs per image, mean over images"));
    let out = root.join("bench/results/haar.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&serde_json::Value::Object(report)).unwrap() + "\n").unwrap();
    println!("wrote {}", out.display());
}
