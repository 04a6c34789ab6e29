#!/usr/bin/env python3
"""Baseline for bench/dlib: dlib's own compute_face_descriptor on the same chips.

    python bench/dlib/dlib_reference.py WEIGHTS.dat SECONDS BATCH[,BATCH...] CHIP.png [CHIP.png ...]

Prints one JSON object: {"dlib_version", "results": [{"batch", "calls", "seconds", "per_second"}]}.
Needs only dlib and numpy (dlib reads the PNGs itself), so it runs in the reference venv, never in CI.
"""

import json
import sys
import time

import dlib


def main() -> int:
    weights, seconds, batches, *pngs = sys.argv[1:]
    model = dlib.face_recognition_model_v1(weights)
    chips = [dlib.load_rgb_image(p) for p in pngs]
    results = []
    for batch in (int(b) for b in batches.split(",")):
        items = [chips[i % len(chips)] for i in range(batch)]

        def call():
            if batch == 1:
                model.compute_face_descriptor(items[0])
            else:
                model.compute_face_descriptor(items)

        call()  # warm-up: first call allocates dlib's internal buffers
        calls = 0
        start = time.perf_counter()
        while True:
            call()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= float(seconds) and calls >= 3:
                break
        results.append({"batch": batch, "calls": calls, "seconds": elapsed, "per_second": calls * batch / elapsed})
    print(json.dumps({"dlib_version": dlib.__version__, "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
