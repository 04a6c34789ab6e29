#!/usr/bin/env bash
# Speed of the opencv (Haar) detector per scan kernel this CPU has (AVX-512, AVX2, scalar), the face
# scan's work for its roofline, and opencv-python's figure; writes bench/results/haar.json.
# For the opencv-python figure first run (offline venv):
#   /work/venvs/haar/bin/python tools/reference/opencv_haar.py --bench
# Knobs (environment): RUNS per image (3), ROUNDS of every kernel in turn (2), HAAR_IMAGES (about
# this many of the deepface images, evenly spread; all by default), KERNELS (e.g. avx2,scalar).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --release -q -p facecompute-core --example bench_haar
