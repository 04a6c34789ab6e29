//! The binding's one task idiom: a core closure run on the libuv pool under `guard::catch_core`, and
//! a conversion of its result to a JS value on the JS thread. Every asynchronous export returns
//! `AsyncTask<Job<…>>`; there is no other `impl Task`.

use crate::guard;
use facecompute_core::CoreError;
use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{Env, Task};

type Work<T> = Box<dyn FnOnce() -> Result<T, CoreError> + Send>;

pub struct Job<T: Send + 'static, J> {
    work: Option<Work<T>>,
    to_js: fn(T) -> napi::Result<J>,
}

impl<T: Send + 'static, J> Job<T, J> {
    pub fn new(work: impl FnOnce() -> Result<T, CoreError> + Send + 'static, to_js: fn(T) -> napi::Result<J>) -> Self {
        Self { work: Some(Box::new(work)), to_js }
    }
}

impl<T: Send + 'static, J: ToNapiValue + TypeName> Task for Job<T, J> {
    /// The core's error travels to the JS thread as a value: only there can it become a JS error
    /// whose `code` is the stable code (guard::js_error).
    type Output = Result<T, CoreError>;
    type JsValue = J;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let work = self.work.take();
        Ok(guard::catch_core(move || match work {
            Some(work) => work(),
            None => Err(CoreError::new(facecompute_core::ErrorCode::InternalError, "task ran twice")),
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<J> {
        match output {
            Ok(v) => (self.to_js)(v),
            Err(e) => Err(guard::js_error(&env, e)),
        }
    }
}
