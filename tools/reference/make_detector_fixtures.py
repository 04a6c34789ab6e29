#!/usr/bin/env python3
"""Writes test/fixtures/detectors/: small images and the reference outputs the detector tests compare
against. Run once, offline, with torch + opencv-python 4.9 (a venv outside the repository):

    /work/venvs/retina/bin/python tools/reference/make_detector_fixtures.py ../shared

- `<name>.bgr.gz`: the DeepFace test image reduced with cv2 INTER_AREA to 200 px on its long side,
  raw BGR uint8 (Node has gzip but no image decoder in this branch).
- retinaface raw: the torch model's loc/conf/landms on that image at its own size (no resize), to
  check the converted ONNX graph.
- retinaface detect: facecompute's MobileNet pipeline in torch + cv2 + numpy (retinaface_torch.detect),
  at the default 320-px long side and with serengil's 1024/1980 rule.
- yunet: cv2.FaceDetectorYN + DeepFace's YuNet.py wrapper, on the image and on its 4x pixel-repeated
  copy (larger than 640, so DeepFace's resize path runs).
"""
from __future__ import annotations

import gzip
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import retinaface_torch as rt  # noqa: E402

IMAGES = ["img1.jpg", "couple.jpg", "img3.jpg"]
LONG_SIDE = 200
UPSCALE = 4


def deepface_yunet(det, img, threshold=0.9):
    """DeepFace models/face_detection/YuNet.py detect_faces, returning OpenCV rows and DeepFace ints."""
    h, w = img.shape[:2]
    resized, r = False, 1.0
    if h > 640 or w > 640:
        r = 640.0 / max(h, w)
        img = cv2.resize(img, (int(w * r), int(h * r)))
        h, w = img.shape[:2]
        resized = True
    det.setInputSize((w, h))
    det.setScoreThreshold(threshold)
    _, faces = det.detect(img)
    rows, out = [], []
    if faces is None:
        return rows, out
    for face in faces:
        rows.append([float(v) for v in face])
        x, y, fw, fh, x_le, y_le, x_re, y_re = list(map(int, face[:8]))
        x, y = max(x, 0), max(y, 0)
        if resized:
            x, y, fw, fh = int(x / r), int(y / r), int(fw / r), int(fh / r)
            x_re, y_re, x_le, y_le = int(x_re / r), int(y_re / r), int(x_le / r), int(y_le / r)
        out.append({"x": x, "y": y, "w": fw, "h": fh, "left_eye": [x_re, y_re], "right_eye": [x_le, y_le], "confidence": float(face[-1])})
    return rows, out


def main(shared: str) -> int:
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outdir = os.path.join(repo, "test", "fixtures", "detectors")
    os.makedirs(outdir, exist_ok=True)
    net = rt.load(os.path.join(shared, "weights", "retinaface_mobilenet0.25_Final.pth"))
    yn = cv2.FaceDetectorYN.create(os.path.join(shared, "weights", "face_detection_yunet_2023mar.onnx"), "", (0, 0))
    manifest = {"generator": "tools/reference/make_detector_fixtures.py", "opencv": cv2.__version__, "images": []}
    for name in IMAGES:
        full = cv2.imread(os.path.join(shared, "data", "deepface", name))
        h, w = full.shape[:2]
        s = LONG_SIDE / max(h, w)
        img = cv2.resize(full, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)
        ih, iw = img.shape[:2]
        stem = name.rsplit(".", 1)[0]
        with gzip.GzipFile(os.path.join(outdir, f"{stem}.bgr.gz"), "wb", compresslevel=9, mtime=0) as f:
            f.write(np.ascontiguousarray(img).tobytes())
        loc, conf, landms = rt.forward(net, img)
        raw = np.concatenate([loc.ravel(), conf.ravel(), landms.ravel()]).astype("<f4")
        with gzip.GzipFile(os.path.join(outdir, f"{stem}.retina-raw.f32.gz"), "wb", compresslevel=9, mtime=0) as f:
            f.write(raw.tobytes())
        dets = rt.detect(net, img)
        dets_serengil = rt.detect(net, img, long_side=None)
        big = np.repeat(np.repeat(img, UPSCALE, axis=0), UPSCALE, axis=1)
        y_rows, y_df = deepface_yunet(yn, img)
        yb_rows, yb_df = deepface_yunet(yn, big)
        manifest["images"].append({
            "name": stem,
            "source": name,
            "width": iw,
            "height": ih,
            "retinaRaw": {"priors": int(loc.shape[1])},
            "retinaDetect": [{"box": d[:4], "score": d[4], "landmarks": d[5]} for d in dets],
            "retinaDetectSerengil": [{"box": d[:4], "score": d[4], "landmarks": d[5]} for d in dets_serengil],
            "yunet": {"rows": y_rows, "deepface": y_df},
            "yunetUpscaled": {"factor": UPSCALE, "rows": yb_rows, "deepface": yb_df},
        })
        print(name, (iw, ih), "retina", len(dets), "yunet", len(y_rows), "yunet-up", len(yb_rows))
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared"))
