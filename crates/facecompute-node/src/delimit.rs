//! N-API export of core::delimit for the gateway's multipart reader. Called once per socket chunk
//! (64 KiB) on the JS thread: the copy and the search are a few microseconds each, less than a trip
//! through the libuv pool. The slices borrow the JS buffers for the call only.

use crate::guard;
use facecompute_core::delimit;
use napi::bindgen_prelude::Uint8ArraySlice;
use napi_derive::napi;

/// Copies `chunk` into `dest` at `at`, then returns the index in `dest` of the first `needle` in
/// `dest[from..at + chunk.length]`, or -1.
#[napi]
pub fn append_and_find(mut dest: Uint8ArraySlice, at: u32, chunk: Uint8ArraySlice, needle: Uint8ArraySlice, from: u32) -> guard::Result<i64> {
    // The JS side holds no other view that it writes while this runs (one thread).
    let dest = unsafe { dest.as_mut() };
    guard::catch(|| delimit::append_and_find(dest, at as usize, &chunk, &needle, from as usize)).map(|r| r.map_or(-1, |i| i as i64))
}
