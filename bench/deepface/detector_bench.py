#!/usr/bin/env python3
"""DeepFace's detectors timed as a library: DeepFace.extract_faces(path, detector_backend=..., align=True,
enforce_detection=False) per image, reading the file each time as DeepFace does, after one warm-up call.
For bench/suites/detectors.ts, in the venv that has the backend (mtcnn: .venvs/deepface; fastmtcnn: the
facenet-pytorch venv, tools/reference/fastmtcnn-requirements.lock):

    python bench/deepface/detector_bench.py DETECTOR REPS IMAGE...

prints one JSON line: wall and CPU (this process, every thread) milliseconds per image, and the faces found.
"""
import json
import os
import sys
import time


def main() -> int:
    detector, reps, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from deepface import DeepFace

    DeepFace.extract_faces(img_path=paths[0], detector_backend=detector, align=True, enforce_detection=False)
    faces = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        faces = 0
        for p in paths:
            faces += len(DeepFace.extract_faces(img_path=p, detector_backend=detector, align=True, enforce_detection=False))
    n = reps * len(paths)
    import deepface
    print(json.dumps({"ms_per_image": (time.perf_counter() - t0) * 1000 / n, "cpu_ms_per_image": (time.process_time() - c0) * 1000 / n,
                      "faces": faces, "images": len(paths), "reps": reps, "deepface": deepface.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
