//! Bench-only exports (cargo feature `bench`): yardsticks of bench/compare, read against the
//! comparison kernels, bench/decode's letterbox, and the single pixel steps that the product runs
//! only inside its fused calls (test/image.test.ts checks each against OpenCV's fixtures). The
//! shipped addon (`npm run build:native`) is built without the feature, so neither it nor index.d.ts
//! has them; the bench's own addon (`npm run build:native:bench`, into bench/native/, loaded by
//! bench/lib/bench-native.ts) has. test/architecture.test.ts checks both.

use crate::guard;
use crate::image::{image_js, int_arg, pixel_job, to_core};
use crate::task::Job;
use crate::types::NativeImage;
use facecompute_core::pixels::{self, Image};
use facecompute_core::CoreError;
use napi::bindgen_prelude::AsyncTask;
use crate::types::DistanceMetric;
use facecompute_core::compare::{self, Options};
use napi::bindgen_prelude::Float32Array;
use napi_derive::napi;

/// The sum of every float, read with the comparison's kernel and thread split (the
/// memory-bandwidth yardstick of bench/compare).
#[napi]
pub fn bench_read_sum(data: Float32Array, dims: u32) -> guard::Result<f64> {
    guard::catch(|| Ok(compare::read_bandwidth_sum(&data, dims as usize)))
}

/// Which kernel and how many threads a comparison of `rows` × `dims` uses.
#[napi(object)]
pub struct CompareEngine {
    pub kernel: String,
    pub threads: u32,
}

#[napi]
pub fn bench_compare_engine(rows: u32, dims: u32) -> CompareEngine {
    CompareEngine { kernel: compare::Kernel::best().as_str().to_string(), threads: compare::threads_for(rows as usize, dims.max(1) as usize) as u32 }
}

/// The SIMD kernels this process runs, as `FACECOMPUTE_SIMD` and the CPU choose them: the Haar
/// scan's (`avx512`, `avx2` or `scalar`) and the vector comparison's. Every bench results file
/// names them.
#[napi(object)]
pub struct SimdKernels {
    pub haar: String,
    pub compare: String,
}

#[napi]
pub fn bench_simd_kernels() -> SimdKernels {
    use facecompute_core::{detect::haar, simd};
    SimdKernels { haar: haar::scan_kernel(simd::Kernel::best()).as_str().to_string(), compare: compare::Kernel::best().as_str().to_string() }
}

/// This core's peak f32 FMA rate (GFLOP/s), measured for about `seconds` on the calling thread (the
/// yardstick of the many-to-many kernel in bench/compare).
#[napi]
pub fn bench_peak_f32_gflops(seconds: f64) -> f64 {
    compare::peak_f32_gflops(seconds.clamp(0.01, 5.0))
}

#[napi(object)]
pub struct BenchTime {
    pub wall_seconds: f64,
    /// CPU time of the calling thread (Linux: /proc/thread-self/schedstat); equal to the wall time
    /// elsewhere. On a shared machine it leaves out the time the thread waited for its core.
    pub cpu_seconds: f64,
}

fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// The many-to-many kernel on one thread (the calling one), so its FLOP rate can be set against the
/// single-core peak.
#[napi]
pub fn bench_many_single_thread(sources: Float32Array, targets: Float32Array, dims: u32, metric: DistanceMetric, top_k: u32) -> guard::Result<BenchTime> {
    guard::catch(|| {
        let (t, cpu) = (std::time::Instant::now(), thread_cpu_seconds());
        compare::compare_many_to_many(Options { kernel: None, max_threads: 1 }, &sources, &targets, dims as usize, metric.into(), Some(top_k as usize))?;
        let wall_seconds = t.elapsed().as_secs_f64();
        let cpu_seconds = match (cpu, thread_cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => wall_seconds,
        };
        Ok(BenchTime { wall_seconds, cpu_seconds })
    })
}

/// DeepFace's letterbox of a uint8 image (the product runs it inside `facesToTensor`), on the libuv
/// pool: bench/decode's measure of the pixel core against sharp.
#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn bench_letterbox(img: NativeImage, width: u32, height: u32) -> AsyncTask<Job<Image, NativeImage>> {
    AsyncTask::new(Job::new(
        move || {
            if width == 0 || height == 0 {
                return Err(CoreError::invalid_request("letterbox size must be positive"));
            }
            pixels::letterbox(&to_core(&img)?, width, height)
        },
        image_js,
    ))
}

/// `cv2.copyMakeBorder(BORDER_CONSTANT, 0)`; the product borders as a padded view (deepfaceBorder),
/// and this builds the plain image a view must equal.
#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn bench_copy_make_border(img: NativeImage, top: u32, bottom: u32, left: u32, right: u32) -> AsyncTask<Job<Image, NativeImage>> {
    pixel_job(img, move |i| pixels::copy_make_border(&i, top, bottom, left, right))
}

/// The w×h window at (x, y); parts outside the image are black (the product crops inside extractFaces).
#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn bench_crop_padded(img: NativeImage, x: f64, y: f64, w: f64, h: f64) -> AsyncTask<Job<Image, NativeImage>> {
    pixel_job(img, move |i| pixels::crop_padded(&i, int_arg(x, "x")?, int_arg(y, "y")?, int_arg(w, "w")?, int_arg(h, "h")?))
}

/// getRotationMatrix2D((cx, cy), angleDeg, 1) + warpAffine(INTER_CUBIC, black border) of the whole
/// image; extractFaces rotates only the face's window of it (pixels::rotate_roi).
#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn bench_rotate_image(img: NativeImage, cx: f64, cy: f64, angle_deg: f64) -> AsyncTask<Job<Image, NativeImage>> {
    pixel_job(img, move |i| pixels::rotate(&i, cx, cy, angle_deg))
}

/// cv2.cvtColor(BGR2GRAY) (pixels::bgr_to_gray; the Haar scan computes the same grey in its own pass).
#[napi(ts_return_type = "Promise<NativeImage>")]
pub fn bench_to_gray(img: NativeImage) -> AsyncTask<Job<Image, NativeImage>> {
    pixel_job(img, |i| pixels::bgr_to_gray(&i))
}
