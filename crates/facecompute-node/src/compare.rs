//! N-API exports for core::compare. Typed arrays are borrowed, not copied: the `Float32Array`
//! handles hold a reference that keeps the JS buffers alive until the task is dropped. Callers
//! must not write to them while a task runs (src/native/compare.ts documents this).

use crate::guard;
use crate::task::Job;
use crate::types::DistanceMetric;
use facecompute_core::compare::{self, Comparison, Metric, Options};
use facecompute_core::CoreError;
use napi::bindgen_prelude::{AsyncTask, Buffer, Float32Array, Float64Array, Uint32Array};
use napi::JsString;
use napi_derive::napi;

#[napi(object)]
pub struct CompareOutput {
    pub indices: Uint32Array,
    pub distances: Float64Array,
    /// Targets compared (N), also when top-k returned fewer.
    pub count: u32,
}

impl From<Comparison> for CompareOutput {
    fn from(c: Comparison) -> Self {
        CompareOutput { indices: Uint32Array::new(c.indices), distances: Float64Array::new(c.distances), count: c.count as u32 }
    }
}

fn parse_k(top_k: Option<u32>) -> Option<usize> {
    top_k.map(|k| k as usize)
}

/// Copies a base64 string out of V8. Base64 is ASCII, and for an ASCII string (UTF-8 length equal
/// to the character count) the Latin-1 copy is a plain memcpy of V8's one-byte storage, several times
/// faster than UTF-8 encoding. Otherwise the string is copied as UTF-8: a Latin-1 copy would truncate
/// a character such as U+0141 to 'A' and let it pass as valid, while UTF-8 keeps it non-ASCII so the
/// decoder rejects it at its position.
fn base64_bytes(text: JsString) -> napi::Result<Vec<u8>> {
    if text.utf8_len()? == text.latin1_len()? {
        Ok(text.into_latin1()?.take())
    } else {
        Ok(text.into_utf8()?.take())
    }
}

fn comparison_js(c: Comparison) -> napi::Result<CompareOutput> {
    Ok(c.into())
}

/// Distances from `query` to each `dims`-long row of `targets`, on the libuv pool.
#[napi(ts_return_type = "Promise<CompareOutput>")]
pub fn compare_one_to_many(query: Float32Array, targets: Float32Array, dims: u32, metric: DistanceMetric, top_k: Option<u32>) -> AsyncTask<Job<Comparison, CompareOutput>> {
    let k = parse_k(top_k);
    AsyncTask::new(Job::new(move || compare::compare_one_to_many(&query, &targets, dims as usize, metric.into(), k), comparison_js))
}

/// Same, on the JS thread: for small inputs, where a trip through the pool costs more than the work.
#[napi]
pub fn compare_one_to_many_sync(query: Float32Array, targets: Float32Array, dims: u32, metric: DistanceMetric, top_k: Option<u32>) -> guard::Result<CompareOutput> {
    guard::catch(|| compare::compare_one_to_many(&query, &targets, dims as usize, metric.into(), parse_k(top_k))).map(CompareOutput::from)
}

/// Decodes and validates base64 little-endian f32 vectors (N×dims, row-major).
#[napi]
pub fn decode_vectors_b64(b64: JsString, dims: u32) -> guard::Result<Float32Array> {
    let bytes = base64_bytes(b64).map_err(|e| guard::to_napi(CoreError::new(facecompute_core::ErrorCode::InternalError, format!("the base64 string could not be read: {}", e.reason))))?;
    guard::catch(|| compare::decode_vectors_b64(&bytes, dims as usize)).map(Float32Array::new)
}

/// decodeVectorsB64 of base64 text given as bytes (a lifted `targets_b64`, src/http/json-body.ts), on
/// the libuv pool: the same decoder and the same errors, without the event loop holding a string of
/// up to 64 MiB. The Buffer is held by the task, not copied.
#[napi(ts_return_type = "Promise<Float32Array>")]
pub fn decode_vectors_b64_bytes(b64: Buffer, dims: u32) -> AsyncTask<Job<Vec<f32>, Float32Array>> {
    AsyncTask::new(Job::new(move || compare::decode_vectors_b64(&b64, dims as usize), |v| Ok(Float32Array::new(v))))
}

/// One result list per source, flattened: source i's results are `indices[offsets[i]..offsets[i+1]]`
/// (and the same range of `distances`).
#[napi(object)]
pub struct ManyOutput {
    pub offsets: Uint32Array,
    pub indices: Uint32Array,
    pub distances: Float64Array,
    /// Targets compared per source (N).
    pub count: u32,
}

pub(crate) fn flatten(per_source: Vec<Comparison>, count: usize) -> ManyOutput {
    let total: usize = per_source.iter().map(|c| c.indices.len()).sum();
    let mut offsets = Vec::with_capacity(per_source.len() + 1);
    let (mut indices, mut distances) = (Vec::with_capacity(total), Vec::with_capacity(total));
    offsets.push(0u32);
    for c in per_source {
        indices.extend_from_slice(&c.indices);
        distances.extend_from_slice(&c.distances);
        offsets.push(indices.len() as u32);
    }
    ManyOutput { offsets: Uint32Array::new(offsets), indices: Uint32Array::new(indices), distances: Float64Array::new(distances), count: count as u32 }
}

/// Many sources (K×dims) against many targets (N×dims), on the libuv pool: the blocked GEMM screen
/// with exact f64 refinement when `top_k` is given (core::compare::many), else every distance.
#[napi(ts_return_type = "Promise<ManyOutput>")]
pub fn compare_many_to_many(sources: Float32Array, targets: Float32Array, dims: u32, metric: DistanceMetric, top_k: Option<u32>) -> AsyncTask<Job<ManyOutputData, ManyOutput>> {
    let metric: Metric = metric.into();
    let dims = dims as usize;
    let k = parse_k(top_k);
    AsyncTask::new(Job::new(
        move || {
            let count = targets.len().checked_div(dims).unwrap_or(0);
            compare::compare_many_to_many(Options::default(), &sources, &targets, dims, metric, k).map(|r| ManyOutputData(r, count))
        },
        |d| Ok(flatten(d.0, d.1)),
    ))
}

pub struct ManyOutputData(Vec<Comparison>, usize);

/// The JSON text of compare results (one list, or with `offsets` one list per source) with
/// DeepFace's rounding and confidence, written off the JS thread. `confidence`: the model's seven
/// calibration coefficients (w, b, normalizer, max_true, min_true, max_false, min_false), or none.
#[napi(ts_return_type = "Promise<Buffer>")]
pub fn compare_results_json(indices: Uint32Array, distances: Float64Array, offsets: Option<Uint32Array>, threshold: f64, pretuned: f64, confidence: Option<Float64Array>) -> AsyncTask<Job<Vec<u8>, Buffer>> {
    let confidence = match confidence.as_deref() {
        None => Ok(None),
        Some(&[w, b, normalizer, max_true, min_true, max_false, min_false]) => Ok(Some(compare::Confidence { w, b, normalizer, max_true, min_true, max_false, min_false })),
        Some(_) => Err(CoreError::invalid_request("confidence needs 7 coefficients")),
    };
    AsyncTask::new(Job::new(
        move || {
            let decide = compare::Decide { threshold, pretuned, confidence: confidence? };
            if indices.len() != distances.len() {
                return Err(CoreError::invalid_request("indices and distances differ in length"));
            }
            if let Some(o) = offsets.as_deref() {
                let ordered = o.windows(2).all(|w| w[0] <= w[1]);
                if o.first() != Some(&0) || o.last().map(|&x| x as usize) != Some(indices.len()) || !ordered {
                    return Err(CoreError::invalid_request("offsets do not split the results"));
                }
            }
            let mut out = Vec::new();
            compare::write_results(&mut out, &indices, &distances, offsets.as_deref(), &decide);
            Ok(out)
        },
        |bytes| Ok(Buffer::from(bytes)),
    ))
}
