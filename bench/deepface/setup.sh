#!/usr/bin/env bash
# Creates the DeepFace baseline venvs the benchmarks and the offline reference tools run against:
#   - DeepFace 0.0.100 on TensorFlow (the parity reference), into .venvs/deepface;
#   - DeepFace 0.0.103 on its ONNX Runtime engine (what `pip install deepface` gives today; the second
#     baseline of the service suite), into .venvs/deepface-0.0.103.
#   bash bench/deepface/setup.sh
#   DEEPFACE_VENV=/some/dir DEEPFACE_103_VENV=/other/dir bash bench/deepface/setup.sh
#   DEEPFACE_103=0 bash bench/deepface/setup.sh     # only the 0.0.100 venv
#   DEEPFACE_100=0 bash bench/deepface/setup.sh     # only the 0.0.103 venv
# Each installs exactly its lock with --no-deps: a resolver run today would pull the OpenCV 5 wheels
# (opencv-python and opencv-contrib-python-headless 5.0), which ship no Haar cascades, so DeepFace's
# `opencv` detector would break. bench/deepface/requirements.lock was frozen from
#   pip install deepface==0.0.100 tensorflow-cpu==2.19.1 tf-keras==2.19.0 opencv-python==4.11.0.86 \
#               dlib-bin==20.0.1.post1 gunicorn
# with opencv-contrib-python-headless removed; requirements-0.0.103.lock says how it was frozen.
# Idempotent: an existing venv that already satisfies its check is left alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}

# check VENV VERSION ENGINE: cv2 4.x with its Haar cascades, the DeepFace version and engine, dlib,
# and the API's packages.
check() {
  "$1/bin/python" - "$2" "$3" <<'PY' 2>/dev/null
import os, sys, cv2, deepface, gunicorn, dlib, flask, flask_cors, dotenv
assert cv2.__version__.startswith('4.'), cv2.__version__
assert os.path.exists(os.path.join(cv2.data.haarcascades, 'haarcascade_frontalface_default.xml'))
assert deepface.__version__ == sys.argv[1], deepface.__version__
if sys.argv[2] == 'onnx':
    import onnxruntime
    from deepface.commons import backend_utils
    assert backend_utils.get_backend_engine() == 'onnx', backend_utils.get_backend_engine()
print(f'deepface {deepface.__version__} ({sys.argv[2]}), opencv {cv2.__version__}, dlib {dlib.__version__}')
PY
}

# make VENV LOCK VERSION ENGINE
make() {
  local venv=$1 lock=$2 version=$3 engine=$4
  if [ -x "$venv/bin/python" ] && check "$venv" "$version" "$engine"; then
    echo "DeepFace $version venv ready: $venv"
    return 0
  fi
  local start
  start=$(date +%s)
  "$PY" -m venv "$venv"
  # DeepFace reads DEEPFACE_HOME at import; the check must not create ~/.deepface.
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$lock"
  DEEPFACE_HOME=$(mktemp -d) check "$venv" "$version" "$engine" || {
    echo "DeepFace $version venv at $venv failed its check (cv2 4.x with Haar cascades, deepface $version on $engine, dlib, gunicorn, flask)" >&2
    return 1
  }
  echo "DeepFace $version venv ready: $venv ($(( $(date +%s) - start )) s)"
}

export DEEPFACE_HOME=${DEEPFACE_HOME:-$(mktemp -d)}
if [ "${DEEPFACE_100:-1}" != 0 ]; then
  make "${DEEPFACE_VENV:-$ROOT/.venvs/deepface}" "$ROOT/bench/deepface/requirements.lock" 0.0.100 tensorflow
fi
if [ "${DEEPFACE_103:-1}" != 0 ]; then
  make "${DEEPFACE_103_VENV:-$ROOT/.venvs/deepface-0.0.103}" "$ROOT/bench/deepface/requirements-0.0.103.lock" 0.0.103 onnx
fi
