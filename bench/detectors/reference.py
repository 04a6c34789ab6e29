#!/usr/bin/env python3
"""Helper for bench/detectors/run.ts, run with a Python that has opencv-python (and optionally torch):

    python bench/detectors/reference.py decode SHARED_DATA_DIR OUT_DIR
        decodes DeepFace's test images with cv2.imread into OUT_DIR/<name>.bgr + index.json
        (this branch has no image decoder of its own yet).
    python bench/detectors/reference.py time SHARED_WEIGHTS_DIR OUT_DIR REPS
        times cv2.FaceDetectorYN (DeepFace's YuNet wrapper) and the torch RetinaFace MobileNet-0.25
        reference pipeline on the decoded images, one thread each; prints JSON.
"""
from __future__ import annotations

import json
import os
import sys
import time

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "reference"))
from make_detector_fixtures import deepface_yunet  # noqa: E402


def decode(data_dir: str, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    src = os.path.join(data_dir, "deepface")
    index = []
    for name in sorted(os.listdir(src)):
        if not name.lower().endswith((".jpg", ".jpeg", ".png")):
            continue
        img = cv2.imread(os.path.join(src, name))
        if img is None or img.ndim != 3:
            continue
        stem = name.rsplit(".", 1)[0]
        np.ascontiguousarray(img).tofile(os.path.join(out, stem + ".bgr"))
        index.append({"name": stem, "width": img.shape[1], "height": img.shape[0]})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)


def timed(fn, imgs, reps):
    """ms per image, total faces per pass, and the boxes [x1,y1,x2,y2] of the last pass per image."""
    fn(imgs[0])
    t0 = time.perf_counter()
    boxes = []
    for _ in range(reps):
        boxes = [fn(im) for im in imgs]
    ms = (time.perf_counter() - t0) * 1000 / (reps * len(imgs))
    return ms, sum(len(b) for b in boxes), boxes


def yunet_boxes(det, im):
    rows, _ = deepface_yunet(det, im)
    h, w = im.shape[:2]
    r = 640.0 / max(h, w) if max(h, w) > 640 else 1.0
    return [[row[0] / r, row[1] / r, (row[0] + row[2]) / r, (row[1] + row[3]) / r] for row in rows]


def time_refs(weights: str, out: str, reps: int) -> None:
    cv2.setNumThreads(1)
    with open(os.path.join(out, "index.json")) as f:
        index = json.load(f)
    imgs = [np.fromfile(os.path.join(out, e["name"] + ".bgr"), dtype=np.uint8).reshape(e["height"], e["width"], 3) for e in index]
    res = {"opencv": cv2.__version__}
    yn = cv2.FaceDetectorYN.create(os.path.join(weights, "face_detection_yunet_2023mar.onnx"), "", (0, 0))
    ms, faces, boxes = timed(lambda im: yunet_boxes(yn, im), imgs, reps)
    res["yunet_opencv"] = {"ms_per_image": ms, "faces": faces, "boxes": boxes}
    try:
        import torch
        import retinaface_torch as rt

        torch.set_num_threads(1)
        net = rt.load(os.path.join(weights, "retinaface_mobilenet0.25_Final.pth"))
        ms, faces, boxes = timed(lambda im: [d[:4] for d in rt.detect(net, im)], imgs, reps)
        res["retinaface_torch"] = {"ms_per_image": ms, "faces": faces, "torch": torch.__version__, "boxes": boxes}
    except ImportError as e:
        res["retinaface_torch"] = {"skipped": f"torch not installed ({e})"}
    print(json.dumps(res))


if __name__ == "__main__":
    if sys.argv[1] == "decode":
        decode(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "time":
        time_refs(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(2)
