//! N-API exports for core::detect.
