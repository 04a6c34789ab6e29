#!/usr/bin/env bash
# Speed of the opencv (Haar) detector vs opencv-python; writes bench/results/haar.json.
# For the opencv-python figure first run (offline venv):
#   /work/venvs/haar/bin/python tools/reference/opencv_haar.py --bench
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo run --release -q -p facecompute-core --example bench_haar
