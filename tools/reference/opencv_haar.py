#!/usr/bin/env python3
"""Reference fixtures for the `opencv` detector (Haar cascades), made with opencv-python exactly as
DeepFace's OpenCv.py runs it with align=True.

Offline tooling only (CI never installs opencv-python). Regenerate with the DeepFace baseline venv
(opencv-python 4.11.0.86; `npm run bench:setup` makes it):

    .venvs/deepface/bin/python tools/reference/opencv_haar.py [--bench] [--lfw]

Writes test/fixtures/opencv_haar.json: every image of deepface/, dlib-examples/,
face-recognition-examples/ and two uncompressed images, with OpenCV's
boxes, reject levels, level weights and eyes; for the uncompressed images also OpenCV's raw windows
(before groupRectangles), which test/detect-opencv.test.ts compares with our traced detection.
With --lfw it also writes test/fixtures/opencv_haar_lfw.json: every LFW DevTrain image (3,443),
compactly: per image its name, a hash of OpenCV's decoded pixels, the face count and a digest of
OpenCV's whole answer (see `digest`), which crates/facecompute-core/tests/opencv_parity.rs recomputes
from ours. With --bench it also times detectMultiScale3 on the deepface images and writes
bench/results/haar-opencv.json, which bench/haar reads for the ratio.

To diagnose one image (a box a pixel off, a face too many), print OpenCV's answer and its raw windows:

    .venvs/deepface/bin/python tools/reference/opencv_haar.py --image <path> [--no-align]

and compare with ours: `facecompute debug haar-windows <path> [--no-align]` prints the same JSON.
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import time

import cv2
import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.abspath(os.environ.get("SHARED_DATA_DIR", os.path.join(REPO, "..", "shared", "data")))
WEIGHTS = os.path.abspath(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", os.path.join(REPO, "..", "shared", "weights")))
EXTS = (".jpg", ".jpeg", ".png")
# Uncompressed formats that the binding's tap test can decode without a JPEG decoder.
EXTRA = ["robustness/other_format/compreface__imgtools_test_files__einstein.bmp", "robustness/grayscale/att_faces__s1__1.pgm"]


def list_images():
    # LFW DevTrain is covered in full by --lfw (opencv_haar_lfw.json).
    out = []
    for d in ("deepface", "dlib-examples", "face-recognition-examples"):
        for root, _, files in os.walk(os.path.join(DATA, d)):
            for f in files:
                if f.lower().endswith(EXTS):
                    out.append(os.path.relpath(os.path.join(root, f), DATA))
    out.sort()
    return out + EXTRA


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


def raw_windows(face_cascade, img):
    """OpenCV's windows before grouping: detectMultiScale3 with minNeighbors=0 skips groupRectangles
    and returns every window that passed all stages (clipped to the image), with its last-stage sum."""
    rects, _, weights = face_cascade.detectMultiScale3(img, 1.1, 0, outputRejectLevels=True)
    return [[int(x), int(y), int(w), int(h), float(lw)] for (x, y, w, h), lw in zip(rects, weights)]


def digest(faces):
    """sha256 of a canonical text of one image's answer, first 16 hex digits: per face
    x,y,w,h,rejectLevel,<levelWeight as the hex of its IEEE-754 bits>,lx,ly,rx,ry ('-' for no eyes),
    faces joined by ';' in OpenCV's order. Bits, not decimal text, so that Rust and Python agree."""
    parts = []
    for x, y, w, h, lvl, lw, le, re in faces:
        bits = struct.pack(">d", lw).hex()
        eyes = "-,-,-,-" if le is None or re is None else f"{le[0]},{le[1]},{re[0]},{re[1]}"
        parts.append(f"{x},{y},{w},{h},{lvl},{bits},{eyes}")
    return hashlib.sha256(";".join(parts).encode()).hexdigest()[:16]


def gray_of_every_colour():
    """sha256 of cv2.cvtColor(COLOR_BGR2GRAY) over all 2^24 BGR colours, as one 4096x4096 image whose
    pixel i is (B, G, R) = (i >> 16, (i >> 8) & 255, i & 255): the cascade's grey, checked exhaustively."""
    i = np.arange(1 << 24, dtype=np.uint32)
    img = np.stack([i >> 16, (i >> 8) & 255, i & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)
    return hashlib.sha256(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY).tobytes()).hexdigest()


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


def write_lfw(face, eye):
    """Every LFW DevTrain image, compactly (see the module docstring)."""
    root = os.path.join(DATA, "lfw-devtrain")
    rows = []
    t0 = time.time()
    names = sorted(f for _, _, files in os.walk(root) for f in files if f.lower().endswith(".jpg"))
    for n, name in enumerate(names):
        person = name.rsplit("_", 1)[0]
        img = cv2.imread(os.path.join(root, person, name))
        assert img is not None, name
        faces = detect(face, eye, add_border(img))
        rows.append([name[:-4], hashlib.sha1(np.ascontiguousarray(img).tobytes()).hexdigest()[:8], len(faces), digest(faces)])
        if n % 500 == 0:
            print(f"lfw {n}/{len(names)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    fixture = {
        "generator": "tools/reference/opencv_haar.py --lfw",
        "opencv": cv2.__version__,
        "what": "every LFW View 1 DevTrain image: [name (the folder is the name less _NNNN), sha1 of cv2.imread's BGR pixels "
                "(8 hex), face count, digest of OpenCV's answer (16 hex; see digest() in the generator)]; DeepFace's "
                "align=True border, detectMultiScale3(1.1, 10), find_eyes; one thread",
        "images": rows,
    }
    path = os.path.join(REPO, "test", "fixtures", "opencv_haar_lfw.json")
    with open(path, "w") as f:
        f.write(json.dumps({k: v for k, v in fixture.items() if k != "images"}, separators=(",", ":"))[:-1])
        # One image per line: diffs name the images whose answer changed.
        f.write(',"images":[\n' + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]}\n")
    print(f"wrote {path}: {len(rows)} images, {sum(r[2] for r in rows)} faces in {time.time() - t0:.0f}s", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--lfw", action="store_true", help="also write test/fixtures/opencv_haar_lfw.json")
    ap.add_argument("--image", help="print OpenCV's answer and raw windows for one image, write nothing")
    ap.add_argument("--no-align", action="store_true", help="with --image: no DeepFace border")
    args = ap.parse_args()
    face = cv2.CascadeClassifier(os.path.join(WEIGHTS, "haarcascade_frontalface_default.xml"))
    eye = cv2.CascadeClassifier(os.path.join(WEIGHTS, "haarcascade_eye.xml"))
    assert not face.empty() and not eye.empty()
    cv2.setNumThreads(1)

    if args.image:
        img = cv2.imread(args.image)
        if img is None:
            sys.exit(f"cannot read {args.image}")
        scanned = img if args.no_align else add_border(img)
        faces = detect(face, eye, scanned)
        print(json.dumps({
            "opencv": cv2.__version__, "path": args.image, "align": not args.no_align,
            "width": int(scanned.shape[1]), "height": int(scanned.shape[0]),
            "faces": [{"x": x, "y": y, "w": w, "h": h, "reject_level": lvl, "level_weight": lw, "left_eye": le, "right_eye": re}
                      for x, y, w, h, lvl, lw, le, re in faces],
            "windows": [{"x": x, "y": y, "w": w, "h": h, "weight": lw} for x, y, w, h, lw in raw_windows(face, scanned)],
        }, indent=1))
        return

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
        cv2.setNumThreads(1)
        entry = {
            "path": rel.replace(os.sep, "/"),
            "width": int(img.shape[1]),
            "height": int(img.shape[0]),
            # Lets the test tell a decoder difference from a detector difference.
            "bgr_sha1": hashlib.sha1(np.ascontiguousarray(img).tobytes()).hexdigest()[:16],
            # [x, y, w, h, rejectLevel, levelWeight, left_eye, right_eye] in bordered coordinates.
            "faces": faces,
        }
        if rel in EXTRA:
            # [x, y, w, h, levelWeight] of every window before groupRectangles, in OpenCV's
            # single-threaded order.
            entry["windows"] = raw_windows(face, bordered)
        images.append(entry)
    fixture = {
        "generator": "tools/reference/opencv_haar.py",
        "opencv": cv2.__version__,
        "scaleFactor": 1.1,
        "minNeighbors": 10,
        "border": "align=True: int(0.5*H) top/bottom, int(0.5*W) left/right",
        "gray_every_bgr_colour_sha256": gray_of_every_colour(),
        "images": images,
    }
    path = os.path.join(REPO, "test", "fixtures", "opencv_haar.json")
    with open(path, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")
    nfaces = sum(len(i["faces"]) for i in images)
    print(f"wrote {path}: {len(images)} images, {nfaces} faces", file=sys.stderr)

    if args.lfw:
        write_lfw(face, eye)

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
