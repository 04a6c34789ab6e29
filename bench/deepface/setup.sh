#!/usr/bin/env bash
# Creates the DeepFace baseline venv the benchmarks and the offline reference tools run against.
#   bash bench/deepface/setup.sh            # into .venvs/deepface (git-ignored)
#   DEEPFACE_VENV=/some/dir bash bench/deepface/setup.sh
# Installs exactly bench/deepface/requirements.lock with --no-deps: a resolver run today would pull the
# OpenCV 5 wheels (opencv-python and opencv-contrib-python-headless 5.0), which ship no Haar cascades, so
# DeepFace's `opencv` detector would break. The lock was frozen from
#   pip install deepface==0.0.100 tensorflow-cpu==2.19.1 tf-keras==2.19.0 opencv-python==4.11.0.86 \
#               dlib-bin==20.0.1.post1 gunicorn
# with opencv-contrib-python-headless removed. Idempotent: an existing venv that already satisfies the
# check at the end is left alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${DEEPFACE_VENV:-$ROOT/.venvs/deepface}
PY=${PYTHON:-python3}
check() {
  "$VENV/bin/python" - <<'PY' 2>/dev/null
import os, cv2, deepface, gunicorn, dlib
assert cv2.__version__.startswith('4.'), cv2.__version__
assert os.path.exists(os.path.join(cv2.data.haarcascades, 'haarcascade_frontalface_default.xml'))
print(f'deepface {deepface.__version__}, opencv {cv2.__version__}, dlib {dlib.__version__}')
PY
}
if [ -x "$VENV/bin/python" ] && check; then
  echo "DeepFace venv ready: $VENV"
  exit 0
fi
start=$(date +%s)
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -r "$ROOT/bench/deepface/requirements.lock"
check || { echo "DeepFace venv at $VENV failed its check (cv2 4.x with Haar cascades, deepface, dlib, gunicorn)" >&2; exit 1; }
echo "DeepFace venv ready: $VENV ($(( $(date +%s) - start )) s)"
