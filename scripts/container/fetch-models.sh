#!/usr/bin/env bash
# The models half of the container image: weights fetched from their sources with the manifest's
# sha256 checks (`facecompute models fetch`), converted to ONNX, then every ONNX file loaded once
# (`models verify`), into OUT, which the image uses as FACECOMPUTE_MODELS_CACHE. Nothing is fetched
# or converted at run time. The Dockerfile runs it, and test/container.test.ts runs it here.
#
# (Not FACECOMPUTE_* names: the service refuses variables it does not know.)
#   FC_IMAGE_MODELS                    models and detectors to include (default below); a model that
#                                      cannot be had fails the build
#   FC_IMAGE_WEIGHTS_MIRRORS           optional ':'-separated directories holding weight files (an
#                                      air-gapped build, or the tests' ../shared/weights): files the
#                                      manifest names are copied in and checked like any download
#   FACECOMPUTE_PYTHON                 the converters' Python (numpy, onnx, h5py); unset: a venv is
#                                      made under OUT's parent with models/converters/requirements.txt
#
#   fetch-models.sh OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: fetch-models.sh OUT}
models=${FC_IMAGE_MODELS:-Facenet Dlib opencv retinaface yunet}
mkdir -p "$out/weights"
out=$(cd "$out" && pwd)

if [ -z "${FACECOMPUTE_PYTHON:-}" ]; then
  venv="$(dirname "$out")/.converters-venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r models/converters/requirements.txt
  export FACECOMPUTE_PYTHON="$venv/bin/python"
fi

if [ -n "${FC_IMAGE_WEIGHTS_MIRRORS:-}" ]; then
  IFS=: read -r -a mirrors <<< "$FC_IMAGE_WEIGHTS_MIRRORS"
  # The weight files of the chosen models only (their canonical files and their carriers').
  for name in $(node -e '
    const m = require("./models/manifest.json");
    const wanted = process.argv.slice(1);
    const files = new Set();
    const add = (a) => (a.weights ?? []).forEach((w) => { files.add(w.file); (w.carriers ?? []).forEach((c) => c.file && files.add(c.file)); });
    for (const [id, r] of Object.entries(m.recognition)) if (wanted.includes(id)) add(r);
    for (const [id, d] of Object.entries(m.detectors)) {
      if (d.variants) { for (const [v, a] of Object.entries(d.variants)) if (wanted.includes(id) || wanted.includes(`${id}:${v}`)) add(a); }
      else if (wanted.includes(id)) add(d);
    }
    console.log([...files].join("\n"));' $models); do
    for dir in "${mirrors[@]}"; do
      if [ -f "$dir/$name" ] && [ ! -e "$out/weights/$name" ]; then
        cp "$dir/$name" "$out/weights/$name"
        break
      fi
    done
  done
fi

# Only the cache: the service in the image resolves every weight from it.
unset FACECOMPUTE_WEIGHTS_DIR
export FACECOMPUTE_MODELS_CACHE="$out"
for m in $models; do
  node bin/facecompute.js models fetch "$m"
done
for m in $models; do
  node bin/facecompute.js models verify "$m"
done
# `models verify` re-hashes into a scratch record beside the cache; the image has no use for it.
rm -rf "$out"/.reverify-* "$out/downloads"
node bin/facecompute.js models list
