#!/usr/bin/env python3
"""DeepFace's own answer for every image of LFW View 1 DevTrain (../shared/data/lfw-devtrain), one
image at a time: faces, facial areas, confidences and full-precision embeddings. It is what the
service-level parity tool (tools/parity/service-parity.ts) compares the live HTTP service against,
image by image; deepface_reference.py keeps only pair distances, which cannot show an embedding's
cosine to DeepFace's.

Offline tooling only (never in CI, never at run time). Too large to commit (about 3,443 x 128 floats);
it is written under .cache/ and resumes where it stopped:

    DEEPFACE_HOME=/tmp/deepface-home nice -n 10 .venvs/deepface/bin/python \
        tools/reference/deepface_lfw_images.py --model Dlib --detector opencv

writes .cache/deepface-lfw/<model>-<detector>.jsonl, one JSON object per line:
    {"path": "<person>/<file>.jpg", "faces": [{"facial_area": {...}, "face_confidence": c, "embedding": [...]}]}
or  {"path": ..., "error": "<DeepFace's message>"}.
DeepFace runs as its benchmarks run it: enforce_detection=False (the whole image when no face is
found, reported with face_confidence 0), align=True.

Weights come from ../shared/weights (linked where DeepFace looks), so nothing is downloaded; a model
whose DeepFace weights file is absent there fails loudly. For Facenet, point FACENET_WEIGHTS at the
Keras file the service converts (e.g. .models-cache/weights/facenet_keras.h5: DeepFace's
load_weights reads that full-model save by position).

With --fixture IMAGE[,IMAGE...] it reads that output instead of running DeepFace and writes the small
committed fixture test/fixtures/deepface/lfw-no-face-<model>.json: DeepFace's answer for those images
(ones where `opencv` finds no face, so DeepFace embeds the whole image), embeddings to 6 decimals.
test/e2e-rest.test.ts holds the live service to it with detector_fallback=false.
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
# DeepFace's file name for each model/detector weight, and where our mirror holds it.
DEEPFACE_FILES = {
    "dlib_face_recognition_resnet_model_v1.dat": "dlib_face_recognition_resnet_model_v1.dat",
    "face_detection_yunet_2023mar.onnx": "face_detection_yunet_2023mar.onnx",
    "facenet_weights.h5": os.environ.get("FACENET_WEIGHTS", "facenet_weights.h5"),
}


def link_weights() -> None:
    home = Path(os.environ.setdefault("DEEPFACE_HOME", "/tmp/deepface-home"))
    target = home / ".deepface" / "weights"
    target.mkdir(parents=True, exist_ok=True)
    for name, src in DEEPFACE_FILES.items():
        src_path = Path(src) if os.path.isabs(src) else WEIGHTS / src
        dst = target / name
        if src_path.exists() and not dst.exists():
            dst.symlink_to(src_path)


def lfw_images() -> list:
    root = DATA / "lfw-devtrain"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.jpg"))


def write_fixture(out: Path, model: str, detector: str, paths: list) -> int:
    rows = {}
    for line in out.read_text().splitlines():
        r = json.loads(line)
        rows[r["path"]] = r
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    images = {}
    for p in paths:
        faces = rows[p]["faces"]
        if not (len(faces) == 1 and faces[0]["face_confidence"] == 0):
            sys.exit(f"{p}: DeepFace found a face there; the fixture is for images it embeds whole")
        images[p] = [{**f, "embedding": [round(x, 6) for x in f["embedding"]]} for f in faces]
    fixture = {"meta": meta, "generator": "tools/reference/deepface_lfw_images.py --fixture", "images": images}
    path = REPO / "test" / "fixtures" / "deepface" / f"lfw-no-face-{model.lower()}.json"
    path.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"wrote {path}: {len(images)} images", file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="Dlib")
    ap.add_argument("--detector", default="opencv")
    ap.add_argument("--limit", type=int, default=0, help="0 = every image")
    ap.add_argument("--out", default="")
    ap.add_argument("--fixture", default="", help="comma-separated LFW paths: write the committed fixture from the output")
    args = ap.parse_args()
    out = Path(args.out) if args.out else REPO / ".cache" / "deepface-lfw" / f"{args.model}-{args.detector}.jsonl"
    if args.fixture:
        return write_fixture(out, args.model, args.detector, args.fixture.split(","))
    link_weights()
    from deepface import DeepFace  # noqa: E402  (after DEEPFACE_HOME is set)
    from deepface_reference import versions

    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            try:
                done.add(json.loads(line)["path"])
            except (ValueError, KeyError):
                pass
    meta = out.with_suffix(".meta.json")
    meta.write_text(json.dumps({**versions(), "model": args.model,
                                "detector": args.detector, "align": True, "enforce_detection": False}))
    images = lfw_images()
    if args.limit:
        images = images[: args.limit]
    t0 = time.time()
    n = 0
    with out.open("a") as f:
        for rel in images:
            if rel in done:
                continue
            try:
                res = DeepFace.represent(img_path=str(DATA / "lfw-devtrain" / rel), model_name=args.model,
                                         detector_backend=args.detector, enforce_detection=False, align=True)
                faces = []
                for r in res:
                    fa = {k: (list(v) if isinstance(v, tuple) else v) for k, v in r["facial_area"].items()}
                    faces.append({"facial_area": fa, "face_confidence": r["face_confidence"],
                                  "embedding": [float(x) for x in r["embedding"]]})
                row = {"path": rel, "faces": faces}
            except Exception as err:  # noqa: BLE001 — recorded, not fatal
                row = {"path": rel, "error": str(err)[:200]}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
            f.flush()
            n += 1
            if n % 100 == 0:
                print(f"{n} images in {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    print(f"done: {n} new images in {time.time() - t0:.0f}s -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
