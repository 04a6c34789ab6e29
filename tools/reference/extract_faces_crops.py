#!/usr/bin/env python3
"""DeepFace's extract_faces crops on DeepFace's own images, for every detector it can run offline here,
recorded for test/extract-faces-crops.test.ts (the crops /represent returns with return_face).

Offline tooling only (CI installs no DeepFace). Regenerate with the DeepFace baseline venv
(DeepFace 0.0.100 on TensorFlow, opencv-python 4.11.0.86, mtcnn 1.0.0: `npm run bench:setup`):

    PYTHONPATH=test/setup/python .venvs/deepface/bin/python tools/reference/extract_faces_crops.py

(test/setup/python's sitecustomize refuses any packet beyond loopback.) Detectors: `opencv` (cv2's
bundled Haar cascades), `mtcnn` (its weights ship in the mtcnn wheel) and `yunet` (the weights file from
FACECOMPUTE_WEIGHTS_DIR, default ../shared/weights, linked into a temporary DEEPFACE_HOME). Not here:
`retinaface` (DeepFace's is ResNet-50, whose weights are absent; ours is MobileNet-0.25, not comparable),
`fastmtcnn` (needs PyTorch), `ssd` (not served).

OpenCV runs on one thread (cv2.setNumThreads(1)), which makes the order of `opencv`'s faces
deterministic: with several threads it follows the threads' finishing order.

Each call: extract_faces(path, detector_backend, align=True, enforce_detection=True, color_face="bgr",
normalize_face=False), so `face` is the uint8 BGR crop (detected, expanded by 0, aligned) before any
resizing, exactly what /represent's face_png holds (as RGB). Per image and detector the fixture keeps
the faces in DeepFace's order with facial_area, confidence, the crop's shape, the sha256 of its bytes,
and, to keep the file small (whole crops would be tens of MB), a lossless subsample: every
SAMPLE_STEP-th row and column (rows 0, 16, 32, ...; the same columns), uint8 BGR, base64. The test
holds our crop to the same size, and its sampled pixels within 1 level; equal sha256 means equal bytes.
An image where DeepFace finds no face records null (FaceNotDetected); `invalid.jpg`, which is not an
image, is left out, so 65 of the folder's 66 image files are recorded.

Writes test/fixtures/extract-faces/crops.json.gz.
"""
import base64
import gzip
import hashlib
import json
import os
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.abspath(os.environ.get("SHARED_DATA_DIR", os.path.join(REPO, "..", "shared", "data")))
WEIGHTS = os.path.abspath(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", os.path.join(REPO, "..", "shared", "weights")))
OUT = os.path.join(REPO, "test", "fixtures", "extract-faces", "crops.json.gz")
DETECTORS = ["opencv", "mtcnn", "yunet"]
SAMPLE_STEP = 16
EXTS = (".jpg", ".jpeg", ".png")

# DeepFace reads DEEPFACE_HOME at import: a temporary one holding only the YuNet weights we have.
home = tempfile.mkdtemp(prefix="deepface-home-")
os.makedirs(os.path.join(home, ".deepface", "weights"))
os.symlink(os.path.join(WEIGHTS, "face_detection_yunet_2023mar.onnx"), os.path.join(home, ".deepface", "weights", "face_detection_yunet_2023mar.onnx"))
os.environ["DEEPFACE_HOME"] = home
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import deepface  # noqa: E402
from deepface import DeepFace  # noqa: E402


def version(name: str) -> str:
    from importlib.metadata import version as v

    return v(name)


def record(face: dict) -> dict:
    crop = np.ascontiguousarray(face["face"])
    assert crop.dtype == np.uint8 and crop.ndim == 3 and crop.shape[2] == 3, (crop.dtype, crop.shape)
    area = {k: (list(v) if isinstance(v, tuple) else v) for k, v in face["facial_area"].items()}
    return {
        "facial_area": area,
        "confidence": face["confidence"],
        "shape": list(crop.shape),
        "sha256": hashlib.sha256(crop.tobytes()).hexdigest(),
        "sample": base64.b64encode(np.ascontiguousarray(crop[::SAMPLE_STEP, ::SAMPLE_STEP]).tobytes()).decode(),
    }


def main() -> None:
    # One OpenCV thread: detectMultiScale scans each scale in parallel strips and collects the raw
    # windows in the order the threads finish, so with several threads the order of opencv's faces
    # varies from run to run (tools/reference/opencv_haar.py records with one thread too).
    cv2.setNumThreads(1)
    folder = os.path.join(DATA, "deepface")
    images = sorted(n for n in os.listdir(folder) if n.lower().endswith(EXTS))
    out: dict = {}
    for det in DETECTORS:
        per: dict = {}
        for name in images:
            try:
                faces = DeepFace.extract_faces(
                    os.path.join(folder, name), detector_backend=det, align=True, enforce_detection=True, color_face="bgr", normalize_face=False
                )
                per[name] = [record(f) for f in faces]
            except ValueError as err:
                if str(err).startswith("Exception while loading"):
                    continue  # invalid.jpg: not an image (DeepFace's test of the error)
                if "Face could not be detected" not in str(err):
                    raise
                per[name] = None
            print(det, name, "none" if per[name] is None else len(per[name]), file=sys.stderr)
        out[det] = per
    images = sorted(out[DETECTORS[0]])
    doc = {
        "generator": "tools/reference/extract_faces_crops.py",
        "command": "PYTHONPATH=test/setup/python .venvs/deepface/bin/python tools/reference/extract_faces_crops.py",
        "versions": {
            "deepface": deepface.__version__,
            "opencv": cv2.__version__,
            "tensorflow": version("tensorflow-cpu"),
            "tf_keras": version("tf-keras"),
            "numpy": np.__version__,
            "mtcnn": version("mtcnn"),
        },
        "opencv_threads": cv2.getNumThreads(),
        "call": {"align": True, "enforce_detection": True, "expand_percentage": 0, "color_face": "bgr", "normalize_face": False},
        "sample_step": SAMPLE_STEP,
        "images": images,
        "detectors": out,
    }
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        # mtime 0: the same inputs give the same bytes.
        f.write(gzip.compress(json.dumps(doc, separators=(",", ":"), sort_keys=True).encode(), 9, mtime=0))
    print(f"wrote {os.path.relpath(OUT, REPO)} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
