"""A lossless PNG writer for NumPy images, so that a ``cv2.imread`` array travels without OpenCV or
Pillow. PNG with filter 0 and zlib is all the service needs to get the exact pixels back; the writer
is the PNG specification's three chunks (IHDR, IDAT, IEND) and nothing else, checked in the tests by
decoding its output with Pillow and comparing every pixel.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_bgr_png(array: Any) -> bytes:
    """PNG bytes of an 8-bit image in OpenCV's layout: H x W (grey), H x W x 3 (BGR) or H x W x 4 (BGRA).

    Other dtypes are refused rather than guessed at (a float image may be [0, 1] or [0, 255]):
    convert to uint8 first.
    """
    import numpy as np  # only reached with a NumPy array in hand

    a = np.asarray(array)
    if a.dtype != np.uint8:
        raise TypeError(f"a NumPy image must be uint8 (as cv2.imread gives), not {a.dtype}: convert it first, e.g. img.astype('uint8')")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:
        color_type, channels = 0, 1
    elif a.ndim == 3 and a.shape[2] == 3:
        a = a[:, :, ::-1]  # BGR -> RGB, PNG's order
        color_type, channels = 2, 3
    elif a.ndim == 3 and a.shape[2] == 4:
        a = a[:, :, [2, 1, 0, 3]]  # BGRA -> RGBA
        color_type, channels = 6, 4
    else:
        raise ValueError(f"a NumPy image must be H x W, H x W x 3 (BGR) or H x W x 4 (BGRA), not shape {a.shape}")
    height, width = a.shape[0], a.shape[1]
    if height == 0 or width == 0:
        raise ValueError(f"a NumPy image must not be empty, got shape {a.shape}")
    rows = np.empty((height, 1 + width * channels), dtype=np.uint8)
    rows[:, 0] = 0  # filter type None for every scanline
    rows[:, 1:] = np.ascontiguousarray(a).reshape(height, width * channels)
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b"")
