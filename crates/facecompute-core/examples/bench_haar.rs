//! Speed of the `opencv` detector (faces with detectMultiScale3 + eyes) on the deepface images with
//! DeepFace's align=True border, per Haar scan kernel this CPU has (AVX-512, AVX2, scalar), and the
//! face scan's work for its roofline. Run through bench/haar/run.sh; compares with
//! bench/results/haar-opencv.json written by tools/reference/opencv_haar.py --bench.
//!
//! Each kernel runs in a child process of its own (`FACECOMPUTE_SIMD` picks it, as it would for the
//! service), the children taking turns for `ROUNDS` rounds so that a change in machine load hits
//! every kernel; per kernel the best round counts. Besides wall time, each child reads its thread's
//! CPU time (/proc/thread-self/stat), which moves less on a shared machine.
//! Environment: RUNS (per image, default 3), ROUNDS (default 2), HAAR_IMAGES (every k-th image so
//! that about this many run; default all), KERNELS (comma list; default every one the CPU has).

use facecompute_core::detect::haar::{scan_kernel, ScanWork};
use facecompute_core::detect::opencv::OpenCvDetector;
use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use facecompute_core::pixels::Image;
use facecompute_core::simd::Kernel;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn load_images(data: &std::path::Path) -> Vec<(String, Image)> {
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
    let want = env_usize("HAAR_IMAGES", images.len()).max(1);
    let every = images.len().div_ceil(want).max(1);
    images.into_iter().step_by(every).collect()
}

/// This thread's CPU time (user + system) in seconds, at the kernel's clock-tick resolution.
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name (which may contain spaces): utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<u64> = rest.split_whitespace().skip(11).take(2).filter_map(|v| v.parse().ok()).collect();
    f.iter().sum::<u64>() as f64 / 100.0
}

/// One kernel's pass over the images (the process's kernel, `FACECOMPUTE_SIMD`): a JSON line.
fn child(det: &OpenCvDetector, images: &[(String, Image)], runs: usize) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("kernel".into(), json!(scan_kernel(Kernel::best()).as_str()));
    for (label, threads) in [("threads_1", 1usize), ("threads_auto", 0)] {
        let (mut total, mut per) = (0.0, Vec::new());
        let cpu0 = thread_cpu_s();
        for (name, img) in images {
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
            per.push(json!({ "path": format!("deepface/{name}"), "ms": (ms * 1000.0).round() / 1000.0 }));
        }
        let mut cell = json!({ "ms_per_image": total / images.len() as f64, "per_image": per });
        if threads == 1 {
            // Every detection of the pass (warm-up included) ran on this thread.
            cell["cpu_ms_per_image"] = json!((thread_cpu_s() - cpu0) * 1000.0 / (images.len() * (runs + 1)) as f64);
        }
        out.insert(label.into(), cell);
    }
    Value::Object(out)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_mhz() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let v: Vec<f64> = s.lines().filter(|l| l.starts_with("cpu MHz")).filter_map(|l| l.split_once(':')?.1.trim().parse().ok()).collect();
    v.iter().cloned().reduce(f64::max)
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let data = std::env::var_os("SHARED_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("../shared/data"));
    let weights =
        std::env::var_os("FACECOMPUTE_WEIGHTS_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("../shared/weights"));
    let face = std::fs::read_to_string(weights.join("haarcascade_frontalface_default.xml")).expect("face cascade");
    let eye = std::fs::read_to_string(weights.join("haarcascade_eye.xml")).expect("eye cascade");
    let det = OpenCvDetector::from_xml(&face, &eye).unwrap();
    let runs = env_usize("RUNS", 3);
    let images = load_images(&data);
    if std::env::var_os("BENCH_HAAR_CHILD").is_some() {
        println!("{}", child(&det, &images, runs));
        return;
    }

    // The kernels: every distinct scan this CPU has, widest first.
    let mut kernels: Vec<Kernel> = Kernel::supported().into_iter().map(scan_kernel).collect();
    kernels.dedup();
    if let Ok(only) = std::env::var("KERNELS") {
        kernels.retain(|k| only.split(',').any(|o| o == k.as_str()));
    }
    let rounds = env_usize("ROUNDS", 2).max(1);
    let mut best: Vec<Option<Value>> = vec![None; kernels.len()];
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    for round in 0..rounds {
        for &i in &order {
            let k = kernels[i];
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env("BENCH_HAAR_CHILD", "1")
                .env("FACECOMPUTE_SIMD", k.as_str())
                .output()
                .expect("the bench's child process");
            assert!(out.status.success(), "{} child failed: {}", k.as_str(), String::from_utf8_lossy(&out.stderr));
            let v: Value = serde_json::from_slice(&out.stdout).expect("the child's JSON line");
            assert_eq!(v["kernel"], k.as_str(), "FACECOMPUTE_SIMD={} ran another kernel", k.as_str());
            let t = |v: &Value| v["threads_1"]["cpu_ms_per_image"].as_f64().unwrap_or(f64::INFINITY);
            println!(
                "round {round}: {:>6}: {:.2} ms/image on one thread ({:.2} CPU ms), {:.2} ms/image with auto threads",
                k.as_str(),
                v["threads_1"]["ms_per_image"].as_f64().unwrap(),
                t(&v),
                v["threads_auto"]["ms_per_image"].as_f64().unwrap()
            );
            if best[i].as_ref().is_none_or(|b| t(&v) < t(b)) {
                best[i] = Some(v);
            }
        }
        order.reverse();
    }

    // The roofline's inputs: what the face scan evaluates, the same for every kernel.
    let mut work = ScanWork::default();
    for (_, img) in &images {
        let w = det.face_scan_work(img).unwrap();
        work.windows += w.windows;
        work.normalised += w.normalised;
        work.stumps += w.stumps;
        work.corner_reads += w.corner_reads;
        work.integral_bytes += w.integral_bytes;
    }
    let n = images.len() as f64;
    let per_image = json!({
        "windows": work.windows as f64 / n,
        "normalised_windows": work.normalised as f64 / n,
        "stumps": work.stumps as f64 / n,
        "stumps_per_normalised_window": work.stumps as f64 / work.normalised.max(1) as f64,
        "corner_reads": work.corner_reads as f64 / n,
        "corner_bytes": 4.0 * work.corner_reads as f64 / n,
        "integral_bytes_upper_bound": work.integral_bytes as f64 / n,
    });
    println!("face scan per image: {per_image}");

    let mut report = serde_json::Map::new();
    report.insert("cpu".into(), json!(cpu_model()));
    report.insert("cpu_mhz".into(), json!(cpu_mhz()));
    report.insert("cores".into(), json!(std::thread::available_parallelism().map_or(1, |n| n.get())));
    report.insert("kernel".into(), json!(scan_kernel(Kernel::best()).as_str()));
    report.insert("kernels_measured".into(), json!(kernels.iter().map(|k| k.as_str()).collect::<Vec<_>>()));
    let mut by_kernel = serde_json::Map::new();
    for (k, v) in kernels.iter().zip(best) {
        let mut v = v.unwrap();
        // Useful work per CPU second: stumps and corner bytes of the face scan (the eye scans on
        // face crops add under 1% of the windows).
        let cpu_s = v["threads_1"]["cpu_ms_per_image"].as_f64().unwrap() / 1000.0;
        v["stumps_per_ns"] = json!(work.stumps as f64 / n / cpu_s / 1e9);
        v["corner_gb_per_s"] = json!(4.0 * work.corner_reads as f64 / n / cpu_s / 1e9);
        by_kernel.insert(k.as_str().into(), v);
    }
    // The committed figure for the default kernel stays where earlier readers look.
    let default = by_kernel.get(scan_kernel(Kernel::best()).as_str()).cloned().unwrap_or(Value::Null);
    report.insert("threads_auto".into(), default["threads_auto"].clone());
    report.insert("threads_1".into(), default["threads_1"].clone());
    report.insert("kernels".into(), Value::Object(by_kernel));
    report.insert("face_scan_work_per_image".into(), per_image);
    let reference = std::fs::read_to_string(root.join("bench/results/haar-opencv.json"))
        .ok()
        .and_then(|s| serde_json::from_str::<Value>(&s).ok());
    if let Some(r) = &reference {
        let theirs = r["ms_per_image"].as_f64().unwrap_or(f64::NAN);
        let ours = report["threads_auto"]["ms_per_image"].as_f64().unwrap_or(f64::NAN);
        let ours1 = report["threads_1"]["ms_per_image"].as_f64().unwrap_or(f64::NAN);
        println!(
            "opencv-python faces+eyes ({} threads): {theirs:.2} ms/image; ratio ours/opencv: {:.2} (auto threads), {:.2} (1 thread)",
            r["threads"], ours / theirs, ours1 / theirs
        );
        report.insert("opencv_python".into(), json!({ "ms_per_image": theirs, "threads": r["threads"], "source": "bench/results/haar-opencv.json" }));
        report.insert("ratio_ours_over_opencv".into(), json!((ours / theirs * 1000.0).round() / 1000.0));
    } else {
        println!("no bench/results/haar-opencv.json: run tools/reference/opencv_haar.py --bench for the opencv-python figure");
    }
    report.insert("images".into(), json!(images.len()));
    report.insert("runs_per_image".into(), json!(runs));
    report.insert("rounds".into(), json!(rounds));
    report.insert("loadavg".into(), json!(std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()));
    report.insert("note".into(), json!("faces+eyes (DeepFace OpenCv.detect_faces) on the align=True bordered image; median of runs per image, mean over images; per kernel the round with the least CPU per image (FACECOMPUTE_SIMD per child process)"));
    let out = std::env::var_os("HAAR_OUT").map(PathBuf::from).unwrap_or_else(|| root.join("bench/results/haar.json"));
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&Value::Object(report)).unwrap() + "\n").unwrap();
    println!("wrote {}", out.display());
}
