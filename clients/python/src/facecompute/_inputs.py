"""What a caller passes as an image or an embedding, turned into what goes on the wire.

An image becomes either bytes for a multipart file part (a path, bytes, a binary file object, a NumPy
array encoded as PNG) or a string the service reads itself (a data: URI, raw base64, ``file:<path>``,
or a URL when the client leaves fetching to the service). A URL is fetched by the client by default
(``remote_images="fetch"``), as DeepFace does: the service refuses URLs unless its operator enabled
remote images. An embedding is a list of numbers or a 1-D NumPy array.
"""
from __future__ import annotations

import base64
import binascii
import os
import re
import sys
from array import array
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Union

from ._png import encode_bgr_png

_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}\s*$")


@dataclass(frozen=True)
class FileImage:
    """Image bytes sent as a multipart file part."""

    data: bytes
    filename: str
    content_type: str


@dataclass(frozen=True)
class TextImage:
    """An image the service reads from a string: data URI, raw base64, file:<path> or URL."""

    value: str


@dataclass(frozen=True)
class RemoteImage:
    """An http(s) URL for the client to fetch before sending."""

    url: str


@dataclass(frozen=True)
class Embedding:
    values: List[float]


Image = Union[FileImage, TextImage, RemoteImage]


def is_numpy(value: Any) -> bool:
    """A NumPy array, recognised without importing NumPy (it is optional)."""
    return type(value).__module__ == "numpy" and hasattr(value, "ndim") and hasattr(value, "dtype")


def is_embedding(value: Any) -> bool:
    """A list or tuple of numbers, or a 1-D NumPy array."""
    if is_numpy(value):
        return bool(value.ndim == 1)
    if isinstance(value, (list, tuple)) and len(value) > 0:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    return False


def embedding(value: Any) -> Embedding:
    if is_numpy(value):
        return Embedding([float(v) for v in value.tolist()])
    return Embedding([float(v) for v in value])


def sniff_content_type(data: bytes) -> str:
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:2] == b"BM":
        return "image/bmp"
    return "application/octet-stream"


_EXT = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "image/gif": "gif", "image/bmp": "bmp"}


def file_image(data: bytes, name: str) -> FileImage:
    ctype = sniff_content_type(data)
    return FileImage(data=data, filename=f"{name}.{_EXT.get(ctype, 'bin')}", content_type=ctype)


def looks_like_base64(s: str) -> bool:
    if len(s) < 16 or not _BASE64.match(s):
        return False
    try:
        base64.b64decode("".join(s.split()), validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def image(value: Any, name: str) -> Image:
    """One image input, as the service should get it; ``name`` is the field (img, img1, ...)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return file_image(bytes(value), name)
    if is_numpy(value):
        return FileImage(data=encode_bgr_png(value), filename=f"{name}.png", content_type="image/png")
    if hasattr(value, "read") and callable(value.read):
        data = value.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"{name}: a file object must be opened in binary mode ('rb'); read() gave {type(data).__name__}")
        return file_image(bytes(data), name)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
        if isinstance(value, bytes):
            value = os.fsdecode(value)
    if isinstance(value, str):
        if value.startswith("data:"):
            return TextImage(value)
        if value.lower().startswith(("http://", "https://")):
            return RemoteImage(value)
        if value.startswith("file:"):
            return TextImage(value)
        if os.path.isfile(value):
            with open(value, "rb") as f:
                return file_image(f.read(), name)
        if looks_like_base64(value):
            return TextImage("".join(value.split()))
        raise FileNotFoundError(f"{name}: {value[:200]!r} is not an existing file, an http(s) URL, a data: URI or base64")
    raise TypeError(f"{name}: an image is a path, bytes, a binary file object, a NumPy array, a data: URI, base64 or a URL, not {type(value).__name__}")


def image_or_embedding(value: Any, name: str) -> Union[Image, Embedding]:
    if is_embedding(value):
        return embedding(value)
    return image(value, name)


def float32_rows(targets: Any) -> "tuple[bytes, int, int]":
    """Targets as raw little-endian float32 (row-major) with their row count and width.

    Accepts a 2-D NumPy array, a sequence of equal-length number sequences, or bytes already in that
    layout (then the width is unknown here: 0).
    """
    if isinstance(targets, (bytes, bytearray, memoryview)):
        data = bytes(targets)
        if len(data) % 4:
            raise ValueError(f"binary targets must be whole float32 values: {len(data)} bytes is not a multiple of 4")
        return data, 0, 0
    if is_numpy(targets):
        import numpy as np

        a = np.asarray(targets)
        if a.ndim == 1:
            a = a.reshape(1, -1)
        if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"targets must be a non-empty N x dims array, not shape {a.shape}")
        return np.ascontiguousarray(a, dtype="<f4").tobytes(), int(a.shape[0]), int(a.shape[1])
    rows: Sequence[Any] = list(targets)
    if not rows:
        raise ValueError("targets must not be empty")
    width = len(rows[0])
    flat = array("f")
    for i, row in enumerate(rows):
        values = row.tolist() if is_numpy(row) else row
        if len(values) != width:
            raise ValueError(f"targets[{i}] has {len(values)} values, targets[0] has {width}: every row must have the same length")
        flat.extend(float(v) for v in values)
    if sys.byteorder != "little":
        flat.byteswap()
    return flat.tobytes(), len(rows), width


def describe(value: Any) -> Optional[str]:
    """DeepFace's name for an input in its messages (image_utils.load_image): the path or URL itself,
    "base64 encoded string", "numpy array" or "io object"."""
    if is_numpy(value):
        return "numpy array"
    if hasattr(value, "read") and callable(value.read):
        return "io object"
    if isinstance(value, os.PathLike):
        return os.fsdecode(os.fspath(value))
    if isinstance(value, str):
        return "base64 encoded string" if value.startswith("data:image/") else value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes"
    return None
