#!/usr/bin/env python3
"""DeepFace's own Keras model speed, as the baseline for bench/models/run.ts (optional, heavy venv).

    KERAS_PYTHON=/work/venvs/keras/bin/python  (TensorFlow 2.16 + tf-keras + deepface, see tools/reference)
    $KERAS_PYTHON bench/models/keras_baseline.py --arch facenet128 --h5 W.h5 --threads 1 --batches 1,8,32 --seconds 3

Loads the given weights through DeepFace's loader (DEEPFACE_HOME pointed at a temporary folder), then
times what DeepFace's represent() calls: model(x, training=False) at batch 1, predict_on_batch(x) above.
TensorFlow's thread pools are fixed per process, so run one process per thread count. Prints JSON rows.
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "reference"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", required=True)
    ap.add_argument("--h5", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras_random_weights as krw

    home = tempfile.mkdtemp(prefix="kerasbench-")
    os.environ["DEEPFACE_HOME"] = home
    wdir = os.path.join(home, ".deepface", "weights")
    os.makedirs(wdir)
    os.symlink(os.path.abspath(a.h5), os.path.join(wdir, krw.WEIGHT_FILE[a.arch]))
    model = krw.build(a.arch)
    size = krw.SIZE[a.arch]
    rows = []
    for b in [int(v) for v in a.batches.split(",")]:
        x = np.random.default_rng(0).random((b, size, size, 3), dtype=np.float32)

        def run():
            return model(x, training=False) if b == 1 else model.predict_on_batch(x)

        for _ in range(2):
            run()
        times = []
        t_end = time.perf_counter() + a.seconds
        while len(times) < 5 or (time.perf_counter() < t_end and len(times) < 500):
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        med = times[len(times) // 2]
        rows.append({"batch": b, "runs": len(times), "median_ms": round(med, 3), "faces_per_s": round(1000 * b / med, 2)})
    print(json.dumps({"arch": a.arch, "threads": a.threads, "tensorflow": tf.__version__, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
