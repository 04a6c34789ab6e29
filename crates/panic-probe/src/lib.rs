//! Test-only module (never shipped, never loaded by the service): the binding's panic boundary,
//! compiled from the binding's own source files, around closures that panic on purpose. The
//! binding has no export that panics, so a test cannot reach `guard::catch`'s panic arm through
//! it; this module compiles the same `guard.rs` and `task.rs`, with the workspace's release
//! profile (`panic = "unwind"`), so test/panic-guard.test.ts checks in a Node process that a panic
//! on the JS thread or on the libuv pool comes back as `internal_error` and the process goes on.

#[path = "../../facecompute-node/src/guard.rs"]
mod guard;
#[path = "../../facecompute-node/src/task.rs"]
mod task;

use facecompute_core::CoreError;
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use task::Job;

/// A panic inside a synchronous export's body, on the JS thread.
#[napi]
pub fn panic_sync(message: String) -> guard::Result<u32> {
    guard::catch(|| -> Result<u32, CoreError> { panic!("{message}") })
}

/// A panic inside an AsyncTask's work, on a libuv pool thread (where every heavy export runs).
#[napi(ts_return_type = "Promise<number>")]
pub fn panic_async(message: String) -> AsyncTask<Job<u32, u32>> {
    AsyncTask::new(Job::new(move || -> Result<u32, CoreError> { panic!("{message}") }, Ok))
}

/// The same task without a panic, so that the test can tell the boundary from a task that never runs.
#[napi(ts_return_type = "Promise<number>")]
pub fn answer_async(value: u32) -> AsyncTask<Job<u32, u32>> {
    AsyncTask::new(Job::new(move || Ok(value), Ok))
}
