//! Thin N-API binding over `facecompute-core`. Rules for every export:
//! - its JS-facing types (closed sets as string enums, the one image type) are in types.rs;
//! - heavy work runs on the libuv pool as a `task::Job`, never on the JS thread;
//! - no panic crosses into Node: work runs under `guard::catch_core`, synchronous bodies under
//!   `guard::catch`;
//! - errors become JS `Error`s whose `code` is the core's stable code and whose message is its detail.

mod guard;
mod padded;
mod task;
mod types;
mod image;
mod compare;
mod delimit;
mod json;
mod stream;
mod detect;
mod faces;
mod mtcnn;
#[cfg(feature = "bench")]
mod bench;

