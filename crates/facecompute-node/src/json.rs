//! N-API export of core::json: the syntax check of a large request body, on the libuv pool, before
//! the gateway hands the text to JSON.parse on the event loop (src/http/json-body.ts).

use crate::task::Job;
use facecompute_core::json;
use napi::bindgen_prelude::{AsyncTask, Buffer};
use napi_derive::napi;

/// The outcome of a syntax check: `valid`, or the byte offset and reason of the first error.
#[napi(object)]
pub struct JsonCheck {
    pub valid: bool,
    /// Byte offset of the error in the body (0 when valid).
    pub offset: f64,
    /// serde_json's reason, without a position ("" when valid).
    pub message: String,
}

/// Checks that `body` is one JSON value (serde_json's grammar, nothing kept). The Buffer is held by the
/// task, not copied.
#[napi(ts_return_type = "Promise<JsonCheck>")]
pub fn check_json(body: Buffer) -> AsyncTask<Job<Option<json::JsonSyntaxError>, JsonCheck>> {
    AsyncTask::new(Job::new(move || Ok(json::check(&body).err()), to_js))
}

fn to_js(outcome: Option<json::JsonSyntaxError>) -> napi::Result<JsonCheck> {
    Ok(match outcome {
        None => JsonCheck { valid: true, offset: 0.0, message: String::new() },
        Some(e) => JsonCheck { valid: false, offset: e.offset as f64, message: e.message },
    })
}
