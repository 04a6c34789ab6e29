//! facecompute-core: everything pixel- and vector-shaped that the service needs, in plain Rust.
//!
//! This crate knows nothing of Node or N-API: the binding crate (`facecompute-node`) is a thin
//! adapter over it. Every fallible function returns [`error::CoreError`], never panics on input.

pub mod align;
pub mod error;
pub mod image;
pub mod pixels;
pub mod compare;
pub mod delimit;
pub mod json;
pub mod detect;
pub mod simd;

pub use error::{CoreError, ErrorCode};
