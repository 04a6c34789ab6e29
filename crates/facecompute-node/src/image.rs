//! N-API exports for core::image.
