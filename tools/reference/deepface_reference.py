#!/usr/bin/env python3
"""Records what DeepFace itself answers, so that facecompute's parity is measured, not assumed.

Offline tooling only (never run in CI, never at service run time). It needs DeepFace 0.0.100 with
TensorFlow CPU, dlib (dlib-bin) and opencv-python 4.9.0.80 in a separate venv:

    python3 -m venv /work/venvs/deepface
    /work/venvs/deepface/bin/pip install deepface==0.0.100 tensorflow-cpu==2.16.2 tf-keras==2.16.0 \
        dlib-bin==19.24.6 opencv-python==4.9.0.80 "numpy<2"
    DEEPFACE_HOME=/tmp/deepface-home /work/venvs/deepface/bin/python tools/reference/deepface_reference.py

Weights come from ../shared/weights: the script links them where DeepFace looks
($DEEPFACE_HOME/.deepface/weights), so nothing is downloaded.

Outputs (committed, small):
  test/fixtures/deepface/represent-dlib.json   per image and detector: faces with facial_area,
                                               face_confidence and the embedding (6 decimals)
  test/fixtures/deepface/lfw-dlib.json         per LFW pairsDevTrain pair and detector: DeepFace's
                                               distance (cosine) and decision, plus its accuracy
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHARED_DIR", REPO.parent / "shared"))
WEIGHTS = Path(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", SHARED / "weights"))
DATA = SHARED / "data"


def link_weights() -> None:
    home = Path(os.environ.setdefault("DEEPFACE_HOME", "/tmp/deepface-home"))
    target = home / ".deepface" / "weights"
    target.mkdir(parents=True, exist_ok=True)
    for name in ["dlib_face_recognition_resnet_model_v1.dat", "face_detection_yunet_2023mar.onnx"]:
        dst = target / name
        if not dst.exists():
            dst.symlink_to(WEIGHTS / name)


def faces_for(DeepFace, path: str, detector: str):
    try:
        res = DeepFace.represent(img_path=path, model_name="Dlib", detector_backend=detector,
                                 enforce_detection=True, align=True)
    except ValueError as err:  # FaceNotDetected and friends
        return {"error": str(err).split(".")[0][:120]}
    out = []
    for r in res:
        fa = {k: (list(v) if isinstance(v, tuple) else v) for k, v in r["facial_area"].items()}
        out.append({
            "facial_area": fa,
            "face_confidence": r["face_confidence"],
            "embedding": [round(float(x), 6) for x in r["embedding"]],
        })
    return {"faces": out}


def cosine(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(1 - a.dot(b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detectors", default="opencv,yunet,skip")
    ap.add_argument("--lfw-detectors", default="opencv,skip")
    ap.add_argument("--lfw-limit", type=int, default=0, help="0 = every pair")
    ap.add_argument("--skip-lfw", action="store_true")
    args = ap.parse_args()
    link_weights()
    from deepface import DeepFace  # noqa: E402  (import after DEEPFACE_HOME is set)
    import cv2
    import deepface

    out_dir = REPO / "test" / "fixtures" / "deepface"
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"deepface": deepface.__version__, "opencv": cv2.__version__, "model": "Dlib", "align": True}

    images = sorted(p.name for p in (DATA / "deepface").iterdir() if p.suffix == ".jpg" and p.name != "invalid.jpg")
    rep = {"meta": meta, "images": {}}
    for det in args.detectors.split(","):
        t0 = time.time()
        for name in images:
            rep["images"].setdefault(name, {})[det] = faces_for(DeepFace, str(DATA / "deepface" / name), det)
        print(f"deepface {det}: {len(images)} images in {time.time() - t0:.1f}s", file=sys.stderr)
    (out_dir / "represent-dlib.json").write_text(json.dumps(rep, separators=(",", ":")))

    if args.skip_lfw:
        return 0
    pairs = []
    for line in (DATA / "lfw-devtrain" / "pairsDevTrain.txt").read_text().splitlines()[1:]:
        f = line.split("\t")
        if len(f) == 3:
            pairs.append((f"{f[0]}/{f[0]}_{int(f[1]):04d}.jpg", f"{f[0]}/{f[0]}_{int(f[2]):04d}.jpg", 1))
        elif len(f) == 4:
            pairs.append((f"{f[0]}/{f[0]}_{int(f[1]):04d}.jpg", f"{f[2]}/{f[2]}_{int(f[3]):04d}.jpg", 0))
    if args.lfw_limit:
        pairs = pairs[: args.lfw_limit // 2] + pairs[len(pairs) // 2: len(pairs) // 2 + args.lfw_limit // 2]
    lfw = {"meta": meta, "pairs": [[a, b, s] for a, b, s in pairs], "detectors": {}}
    for det in args.lfw_detectors.split(","):
        t0 = time.time()
        cache = {}

        def emb(rel):
            if rel not in cache:
                try:
                    r = DeepFace.represent(img_path=str(DATA / "lfw-devtrain" / rel), model_name="Dlib",
                                           detector_backend=det, enforce_detection=False, align=True)
                    cache[rel] = [x["embedding"] for x in r]
                except Exception as err:  # noqa: BLE001 — recorded, not fatal
                    print(f"{rel}: {err}", file=sys.stderr)
                    cache[rel] = []
            return cache[rel]

        dists = []
        for a, b, _ in pairs:
            ea, eb = emb(a), emb(b)
            d = min((cosine(x, y) for x in ea for y in eb), default=None)
            dists.append(None if d is None else round(d, 6))
        correct = sum(1 for (a, b, s), d in zip(pairs, dists) if d is not None and ((d <= 0.07) == bool(s)))
        lfw["detectors"][det] = {"cosine": dists, "accuracy": correct / len(pairs), "seconds": round(time.time() - t0, 1)}
        print(f"lfw {det}: accuracy {correct / len(pairs):.4f} in {time.time() - t0:.0f}s", file=sys.stderr)
        (out_dir / "lfw-dlib.json").write_text(json.dumps(lfw, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
