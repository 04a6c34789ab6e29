#!/usr/bin/env bash
# The application half of the container image, in steps that the Dockerfile runs and that
# scripts/bootstrap.sh (compile) and test/container.test.ts (assemble) run on this machine too:
#
#   build-app.sh compile        npm packages, the Rust addon and the TypeScript bundle, in the checkout
#   build-app.sh assemble OUT   the runtime tree in OUT: the bundle, the addon, the model manifest and
#                               the production npm packages (copied as compiled, never rebuilt)
#   build-app.sh cuda OUT       onnxruntime-node's CUDA 12 provider into OUT (downloads from NuGet
#                               through onnxruntime-node's own installer), then checks it is there
#
# Run from anywhere; it works in the repository root.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
step=${1:-}

case "$step" in
  compile)
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      # `npm ci`: exactly the lock, which it never rewrites. The lock records every platform's optional
      # binaries (esbuild, @napi-rs/*), as `npm install --package-lock-only` writes them with no
      # node_modules present; an `npm install` over an existing node_modules drops the other
      # platforms' entries (npm/cli#4828), and `npm ci` then refuses the lock ("Missing: ... from lock
      # file"). test/reproducible-build.test.ts checks the lock is complete.
      echo "==> npm ci"
      npm ci --no-audit --no-fund
    fi
    echo "==> build native addon and TypeScript"
    npm run build:native --silent   # cargo decides what is stale; nothing to do takes seconds
    # tsc and the bundle take about 30 s on 2 cores even with nothing changed, so a rerun of bootstrap
    # (a restart, scripts/first-run.sh) skips them when every input is byte-identical to the last build's.
    inputs=()
    for p in src bench test examples scripts/bundle.mjs index.d.ts index.js tsconfig.json package.json package-lock.json; do
      [ -e "$p" ] && inputs+=("$p")
    done
    stamp=$(find "${inputs[@]}" -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.mjs' -o -name '*.js' -o -name '*.json' \) -print0 |
      sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
    if [ -f dist/bundle/main.js ] && [ "$(cat dist/.inputs-sha256 2>/dev/null)" = "$stamp" ]; then
      echo "==> TypeScript and bundle up to date (dist/.inputs-sha256)"
    else
      npm run build:ts --silent
      echo "$stamp" > dist/.inputs-sha256
    fi
    ;;

  assemble)
    out=${2:?usage: build-app.sh assemble OUT}
    [ -f dist/bundle/main.js ] || { echo "build-app.sh: dist/bundle/main.js missing: run 'build-app.sh compile' first" >&2; exit 1; }
    addons=(facecompute.*.node)
    [ -f "${addons[0]}" ] || { echo "build-app.sh: the native addon (facecompute.*.node) is missing: run 'build-app.sh compile' first" >&2; exit 1; }
    rm -rf "$out"
    mkdir -p "$out/bin" "$out/dist" "$out/models"
    # What `facecompute` reads at run time (src/package-root.ts finds them beside package.json):
    # the bundle (bin/facecompute.js prefers it), the addon and its loader, the model manifest, the
    # thresholds /capabilities publishes (models/calibration), openapi.json, docs/ and the client READMEs (the
    # console serves and renders them), the console's browser script (assets/) and the sample photos its Try it page
    # offers (samples/, with their licence), and the licence.
    cp bin/facecompute.js "$out/bin/"
    cp -R dist/bundle "$out/dist/bundle"
    cp package.json package-lock.json openapi.json index.js LICENSE "${addons[@]}" "$out/"
    cp -R docs "$out/docs"
    # The client libraries' READMEs, which the console renders at /docs/sdk/<language>.
    mkdir -p "$out/clients/python" "$out/clients/js"
    cp clients/python/README.md "$out/clients/python/"
    cp clients/js/README.md "$out/clients/js/"
    cp -R assets "$out/assets"
    cp -R samples "$out/samples"
    cp models/manifest.json "$out/models/"
    cp -R models/calibration "$out/models/calibration"
    # The production packages, as npm resolved and built them here (native addons included). Nested
    # paths are covered by their top-level package's copy.
    npm ls --omit=dev --all --parseable 2>/dev/null | sed -n "s|^$ROOT/||p" | grep '^node_modules/' | sort |
      awk '{ for (i in kept) if (index($0, kept[i] "/") == 1) next; kept[NR] = $0; print }' > "$out/.packages"
    [ -s "$out/.packages" ] || { echo "build-app.sh: npm ls found no production packages" >&2; exit 1; }
    tar -cf - -T "$out/.packages" | tar -xf - -C "$out"
    rm "$out/.packages"
    # Leave out what a Linux image never loads: onnxruntime-node's binaries for other platforms
    # (240 of its 290 MB) and better-sqlite3's C sources and intermediate objects.
    arch=$(node -p process.arch)
    for d in "$out"/node_modules/onnxruntime-node/bin/napi-v*/*/*; do
      [ "$d" = "$(dirname "$(dirname "$d")")/linux/$arch" ] || rm -rf "$d"
    done
    rm -rf "$out"/node_modules/better-sqlite3/{deps,src} "$out"/node_modules/better-sqlite3/build/Release/{obj,obj.target,sqlite3.a,test_extension.node}
    # Smoke test: the command loads from the assembled tree alone.
    node "$out/bin/facecompute.js" help >/dev/null
    echo "==> assembled $(du -sh "$out" | cut -f1) in $out"
    ;;

  cuda)
    out=${2:?usage: build-app.sh cuda OUT}
    ort="$out/node_modules/onnxruntime-node"
    [ -d "$ort" ] || { echo "build-app.sh: $ort missing: run 'build-app.sh assemble $out' first" >&2; exit 1; }
    # The repository's .npmrc skips this download (the CPU binaries ship in the package); the variable
    # takes precedence over it.
    (cd "$ort" && ONNXRUNTIME_NODE_INSTALL=cuda12 node script/install.js)
    bin="$ort/bin/napi-v6/linux/x64"
    for lib in libonnxruntime_providers_cuda.so libonnxruntime_providers_shared.so; do
      [ -s "$bin/$lib" ] || { echo "build-app.sh: $bin/$lib is missing after the CUDA install" >&2; exit 1; }
    done
    echo "==> CUDA execution provider installed in $bin"
    ;;

  *)
    echo "usage: build-app.sh compile | assemble OUT | cuda OUT" >&2
    exit 2
    ;;
esac
