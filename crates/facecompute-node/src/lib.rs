//! Thin N-API binding over `facecompute-core`. Rules for every export:
//! - heavy work runs on the libuv pool (`AsyncTask`) or a Rust pool, never on the JS thread;
//! - no panic crosses into Node: each task body runs under `guard::catch`;
//! - errors become JS `Error`s whose `code` is the core's stable code.

mod guard;
mod padded;
mod task;
mod image;
mod compare;
mod delimit;
mod stream;
mod detect;
mod faces;

use napi_derive::napi;

/// Version of the native core, to check that the addon loaded matches the package.
#[napi]
pub fn core_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
