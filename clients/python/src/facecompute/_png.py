"""A lossless PNG writer and reader for NumPy images, so that a ``cv2.imread`` array travels, and a
face crop (``/represent`` with ``return_face``) comes back, without OpenCV or Pillow. The writer is
the PNG specification's three chunks (IHDR, IDAT, IEND) with filter 0; the reader takes 8-bit grey,
RGB and RGBA with any of the five filters. Both are checked in the tests against Pillow, pixel by
pixel.
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


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def decode_png(data: bytes) -> Any:
    """The pixels of an 8-bit, non-interlaced grey, RGB or RGBA PNG: H x W, H x W x 3 (RGB) or H x W x 4."""
    import numpy as np

    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("not a PNG")
    at, header, idat = 8, b"", []
    while at + 8 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    channels = {0: 1, 2: 3, 6: 4, 4: 2}.get(color_type)
    if depth != 8 or channels is None or interlace != 0:
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {color_type}, interlace {interlace})")
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    if raw.size != height * (stride + 1):
        raise ValueError("truncated PNG")
    rows = raw.reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        filt, line = int(rows[y, 0]), rows[y, 1:]
        if filt == 0:
            cur = line.copy()
        elif filt == 1:  # Sub: a running sum per channel
            cur = (np.cumsum(line.reshape(width, channels).astype(np.int64), axis=0) % 256).astype(np.uint8).reshape(stride)
        elif filt == 2:  # Up
            cur = (line.astype(np.uint16) + prior).astype(np.uint8)
        elif filt in (3, 4):  # Average, Paeth: sequential along the row
            cur = np.zeros(stride, dtype=np.uint8)
            lv, pv = line.tolist(), prior.tolist()
            cv = [0] * stride
            for i in range(stride):
                left = cv[i - channels] if i >= channels else 0
                up = pv[i]
                if filt == 3:
                    cv[i] = (lv[i] + ((left + up) >> 1)) & 255
                else:
                    ul = pv[i - channels] if i >= channels else 0
                    cv[i] = (lv[i] + _paeth(left, up, ul)) & 255
            cur = np.array(cv, dtype=np.uint8)
        else:
            raise ValueError(f"bad PNG filter {filt}")
        out[y] = cur
        prior = cur
    return out.reshape(height, width) if channels == 1 else out.reshape(height, width, channels)
