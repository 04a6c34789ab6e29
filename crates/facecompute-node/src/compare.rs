//! N-API exports for core::compare.
