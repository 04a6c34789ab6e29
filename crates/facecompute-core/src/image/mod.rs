//! Image decoding and normalization (issue 2). Owned by the image work.
