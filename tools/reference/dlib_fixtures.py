#!/usr/bin/env python3
"""Regenerate test/fixtures/dlib-descriptors.json and test/fixtures/dlib-chips/*.png.

The chips are 150x150 RGB images; the JSON holds dlib's own descriptor for each.

Run offline, once, with a Python that has dlib and OpenCV (never in CI; CI only reads the output):

    python3 -m venv /work/venvs/dlib
    /work/venvs/dlib/bin/pip install dlib-bin "opencv-python-headless<5" numpy   # OpenCV 5 dropped CascadeClassifier
    /work/venvs/dlib/bin/python tools/reference/dlib_fixtures.py [--shared ../shared]

Why the chips themselves are committed (as PNG): the parity test must feed our ONNX model exactly the
pixels dlib saw. Rebuilding chips from the shared JPEGs in TypeScript would need a JPEG decoder that
matches OpenCV's bit for bit, and DeepFace-style chips would also need OpenCV's detector and bilinear
resize; both would test our image pipeline, not the model conversion. PNG is lossless, every chip is
150x150x3 (~40 KB compressed), and the whole set stays under the 1.5 MB budget. The test decodes the
PNGs with a small zlib-based decoder and checks each chip's sha256 (of the raw RGB bytes, row-major,
R,G,B interleaved) against the JSON, so a decoding mistake fails loudly instead of skewing parity.

Chip kinds (all RGB uint8, 150x150):
  face       DeepFace's path for model Dlib with detector opencv, align=False: Haar cascade
             (haarcascade_frontalface_default.xml from --weights, detectMultiScale3 scaleFactor 1.1,
             minNeighbors 10, largest box), crop, /255, cv2.resize INTER_LINEAR by
             min(150/h, 150/w) to (int(w*f), int(h*f)), centred zero letterbox, then *255 and
             astype(uint8) (truncation, as DeepFace's Dlib client does). Real faces: the cases that
             matter for parity.
  subsample  whole-image content without any interpolation: centred square crop of side
             s = min(H, W) at (y0, x0) = ((H - s) // 2, (W - s) // 2); chip[i][j] = img[y0 + i*s//150]
             [x0 + j*s//150]. Covers non-face statistics and saturated regions.
  greyscale / alpha
             the same subsampling on a greyscale PNG and an RGBA PNG from robustness/, read with
             IMREAD_COLOR as DeepFace does (grey expanded to 3 channels, alpha dropped).

Descriptors: dlib.face_recognition_model_v1(dat).compute_face_descriptor(chip) on each chip alone
(a 150x150 image is used as-is, no alignment or jitter), stored as float32 values.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import cv2
import dlib
import numpy as np

SIZE = 150
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT_DIR = os.path.join(ROOT, "test", "fixtures")
CHIP_DIR = "dlib-chips"
JSON_NAME = "dlib-descriptors.json"

FACE_IMAGES = [
    "img1.jpg", "img2.jpg", "img3.jpg", "img5.jpg", "img7.jpg", "img9.jpg", "img11.jpg", "img13.jpg",
    "img15.jpg", "img17.jpg", "img19.jpg", "img22.jpg", "img24.jpg", "img26.jpg", "img30.jpg",
    "img33.jpg", "img38.jpg", "img41.jpg", "img45.jpg", "img50.jpg",
]
SUBSAMPLE_IMAGES = ["img4.jpg", "img12.jpg", "img28.jpg", "img40.jpg", "couple.jpg", "selfie-many-people.jpg"]
ROBUSTNESS_IMAGES = [
    ("greyscale", "grayscale/face-api.js__examples__images__sheldon__sheldon1.png"),
    ("alpha", "png_alpha/face_recognition__examples__alex-lacamoire.png"),
]


def subsample(bgr: np.ndarray) -> np.ndarray:
    h, w = bgr.shape[:2]
    s = min(h, w)
    y0, x0 = (h - s) // 2, (w - s) // 2
    idx = (np.arange(SIZE) * s) // SIZE
    return np.ascontiguousarray(bgr[y0 + idx][:, x0 + idx][:, :, ::-1])


def deepface_face_chip(bgr: np.ndarray, cascade: cv2.CascadeClassifier) -> np.ndarray | None:
    faces, _levels, _weights = cascade.detectMultiScale3(bgr, scaleFactor=1.1, minNeighbors=10, outputRejectLevels=True)
    if len(faces) == 0:
        return None
    x, y, w, h = max((tuple(int(v) for v in f) for f in faces), key=lambda b: b[2] * b[3])
    face = bgr[y : y + h, x : x + w].astype(np.float64) / 255.0
    factor = min(SIZE / h, SIZE / w)
    resized = cv2.resize(face, (int(w * factor), int(h * factor)))
    dh, dw = SIZE - resized.shape[0], SIZE - resized.shape[1]
    padded = np.pad(resized, ((dh // 2, dh - dh // 2), (dw // 2, dw - dw // 2), (0, 0)), "constant")
    if padded.shape[:2] != (SIZE, SIZE):
        padded = cv2.resize(padded, (SIZE, SIZE))
    chip = (padded.astype(np.float32)[:, :, ::-1] * 255).astype(np.uint8)
    return np.ascontiguousarray(chip)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    args = ap.parse_args()
    data = os.path.join(args.shared, "data")
    weights = os.path.join(args.shared, "weights")
    model = dlib.face_recognition_model_v1(os.path.join(weights, "dlib_face_recognition_resnet_model_v1.dat"))
    cascade = cv2.CascadeClassifier(os.path.join(weights, "haarcascade_frontalface_default.xml"))
    if cascade.empty():
        sys.exit("cannot load the Haar cascade")

    chips: list[tuple[str, str, str, np.ndarray]] = []
    for name in FACE_IMAGES:
        img = cv2.imread(os.path.join(data, "deepface", name), cv2.IMREAD_COLOR)
        chip = deepface_face_chip(img, cascade)
        if chip is None:
            sys.exit(f"no face found in {name}: pick another image")
        chips.append((f"face-{name.rsplit('.', 1)[0]}", "face", f"deepface/{name}", chip))
    for name in SUBSAMPLE_IMAGES:
        img = cv2.imread(os.path.join(data, "deepface", name), cv2.IMREAD_COLOR)
        chips.append((f"subsample-{name.rsplit('.', 1)[0]}", "subsample", f"deepface/{name}", subsample(img)))
    for kind, rel in ROBUSTNESS_IMAGES:
        img = cv2.imread(os.path.join(data, "robustness", rel), cv2.IMREAD_COLOR)
        chips.append((f"{kind}-{os.path.basename(rel).rsplit('.', 1)[0].split('__')[-1]}", kind, f"robustness/{rel}", subsample(img)))

    os.makedirs(os.path.join(OUT_DIR, CHIP_DIR), exist_ok=True)
    entries = []
    for ident, kind, source, chip in chips:
        assert chip.shape == (SIZE, SIZE, 3) and chip.dtype == np.uint8
        descriptor = np.array(model.compute_face_descriptor(chip), dtype=np.float32)
        png = f"{CHIP_DIR}/{ident}.png"
        # cv2 writes BGR; flipping keeps the PNG's own channel order RGB.
        if not cv2.imwrite(os.path.join(OUT_DIR, png), chip[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 9]):
            sys.exit(f"cannot write {png}")
        entries.append(
            {
                "id": ident,
                "kind": kind,
                "source": source,
                "png": png,
                "sha256": hashlib.sha256(chip.tobytes()).hexdigest(),
                # 9 significant digits round-trip a float32 exactly.
                "descriptor": [float(f"{v:.9g}") for v in descriptor],
            }
        )
    doc = {
        "generator": "tools/reference/dlib_fixtures.py",
        "dlib_version": dlib.__version__,
        "opencv_version": cv2.__version__,
        "model": "dlib_face_recognition_resnet_model_v1.dat",
        "chip": "150x150 RGB uint8; sha256 over raw row-major RGB bytes",
        "chips": entries,
    }
    tmp = os.path.join(OUT_DIR, JSON_NAME + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(OUT_DIR, JSON_NAME))
    total = sum(os.path.getsize(os.path.join(OUT_DIR, e["png"])) for e in entries)
    print(f"wrote {len(entries)} chips ({total} bytes of PNG) and {JSON_NAME} to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
