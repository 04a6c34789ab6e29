#!/usr/bin/env python3
"""Record OpenCV's FaceRecognizerSF.feature() outputs for the SFace preprocessing parity test (issue 4 §2).

Heavy venv (opencv-python), offline:
    /work/venvs/keras/bin/python tools/reference/sface_reference.py

Builds the small SFace stand-in (sface_small_onnx.py, run with the repository .venv), then for each committed 112x112 BGR crop records
  - feature(crop bytes)                                     -> "from_bytes"
  - DeepFace's path for a float [0,1] face (see below for which one): SFaceClient.forward's
    (face01 * 255).astype(np.uint8), then feature()                       -> "from_blended_float"
and the sha256 of the truncated bytes and how many of them differ from rounding.
Writes test/fixtures/sface-parity/expected.json.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# The stand-in is built by the converter venv (numpy + onnx), exactly as the test builds it; the heavy
# venv's onnx may not import next to TensorFlow's ml_dtypes.
BUILDER_PY = os.environ.get("CONVERTER_PYTHON", os.path.join(REPO, ".venv", "bin", "python"))

CROPS = os.path.join(REPO, "test", "fixtures", "keras-parity", "crops")
OUT = os.path.join(REPO, "test", "fixtures", "sface-parity", "expected.json")


def main() -> int:
    tmp = tempfile.mkdtemp()
    model_path = os.path.join(tmp, "sface_small.onnx")
    subprocess.run([BUILDER_PY, os.path.join(HERE, "sface_small_onnx.py"), model_path], check=True)
    with open(model_path, "rb") as f:
        model_sha = hashlib.sha256(f.read()).hexdigest()
    rec = cv2.FaceRecognizerSF.create(model_path, "")
    results = []
    for fn in sorted(os.listdir(CROPS)):
        if not fn.endswith("_112.bgr"):
            continue
        with open(os.path.join(CROPS, fn), "rb") as f:
            crop = np.frombuffer(f.read(), np.uint8).reshape(112, 112, 3).copy()
        from_bytes = rec.feature(crop).astype(np.float32).ravel()
        # DeepFace's float face is x/255 of a (resized) crop; exact multiples of 1/255 survive
        # (x*255).astype(uint8) unchanged, so they cannot show the truncation. A half-pixel blend with the
        # right-hand neighbour (edge repeated) stands in for resampling: half the sums are odd, and
        # truncation drops their .5 where rounding would not.
        right = np.concatenate([crop[:, 1:], crop[:, -1:]], axis=1)
        face01 = ((crop.astype(np.float64) + right.astype(np.float64)) / 510.0).astype(np.float32)
        trunc = (face01 * 255).astype(np.uint8)
        rounded = np.floor(face01.astype(np.float64) * 255 + 0.5).astype(np.uint8)
        from_float = rec.feature(trunc).astype(np.float32).ravel()
        exact = ((crop.astype(np.float64) / 255.0).astype(np.float32) * 255).astype(np.uint8)
        assert np.array_equal(exact, crop), "x/255*255 round trip"
        results.append({
            "file": fn,
            "from_bytes": [float(v) for v in from_bytes],
            "from_blended_float": [float(v) for v in from_float],
            "truncated_vs_rounded_differ": int((trunc != rounded).sum()),
            "truncated_bytes_sha256": hashlib.sha256(trunc.tobytes()).hexdigest(),
        })
        print(fn, "norm", float(np.linalg.norm(from_bytes)), "bytes where truncation != rounding", int((trunc != rounded).sum()))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({
            "generator": "tools/reference/sface_reference.py",
            "opencv": cv2.__version__,
            "model": "tools/reference/sface_small_onnx.py",
            "model_sha256": model_sha,
            "results": results,
        }, f, separators=(",", ":"))
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
