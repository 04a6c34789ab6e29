"""load_image_from_base64: a data URI to a BGR image, accepting JPEG and PNG only (by content, as
DeepFace does), else DataTypeError "Input image can be jpg or png, but it is <type>"."""
import base64

import cv2
import numpy as np

from facecompute.DeepFace import DataTypeError


def _kind(data: bytes) -> str:
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:2] == b"BM":
        return "bmp"
    return "unknown"


def load_image_from_base64(uri: str) -> np.ndarray:
    parts = uri.split(",")
    if len(parts) < 2:
        raise ValueError("format error in base64 encoded string")
    data = base64.b64decode(parts[1])
    kind = _kind(data)
    if kind not in ("jpeg", "png"):
        raise DataTypeError(f"Input image can be jpg or png, but it is {kind}")
    return cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
