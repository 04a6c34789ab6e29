#!/usr/bin/env python3
"""Offline reference generator for the Keras -> ONNX structural parity test (issue 4 §1).

Runs in a heavy venv OUTSIDE the repository (TensorFlow + tf-keras + deepface + retina-face + opencv):

    /work/venvs/keras/bin/python tools/reference/keras_random_weights.py [--models facenet128,...]

For each model it
  1. builds DeepFace's own Keras model (the retina-face package's for retinaface_r50), with weight loading
     stubbed out, and calls `model.save_weights()` to learn the exact HDF5 layout;
  2. writes that layout as a layer manifest (models/converters/keras_layouts/<arch>.json, committed; the converter also uses it);
  3. fills it with seeded random weights via random_h5.py (numpy + h5py, the same code the test runs);
  4. loads that .h5 through DeepFace's own loader (DEEPFACE_HOME pointed at a temp dir) and checks every
     loaded tensor equals the generated one;
  5. runs the model on the committed crops (test/fixtures/keras-parity/crops) with
     `model(x, training=False)` at batch 1, as DeepFace does, and writes
     test/fixtures/keras-parity/<arch>.expected.json.

Crops are made by make_crops() below from ../shared/data/deepface with cv2.imread and integer
nearest-neighbour index arithmetic (no interpolation), and stored as raw bytes, so the test needs no image
decoder and no resampling of its own.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import random_h5  # noqa: E402

MANIFEST_DIR = os.path.join(REPO, "models", "converters", "keras_layouts")
FIXTURES = os.path.join(REPO, "test", "fixtures", "keras-parity")
CROPS_DIR = os.path.join(FIXTURES, "crops")
SHARED_DEEPFACE = os.path.abspath(os.path.join(REPO, "..", "shared", "data", "deepface"))

SEED = {"facenet128": 20260401, "facenet512": 20260402, "openface": 20260403, "retinaface_r50": 20260404}
# Chosen so that activations neither explode nor vanish through the random deep nets (checked by the
# output statistics this script prints).
GAIN = {"facenet128": 2.0, "facenet512": 2.0, "openface": 2.0, "retinaface_r50": 1.0}
WEIGHT_FILE = {
    "facenet128": "facenet_weights.h5",
    "facenet512": "facenet512_weights.h5",
    "openface": "openface_weights.h5",
    "retinaface_r50": "retinaface.h5",
}
# Random weights give face probabilities spread over (0, 1); this keeps a handful of boxes to decode.
DETECT_THRESHOLD = 0.8
SIZE = {"facenet128": 160, "facenet512": 160, "openface": 96}

# (image, crop side as a fraction of min(H, W), letterbox aspect or None)
CROP_SPECS = [("img1.jpg", 0.62, None), ("img2.jpg", 0.70, None), ("img3.jpg", 0.66, 0.75)]
# image, output H, output W (RGB). The second is not a multiple of 32, to pin the ceil(H/s) feature sizes
# and the FPN crop after upsampling.
RETINA_INPUTS = [("couple.jpg", 128, 160), ("img1.jpg", 90, 118)]


def nearest_crop(img: np.ndarray, y0: int, x0: int, h: int, w: int, oh: int, ow: int) -> np.ndarray:
    ys = y0 + (np.arange(oh) * h) // oh
    xs = x0 + (np.arange(ow) * w) // ow
    return img[ys][:, xs]


def make_crops(cv2) -> list:
    os.makedirs(CROPS_DIR, exist_ok=True)
    out = []
    for name, frac, aspect in CROP_SPECS:
        img = cv2.imread(os.path.join(SHARED_DEEPFACE, name))  # BGR uint8
        H, W = img.shape[:2]
        side = int(min(H, W) * frac)
        y0, x0 = (H - side) // 2, (W - side) // 2
        for S in (160, 96, 112):
            if aspect is None:
                crop = nearest_crop(img, y0, x0, side, side, S, S)
            else:
                # A face box narrower than tall, letterboxed like DeepFace's resize_image: black bars,
                # left pad dw//2, right pad dw - dw//2.
                cw = int(S * aspect)
                face = nearest_crop(img, y0, x0 + (side - int(side * aspect)) // 2, side, int(side * aspect), S, cw)
                crop = np.zeros((S, S, 3), np.uint8)
                dw = S - cw
                crop[:, dw // 2: dw // 2 + cw] = face
            fn = f"{os.path.splitext(name)[0]}_{S}.bgr"
            with open(os.path.join(CROPS_DIR, fn), "wb") as f:
                f.write(np.ascontiguousarray(crop).tobytes())
            out.append({"file": fn, "size": S, "source": name, "side_frac": frac, "letterbox_aspect": aspect})
    for rname, rh, rw in RETINA_INPUTS:
        img = cv2.imread(os.path.join(SHARED_DEEPFACE, rname))
        H, W = img.shape[:2]
        rgb = nearest_crop(img, 0, 0, H, W, rh, rw)[:, :, ::-1]
        fn = f"{os.path.splitext(rname)[0]}_{rh}x{rw}.rgb"
        with open(os.path.join(CROPS_DIR, fn), "wb") as f:
            f.write(np.ascontiguousarray(rgb).tobytes())
        out.append({"file": fn, "height": rh, "width": rw, "source": rname, "channels": "RGB"})
    with open(os.path.join(CROPS_DIR, "index.json"), "w") as f:
        json.dump({"generator": "tools/reference/keras_random_weights.py make_crops", "crops": out}, f, indent=1)
    return out


def read_crop(fn: str, h: int, w: int) -> np.ndarray:
    with open(os.path.join(CROPS_DIR, fn), "rb") as f:
        return np.frombuffer(f.read(), np.uint8).reshape(h, w, 3)


@contextlib.contextmanager
def stubbed_loading(tf):
    """Build DeepFace's models without real weights: the loaders only check os.path.isfile, then call
    load_weights, so an empty placeholder plus a no-op load_weights gives the bare architecture."""
    orig = tf.keras.Model.load_weights
    tf.keras.Model.load_weights = lambda self, *a, **k: None
    try:
        yield
    finally:
        tf.keras.Model.load_weights = orig


def build(arch: str):
    if arch == "facenet128":
        from deepface.models.facial_recognition import Facenet
        return Facenet.load_facenet128d_model()
    if arch == "facenet512":
        from deepface.models.facial_recognition import Facenet
        return Facenet.load_facenet512d_model()
    if arch == "openface":
        from deepface.models.facial_recognition import OpenFace
        return OpenFace.load_model()
    if arch == "retinaface_r50":
        from retinaface.model import retinaface_model
        return retinaface_model.build_model()
    raise ValueError(arch)


def manifest_from_h5(path: str, arch: str) -> dict:
    import h5py

    def s(v):
        return v.decode() if isinstance(v, bytes) else str(v)

    with h5py.File(path, "r") as f:
        root_attrs = {k: s(v) for k, v in f.attrs.items() if k != "layer_names"}
        layers = []
        for ln in f.attrs["layer_names"]:
            ln = s(ln)
            g = f[ln]
            ws = []
            for wn in g.attrs.get("weight_names", []):
                wn = s(wn)
                d = g[wn]
                ws.append({"name": wn, "shape": list(d.shape), "dtype": str(d.dtype)})
            layers.append({"name": ln, "weights": ws})
    return {
        "arch": arch,
        "seed": SEED[arch],
        "init": {"kernel_gain": GAIN[arch], "center_kernels": True},
        "root_attrs": root_attrs,
        "layers": layers,
    }


def write_manifest(manifest: dict, path: str) -> None:
    # One layer per line: small, and diffs stay readable when an architecture changes.
    head = {k: v for k, v in manifest.items() if k != "layers"}
    lines = [json.dumps(l, separators=(",", ":")) for l in manifest["layers"]]
    with open(path, "w") as f:
        f.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"layers":[\n')
        f.write(",\n".join(lines))
        f.write("\n]}\n")


def run_arch(arch: str, crops: list, tf, versions: dict) -> None:
    home = tempfile.mkdtemp(prefix="kerasref-")
    os.environ["DEEPFACE_HOME"] = home
    wdir = os.path.join(home, ".deepface", "weights")
    os.makedirs(wdir, exist_ok=True)
    wpath = os.path.join(wdir, WEIGHT_FILE[arch])
    try:
        open(wpath, "wb").close()
        with stubbed_loading(tf):
            bare = build(arch)
        layout = os.path.join(home, "layout.h5")
        bare.save_weights(layout)
        manifest = manifest_from_h5(layout, arch)
        os.makedirs(MANIFEST_DIR, exist_ok=True)
        write_manifest(manifest, os.path.join(MANIFEST_DIR, f"{arch}.json"))
        # Random weights through the numpy-only generator, then DeepFace's own loader.
        os.unlink(wpath)
        random_h5.write_h5(manifest, manifest["seed"], wpath)
        tf.keras.backend.clear_session()
        model = build(arch)
        expected = {}
        for lname, wname, arr in random_h5.generate(manifest, manifest["seed"]):
            expected.setdefault(lname, []).append(arr)
        checked = 0
        for layer in model.layers:
            ws = layer.get_weights()
            if not ws:
                continue
            exp = expected[layer.name]
            assert len(ws) == len(exp), (layer.name, len(ws), len(exp))
            for a, b in zip(ws, exp):
                assert a.shape == b.shape and np.array_equal(a, b), f"{arch}: {layer.name} loaded weights differ"
                checked += 1
        print(f"{arch}: {checked} tensors loaded by Keras equal the numpy-generated ones")

        results = []
        if arch == "retinaface_r50":
            for c in [c for c in crops if c["file"].endswith(".rgb")]:
                x = read_crop(c["file"], c["height"], c["width"]).astype(np.float32)[None]
                outs = model(x, training=False)
                names = [o.name.split("/")[0].split(":")[0] for o in model.outputs]
                tensors = []
                for name, o in zip(names, outs):
                    o = np.asarray(o, np.float32)
                    tensors.append({"keras_name": name, "shape": list(o.shape), "data": [float(v) for v in o.ravel()]})
                    print(f"  {c['file']} {name}: {o.shape} mean|x|={np.abs(o).mean():.4g} std={o.std():.4g}")
                # retina-face's own decoding of these outputs (anchors, +1 box convention, clipping,
                # threshold, NMS 0.4), on the image as is (allow_upscaling=False keeps im_scale = 1),
                # for checking a decoder against DeepFace's semantics.
                from retinaface import RetinaFace
                bgr = np.ascontiguousarray(read_crop(c["file"], c["height"], c["width"])[:, :, ::-1])
                faces = RetinaFace.detect_faces(bgr, threshold=DETECT_THRESHOLD, model=model, allow_upscaling=False)
                dets = []
                for _, f in faces.items():
                    dets.append({
                        "score": float(f["score"]),
                        "facial_area": [int(v) for v in f["facial_area"]],
                        "landmarks": {k: [float(v[0]), float(v[1])] for k, v in f["landmarks"].items()},
                    })
                print(f"  {c['file']}: {len(dets)} detections at threshold {DETECT_THRESHOLD}")
                results.append({"file": c["file"], "height": c["height"], "width": c["width"], "outputs": tensors,
                                 "detect_faces": {"threshold": DETECT_THRESHOLD, "allow_upscaling": False, "faces": dets}})
        else:
            S = SIZE[arch]
            for c in crops:
                if c.get("size") != S:
                    continue
                u8 = read_crop(c["file"], S, S)
                # DeepFace's path: /255 in float64, then img_to_array's float32.
                x = (u8.astype(np.float64) / 255.0).astype(np.float32)[None]
                y = np.asarray(model(x, training=False), np.float32)[0]
                results.append({"file": c["file"], "embedding": [float(v) for v in y]})
                print(f"  {c['file']}: norm={np.linalg.norm(y):.5g} mean={y.mean():.4g} std={y.std():.4g}")
        out = {
            "arch": arch,
            "seed": manifest["seed"],
            "manifest": f"models/converters/keras_layouts/{arch}.json",
            "generator": "tools/reference/keras_random_weights.py",
            "versions": versions,
            "results": results,
        }
        os.makedirs(FIXTURES, exist_ok=True)
        with open(os.path.join(FIXTURES, f"{arch}.expected.json"), "w") as f:
            json.dump(out, f, separators=(",", ":"))
            f.write("\n")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="facenet128,facenet512,openface,retinaface_r50")
    a = ap.parse_args()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import cv2
    import tensorflow as tf

    versions = {"tensorflow": tf.__version__, "keras": tf.keras.__version__ if hasattr(tf.keras, "__version__") else "?",
                "opencv": cv2.__version__}
    try:
        from importlib.metadata import version
        versions["deepface"] = version("deepface")
        versions["retina-face"] = version("retina-face")
    except Exception:  # noqa: BLE001
        pass
    crops = make_crops(cv2)
    for arch in a.models.split(","):
        run_arch(arch, crops, tf, versions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
