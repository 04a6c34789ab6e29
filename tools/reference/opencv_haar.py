#!/usr/bin/env python3
"""Reference fixture for the `opencv` detector (Haar cascades), made with opencv-python exactly as
DeepFace's OpenCv.py runs it with align=True.

Offline tooling only (CI never installs opencv-python). Regenerate with:

    python3 -m venv /work/venvs/haar && /work/venvs/haar/bin/pip install opencv-python==4.9.0.80 'numpy<2'
    /work/venvs/haar/bin/python tools/reference/opencv_haar.py [--bench]

Writes test/fixtures/opencv_haar.json. With --bench it also times detectMultiScale3 on the deepface
images and writes bench/results/haar-opencv.json, which bench/haar reads for the ratio.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import cv2
import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.abspath(os.environ.get("SHARED_DATA_DIR", os.path.join(REPO, "..", "shared", "data")))
WEIGHTS = os.path.abspath(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", os.path.join(REPO, "..", "shared", "weights")))
EXTS = (".jpg", ".jpeg", ".png")
LFW_SAMPLE = 200
# Uncompressed formats that the binding's tap test can decode without a JPEG decoder.
EXTRA = ["robustness/other_format/compreface__imgtools_test_files__einstein.bmp", "robustness/grayscale/att_faces__s1__1.pgm"]


def list_images():
    out = []
    for d in ("deepface", "dlib-examples", "face-recognition-examples"):
        for root, _, files in os.walk(os.path.join(DATA, d)):
            for f in files:
                if f.lower().endswith(EXTS):
                    out.append(os.path.relpath(os.path.join(root, f), DATA))
    lfw = []
    for root, _, files in os.walk(os.path.join(DATA, "lfw-devtrain")):
        for f in files:
            if f.lower().endswith(EXTS):
                lfw.append(os.path.relpath(os.path.join(root, f), DATA))
    lfw.sort()
    # Every k-th file of the sorted list: deterministic and spread over identities.
    step = max(1, len(lfw) // LFW_SAMPLE)
    out.sort()
    return out + lfw[::step][:LFW_SAMPLE] + EXTRA


def add_border(img):
    # DeepFace detection.py, align=True: black border of int(0.5*H) / int(0.5*W).
    h, w = img.shape[:2]
    bh, bw = int(0.5 * h), int(0.5 * w)
    return cv2.copyMakeBorder(img, bh, bh, bw, bw, cv2.BORDER_CONSTANT, value=[0, 0, 0])


def find_eyes(eye_cascade, face):
    # DeepFace OpenCv.find_eyes.
    if face.shape[0] == 0 or face.shape[1] == 0:
        return None, None
    gray = cv2.cvtColor(face, cv2.COLOR_BGR2GRAY)
    eyes = eye_cascade.detectMultiScale(gray, 1.1, 10)
    eyes = sorted(eyes, key=lambda v: abs(v[2] * v[3]), reverse=True)
    if len(eyes) < 2:
        return None, None
    e1, e2 = eyes[0], eyes[1]
    if e1[0] < e2[0]:
        right, left = e1, e2
    else:
        right, left = e2, e1
    right = (int(right[0] + (right[2] / 2)), int(right[1] + (right[3] / 2)))
    left = (int(left[0] + (left[2] / 2)), int(left[1] + (left[3] / 2)))
    return left, right


def detect(face_cascade, eye_cascade, img):
    faces, levels, weights = face_cascade.detectMultiScale3(img, 1.1, 10, outputRejectLevels=True)
    out = []
    for (x, y, w, h), lvl, lw in zip(faces, levels, weights):
        x, y, w, h = int(x), int(y), int(w), int(h)
        crop = img[y:y + h, x:x + w]
        left, right = find_eyes(eye_cascade, crop)
        if left is not None:
            left = [int(x + left[0]), int(y + left[1])]
        if right is not None:
            right = [int(x + right[0]), int(y + right[1])]
        out.append([x, y, w, h, int(lvl), float(lw), left, right])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args()
    face = cv2.CascadeClassifier(os.path.join(WEIGHTS, "haarcascade_frontalface_default.xml"))
    eye = cv2.CascadeClassifier(os.path.join(WEIGHTS, "haarcascade_eye.xml"))
    assert not face.empty() and not eye.empty()

    images = []
    for n, rel in enumerate(list_images()):
        if n % 25 == 0:
            print(f"{n} {rel}", file=sys.stderr, flush=True)
        img = cv2.imread(os.path.join(DATA, rel))
        if img is None:
            continue
        bordered = add_border(img)
        # One thread gives OpenCV's candidate order without races (it runs stripes in parallel and
        # appends under a mutex), hence a stable output order. The set of faces does not depend on it;
        # checked below against the default thread count.
        cv2.setNumThreads(1)
        faces = detect(face, eye, bordered)
        cv2.setNumThreads(-1)
        multi = detect(face, eye, bordered)
        assert sorted(map(repr, faces)) == sorted(map(repr, multi)), rel
        images.append({
            "path": rel.replace(os.sep, "/"),
            "width": int(img.shape[1]),
            "height": int(img.shape[0]),
            # Lets the test tell a decoder difference from a detector difference.
            "bgr_sha1": hashlib.sha1(np.ascontiguousarray(img).tobytes()).hexdigest()[:16],
            # [x, y, w, h, rejectLevel, levelWeight, left_eye, right_eye] in bordered coordinates.
            "faces": faces,
        })
    fixture = {
        "generator": "tools/reference/opencv_haar.py",
        "opencv": cv2.__version__,
        "scaleFactor": 1.1,
        "minNeighbors": 10,
        "border": "align=True: int(0.5*H) top/bottom, int(0.5*W) left/right",
        "images": images,
    }
    path = os.path.join(REPO, "test", "fixtures", "opencv_haar.json")
    with open(path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    nfaces = sum(len(i["faces"]) for i in images)
    print(f"wrote {path}: {len(images)} images, {nfaces} faces", file=sys.stderr)

    if args.bench:
        cv2.setNumThreads(-1)
        rows = []
        total = 0.0
        for im in images:
            if not im["path"].startswith("deepface/"):
                continue
            bordered = add_border(cv2.imread(os.path.join(DATA, im["path"])))
            detect(face, eye, bordered)
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                detect(face, eye, bordered)
                runs.append((time.perf_counter() - t0) * 1000)
            ms = sorted(runs)[1]
            total += ms
            rows.append({"path": im["path"], "ms": round(ms, 3)})
        res = {"opencv": cv2.__version__, "threads": cv2.getNumThreads(), "images": len(rows),
               "ms_per_image": round(total / len(rows), 3),
               "what": "DeepFace OpenCv.detect_faces: detectMultiScale3 + find_eyes, align=True border",
               "per_image": rows}
        os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
        with open(os.path.join(REPO, "bench", "results", "haar-opencv.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(f"opencv-python faces+eyes as DeepFace: {res['ms_per_image']} ms/image over {len(rows)} deepface images "
              f"({res['threads']} threads)", file=sys.stderr)


if __name__ == "__main__":
    main()
