"""NumPy images as DeepFace takes them (``load_image`` returns an array as it is, BGR assumed), turned
into the 8-bit pixels that travel as PNG, or refused with DeepFace's own exception.

DeepFace accepts any dtype and reads ``height, width, _ = img.shape``: an array that is not 3-D fails
there with Python's unpacking ValueError, which is what is raised here too. A 4-D array is a batch
(split by the caller). Values are mapped to 8 bits as DeepFace's model input sees them: a float image
within [0, 1] is scaled by 255 (DeepFace divides by 255 only when the maximum exceeds 1), anything
else is rounded and clipped to 0..255; bool is 0 or 255.
"""
from __future__ import annotations

from typing import Any


def shape_error(ndim: int) -> ValueError:
    """DeepFace's error for a non-3-D image array (``height, width, _ = img.shape``)."""
    if ndim < 3:
        return ValueError(f"not enough values to unpack (expected 3, got {ndim})")
    return ValueError("too many values to unpack (expected 3)")


def to_uint8(array: Any) -> Any:
    """A 3-D image array (H x W x 1, 3 or 4 channels, any dtype) as uint8, same layout."""
    import numpy as np

    a = np.asarray(array)
    if a.ndim != 3:
        raise shape_error(a.ndim)
    if a.dtype == np.uint8:
        return a
    if a.dtype == np.bool_:
        return a.astype(np.uint8) * 255
    if a.dtype.kind not in "uif":
        raise TypeError(f"a NumPy image must hold numbers, not {a.dtype}")
    if a.size == 0:
        raise ValueError(f"a NumPy image must not be empty, got shape {a.shape}")
    f = a.astype(np.float64)
    if not np.isfinite(f).all():
        raise ValueError("a NumPy image must not hold NaN or infinity")
    if a.dtype.kind == "f" and f.min() >= 0 and f.max() <= 1:
        f = f * 255.0
    return np.clip(np.rint(f), 0, 255).astype(np.uint8)
