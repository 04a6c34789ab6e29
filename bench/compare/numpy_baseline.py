"""numpy baseline for bench/compare: DeepFace's batch formulas, vectorised, on float32 matrices.

Reads a JSON list of {n, dims} on stdin, prints a JSON list of
{n, dims, metric, seconds} (best of several runs, like the TypeScript side) on stdout.
"""
import json
import sys
import time

import numpy as np


def distances(q, t, metric):
    if metric == "euclidean":
        return np.linalg.norm(t - q, axis=1)
    tn = np.linalg.norm(t, axis=1)
    qn = np.linalg.norm(q)
    if metric == "euclidean_l2":
        return np.linalg.norm(t / (tn[:, None] + 1e-10) - q / (qn + 1e-10), axis=1)
    sim = (t @ q) / (tn * qn)
    if metric == "cosine":
        return 1 - sim
    return np.arccos(np.clip(sim, -1.0, 1.0)) / np.pi


def best_seconds(fn, min_runs=7, min_seconds=0.5):
    fn()
    best = float("inf")
    runs = 0
    start = time.perf_counter()
    while runs < min_runs or (time.perf_counter() - start < min_seconds and runs < 200):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best


def main():
    configs = json.load(sys.stdin)
    rng = np.random.default_rng(1)
    out = []
    for c in configs:
        n, dims = c["n"], c["dims"]
        t = rng.uniform(-1, 1, size=(n, dims)).astype(np.float32)
        q = rng.uniform(-1, 1, size=dims).astype(np.float32)
        for metric in ("cosine", "euclidean", "euclidean_l2", "angular"):
            out.append({"n": n, "dims": dims, "metric": metric, "seconds": best_seconds(lambda: distances(q, t, metric))})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
