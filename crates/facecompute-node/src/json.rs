//! N-API export of core::json: a large request body's syntax check and value count, and a /compare
//! body's target rows taken out as float32, on the libuv pool, before the gateway hands the rest of
//! the text to JSON.parse on the event loop (src/http/json-body.ts).

use crate::task::Job;
use facecompute_core::json;
use napi::bindgen_prelude::{AsyncTask, Buffer, Float32Array, Uint32Array};
use napi_derive::napi;

/// Rows taken out of the body: `values` row-major, `rowLengths[i]` numbers in row i; the member's
/// value was `body[start..end]`.
#[napi(object)]
pub struct JsonLiftedRows {
    pub values: Float32Array,
    pub row_lengths: Uint32Array,
    /// More rows than `JsonLift.maxRows`: only one more than that were kept.
    pub rows_over: bool,
    pub start: f64,
    pub end: f64,
}

/// A string taken out of the body: its value, quotes included, was `body[start..end]`.
#[napi(object)]
pub struct JsonLiftedText {
    pub start: f64,
    pub end: f64,
}

/// The top-level members to take out: `rows` when it holds rows of numbers, `text` when it is a
/// string of ASCII without escapes.
#[napi(object)]
pub struct JsonLift {
    pub rows: Option<String>,
    pub text: Option<String>,
    /// The most rows the caller accepts; the rows past one more are read, not kept (unbounded when absent).
    pub max_rows: Option<u32>,
}

/// A body read off the loop: not JSON (`valid` false, with the byte offset and serde_json's reason),
/// or JSON with `values` values outside the lifted rows (`over`: more than the budget, counting
/// stopped), and the rows when asked for and present.
#[napi(object)]
pub struct JsonScan {
    pub valid: bool,
    /// Byte offset of the syntax error (0 when valid).
    pub offset: f64,
    /// serde_json's reason, without a position ("" when valid).
    pub message: String,
    pub values: f64,
    pub over: bool,
    pub lifted: Option<JsonLiftedRows>,
    pub lifted_text: Option<JsonLiftedText>,
}

pub enum Outcome {
    NotJson(json::JsonSyntaxError),
    Json(json::Scan),
}

/// Checks `body` (serde_json's grammar, nothing kept), counts its values up to `maxValues`, and takes
/// out the top-level members `lift` names when they hold what it asks for. The Buffer is held by the
/// task, not copied.
#[napi(ts_return_type = "Promise<JsonScan>")]
pub fn scan_json(body: Buffer, lift: JsonLift, max_values: u32) -> AsyncTask<Job<Outcome, JsonScan>> {
    AsyncTask::new(Job::new(
        move || match json::check(&body) {
            Err(e) => Ok(Outcome::NotJson(e)),
            Ok(()) => json::scan(&body, json::Lift { rows: lift.rows.as_deref(), text: lift.text.as_deref(), max_rows: lift.max_rows.map_or(usize::MAX, |n| n as usize) }, max_values as usize).map(Outcome::Json),
        },
        to_js,
    ))
}

fn to_js(outcome: Outcome) -> napi::Result<JsonScan> {
    Ok(match outcome {
        Outcome::NotJson(e) => JsonScan { valid: false, offset: e.offset as f64, message: e.message, values: 0.0, over: false, lifted: None, lifted_text: None },
        Outcome::Json(s) => JsonScan {
            valid: true,
            offset: 0.0,
            message: String::new(),
            values: s.values as f64,
            over: s.over,
            lifted: s.rows.map(|r| JsonLiftedRows { values: Float32Array::new(r.values), row_lengths: Uint32Array::new(r.row_lengths), rows_over: r.rows_over, start: r.start as f64, end: r.end as f64 }),
            lifted_text: s.text.map(|t| JsonLiftedText { start: t.start as f64, end: t.end as f64 }),
        },
    })
}
