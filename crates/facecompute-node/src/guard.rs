//! Error and panic boundary between the core and Node.

use facecompute_core::CoreError;
use napi::{Error, Status};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Status carries the stable code so that the TS wrapper can read it back as `err.code`.
pub fn to_napi(err: CoreError) -> Error {
    Error::new(Status::GenericFailure, format!("{}|{}", err.code.as_str(), err.detail))
}

/// Runs `f`, turning a panic into `internal_error` so that it never unwinds into Node.
pub fn catch<T>(f: impl FnOnce() -> Result<T, CoreError>) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_napi(e)),
        Err(_) => Err(Error::new(Status::GenericFailure, "internal_error|native core panicked".to_string())),
    }
}
