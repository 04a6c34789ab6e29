"""DeepFace's face arrays built from the crops /represent returns with ``return_face`` (base64 PNG of
the crop as DeepFace's extract_faces has it: detected, expanded, aligned, BGR, before resizing).

- :func:`extract_face`: extract_faces' ``face`` for ``color_face`` rgb/bgr/gray and ``normalize_face``.
- :func:`model_input`: represent's ``face`` with ``return_face=True``: the crop letterboxed to the
  model's input (``resize_image``) and normalised (``normalize_input``), float32 BGR.

OpenCV's operations are reproduced with NumPy: BGR->grey with OpenCV's fixed-point weights (exact),
INTER_LINEAR resizing of a float image (float32 weights, as OpenCV; equal to about 1e-6).
"""
from __future__ import annotations

import base64
from typing import Any, Tuple

from ._png import decode_png

# DeepFace's (height, width) model inputs (its models' input_shape, reversed as represent passes it).
MODEL_INPUT = {
    "VGG-Face": (224, 224), "Facenet": (160, 160), "Facenet512": (160, 160), "OpenFace": (96, 96), "DeepFace": (152, 152),
    "DeepID": (55, 47), "Dlib": (150, 150), "ArcFace": (112, 112), "SFace": (112, 112), "GhostFaceNet": (112, 112),
}


def crop_bgr(face_png: str) -> Any:
    """The crop as BGR uint8 (H x W x 3), as DeepFace holds it before colour conversion."""
    rgb = decode_png(base64.b64decode(face_png))
    if rgb.ndim == 2:
        import numpy as np

        return np.repeat(rgb[:, :, None], 3, axis=2)
    return rgb[:, :, 2::-1]


def bgr_to_gray(bgr: Any) -> Any:
    """cv2.cvtColor(COLOR_BGR2GRAY) on uint8: OpenCV 4.x fixed-point weights (15 bits), rounded."""
    import numpy as np

    b, g, r = (bgr[:, :, i].astype(np.int32) for i in range(3))
    return ((b * 3735 + g * 19235 + r * 9798 + (1 << 14)) >> 15).astype(np.uint8)


def extract_face(bgr: Any, color_face: str, normalize_face: bool, grayscale: bool) -> Any:
    """extract_faces' ``face``: colour as asked, then /255 (float64) when normalize_face."""
    from ._deepface_compat import UnimplementedError

    if grayscale or color_face == "gray":
        face = bgr_to_gray(bgr)
    elif color_face == "rgb":
        face = bgr[:, :, ::-1]
    elif color_face == "bgr":
        face = bgr
    else:
        raise UnimplementedError(f"The color_face can be rgb, bgr or gray, but it is {color_face}.")
    return face / 255 if normalize_face else face


def _linear_taps(src: int, dst: int) -> Tuple[Any, Any, Any]:
    """OpenCV INTER_LINEAR taps along one axis: left index, right index, right weight (float32)."""
    import numpy as np

    scale = src / dst
    f = (np.arange(dst, dtype=np.float64) + 0.5) * scale - 0.5
    i0 = np.floor(f).astype(np.int64)
    w = (f - i0).astype(np.float32)
    w[i0 < 0] = 0
    i0[i0 < 0] = 0
    last = i0 >= src - 1
    w[last] = 0
    i0[last] = src - 1
    i1 = np.minimum(i0 + 1, src - 1)
    return i0, i1, w


def resize_linear(img: Any, width: int, height: int) -> Any:
    """cv2.resize(img, (width, height)) for a float image (INTER_LINEAR)."""
    import numpy as np

    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img.copy()
    x0, x1, wx = _linear_taps(w, width)
    y0, y1, wy = _linear_taps(h, height)
    shape = (1, -1) + (1,) * (img.ndim - 2)
    wx, wy = wx.astype(np.float64).reshape(shape), wy.astype(np.float64).reshape((-1,) + (1,) * (img.ndim - 1))
    rows = img[:, x0] * (1 - wx) + img[:, x1] * wx
    return (rows[y0] * (1 - wy) + rows[y1] * wy).astype(img.dtype)


def resize_image(img: Any, target: Tuple[int, int]) -> Any:
    """DeepFace's resize_image: aspect-preserving resize, centred black padding, float32, a batch of 1,
    /255 when the maximum exceeds 1."""
    import numpy as np

    factor = min(target[0] / img.shape[0], target[1] / img.shape[1])
    dw, dh = int(img.shape[1] * factor), int(img.shape[0] * factor)
    out = resize_linear(img.astype(np.float64) if img.dtype == np.uint8 else img, dw, dh)
    d0, d1 = target[0] - out.shape[0], target[1] - out.shape[1]
    pad = [(d0 // 2, d0 - d0 // 2), (d1 // 2, d1 - d1 // 2)] + [(0, 0)] * (out.ndim - 2)
    out = np.pad(out, pad, "constant")
    if out.shape[0:2] != tuple(target):
        out = resize_linear(out, target[0], target[1])
    out = out.astype(np.float32)
    if out.ndim == 2:
        out = out[:, :, None]
    out = out[None]
    if out.max() > 1:
        out = (out / 255.0).astype(np.float32)
    return out


def normalize_input(img: Any, normalization: str) -> Any:
    """DeepFace's normalize_input on a [0, 1] image."""
    if normalization == "base":
        return img
    img = img * 255
    if normalization == "Facenet":
        img = (img - img.mean()) / img.std()
    elif normalization == "Facenet2018":
        img = img / 127.5 - 1
    elif normalization in ("VGGFace", "VGGFace2"):
        means = (93.5940, 104.7624, 129.1863) if normalization == "VGGFace" else (91.4953, 103.8827, 131.0912)
        for c, m in enumerate(means):
            img[..., c] -= m
    elif normalization == "ArcFace":
        img = (img - 127.5) / 128
    return img


def model_input(bgr: Any, model_name: str, normalization: str) -> Any:
    """represent's ``face`` with return_face=True: what DeepFace feeds the model for this crop."""
    target = MODEL_INPUT[model_name]
    x = resize_image(bgr / 255, target)
    return normalize_input(x, normalization)[0]
