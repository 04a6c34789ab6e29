//! One generic AsyncTask: a core closure run on the libuv pool under `guard::catch`, and a
//! conversion of its result to a JS value on the main thread.

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
    type Output = T;
    type JsValue = J;

    fn compute(&mut self) -> napi::Result<T> {
        let work = self.work.take().ok_or_else(|| napi::Error::from_reason("internal_error|task ran twice"))?;
        guard::catch(work)
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<J> {
        (self.to_js)(output)
    }
}
