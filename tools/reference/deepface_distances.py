#!/usr/bin/env python3
"""DeepFace's own distance functions and verify() on chosen vectors, zero vectors included, as a fixture
for test/distance.test.ts (src/compute/distance.ts and the native compare must answer as these do).

Offline tooling only (never run in CI). It runs DeepFace 0.0.100's deepface/modules/verification.py as
installed from PyPI, with numpy; nothing of DeepFace is copied. verification.py imports DeepFace's
model and detector modules (TensorFlow, OpenCV) at the top, which the distance functions never use: they
are replaced by empty modules before the import, so a venv with only these two packages is enough:

    python3 -m venv /tmp/deepface-distances
    /tmp/deepface-distances/bin/pip install --no-deps deepface==0.0.100 numpy==2.1.3
    /tmp/deepface-distances/bin/python tools/reference/deepface_distances.py \
        > test/fixtures/deepface/distances.json

(numpy 2.1.3 is the version in bench/deepface/requirements.lock, the DeepFace baseline venv.) verify() runs on embeddings (lists of floats): its only model
call then is build_model(...).output_shape, answered by a stand-in with the model's dimension.

For every case: DeepFace's pairwise (1-D) find_distance, rounded as it returns it, the unrounded value of
the metric's function, and the batch (2-D) form find_distance([a], [b]). JSON has no NaN or Infinity:
they are written as the strings "nan", "inf", "-inf".
"""
import importlib.metadata
import json
import math
import random
import sys
import types
import warnings

import numpy as np

# verification.py's unused imports of DeepFace's model and detector code, which need TensorFlow/OpenCV.
for name in ("deepface.modules.representation", "deepface.modules.detection", "deepface.modules.modeling", "deepface.models.FacialRecognition"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["deepface.models.FacialRecognition"].FacialRecognition = object

DIMS = {"Facenet": 128, "Facenet512": 512, "SFace": 128, "Dlib": 128, "OpenFace": 128}


class _Model:
    def __init__(self, dims):
        self.output_shape = dims


def _build_model(task, model_name):
    return _Model(DIMS[model_name])


sys.modules["deepface.modules.modeling"].build_model = _build_model

from deepface.modules import verification  # noqa: E402  (after the stand-ins)

METRICS = ["cosine", "euclidean", "euclidean_l2", "angular"]


def num(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def unrounded(a, b, metric):
    if metric == "cosine":
        return verification.find_cosine_distance(a, b)
    if metric == "angular":
        return verification.find_angular_distance(a, b)
    if metric == "euclidean":
        return verification.find_euclidean_distance(a, b)
    return verification.find_euclidean_distance(verification.l2_normalize(a), verification.l2_normalize(b))


def vec(rng, dims, scale=1.0):
    # Six decimals keep the fixture small; the values are exact in the JSON either way.
    return [round(rng.uniform(-1.0, 1.0), 6) * scale for _ in range(dims)]


def cases():
    rng = random.Random(20231)
    out = []
    for dims, n in ((128, 8), (512, 2)):
        for i in range(n):
            out.append((f"random {dims}-d #{i}", vec(rng, dims), vec(rng, dims)))
    a = vec(rng, 128)
    out.append(("identical", a, list(a)))
    out.append(("nearly identical", a, [x + 1e-7 * rng.uniform(-1, 1) for x in a]))
    out.append(("opposite", a, [-x for x in a]))
    out.append(("scaled copy (x 3.5)", a, [3.5 * x for x in a]))
    out.append(("tiny (1e-20)", vec(rng, 128, 1e-20), vec(rng, 128, 1e-20)))
    out.append(("large (1e18)", vec(rng, 128, 1e18), vec(rng, 128, 1e18)))
    zero = [0.0] * 128
    out.append(("zero, random", zero, vec(rng, 128)))
    out.append(("random, zero", vec(rng, 128), list(zero)))
    out.append(("zero, zero", zero, list(zero)))
    one_hot = [0.0] * 128
    one_hot[5] = 2.0
    out.append(("zero, one-hot", list(zero), one_hot))
    return out


def main():
    warnings.simplefilter("ignore")  # numpy's "invalid value" warnings for 0/0: the values are the point
    rows = []
    for label, a, b in cases():
        rows.append({
            "label": label,
            "a": a,
            "b": b,
            "metrics": {
                metric: {
                    "find_distance": num(verification.find_distance(a, b, metric)),
                    "unrounded": num(unrounded(np.asarray(a), np.asarray(b), metric)),
                    "batch": num(verification.find_distance([a], [b], metric)[0][0]),
                }
                for metric in METRICS
            },
        })
    verify = []
    for label, model, a, b in [
        ("zero vs random", "Facenet", [0.0] * 128, vec(random.Random(7), 128)),
        ("random vs zero", "Facenet", vec(random.Random(9), 128), [0.0] * 128),
        ("zero vs zero", "Facenet", [0.0] * 128, [0.0] * 128),
        ("zero vs random", "Dlib", [0.0] * 128, vec(random.Random(8), 128)),
    ]:
        for metric in METRICS:
            r = verification.verify(a, b, model_name=model, distance_metric=metric, silent=True)
            verify.append({
                "label": label, "model": model, "metric": metric, "a": a, "b": b,
                "verified": bool(r["verified"]), "distance": num(r["distance"]), "threshold": num(r["threshold"]),
                # DeepFace's verify keeps the pair with the smallest distance; NaN < inf is false, so a
                # pair whose distance is NaN is never kept and the answer keeps its starting inf.
                "confidence": num(r["confidence"]), "facial_areas": r["facial_areas"],
            })
    json.dump({
        "generator": "tools/reference/deepface_distances.py",
        "deepface": importlib.metadata.version("deepface"),
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "note": "find_distance: DeepFace's pairwise (1-D) form, rounded to 6 decimals as it returns it; "
                "unrounded: the metric's own function on the same vectors; batch: find_distance([a], [b]) (the 2-D form, "
                "rows normalised with epsilon 1e-10). verify: DeepFace.verify on the two embeddings. NaN and Infinity are strings.",
        "cases": rows,
        "verify": verify,
    }, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
