//! Error and panic boundary between the core and Node. A core error reaches JS as an `Error` whose
//! `code` is the core's stable code (`invalid_image`, …) and whose `message` is its detail; a panic
//! is caught here and reaches JS as `internal_error`, never unwinding into Node.

use facecompute_core::{CoreError, ErrorCode};
use napi::bindgen_prelude::{JsError, Unknown};
use napi::Env;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A stable error code as napi's error status: napi sets a thrown error's `code` to it.
pub struct Code(pub ErrorCode);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

/// What a synchronous export returns: a value, or an error carrying its stable code.
pub type Result<T> = napi::Result<T, Code>;

pub fn to_napi(err: CoreError) -> napi::Error<Code> {
    napi::Error::new(Code(err.code), err.detail)
}

fn panicked() -> CoreError {
    CoreError::new(ErrorCode::InternalError, "native core panicked")
}

/// Runs `f`, turning a panic into `internal_error`; for work on a libuv pool thread (task.rs).
pub fn catch_core<T>(f: impl FnOnce() -> std::result::Result<T, CoreError>) -> std::result::Result<T, CoreError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(panicked()))
}

/// Runs `f` on the JS thread, turning a panic into `internal_error`; for synchronous exports.
pub fn catch<T>(f: impl FnOnce() -> std::result::Result<T, CoreError>) -> Result<T> {
    catch_core(f).map_err(to_napi)
}

/// The JS error for `err`, made on the JS thread, as the `napi::Error` a task's `resolve` returns: a
/// task's errors are typed with napi's own `Status`, so the error object is built here with the
/// stable code and handed over by reference (napi rejects the promise with that very object).
pub fn js_error(env: &Env, err: CoreError) -> napi::Error {
    // SAFETY: `env` is the JS thread's environment of the running `resolve`.
    unsafe {
        let value = JsError::from(to_napi(err)).into_value(env.raw());
        napi::Error::from(Unknown::from_raw_unchecked(env.raw(), value))
    }
}
