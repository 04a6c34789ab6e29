#!/usr/bin/env bash
# The Node.js LTS beside this machine's Node 20, for test/node-lts.test.ts (serve under the LTS, as the
# image runs it):
#
#   node-lts.sh install        the LTS binary from the npm registry (tools/node-lts, pinned by its lock:
#                              node-linux-<cpu>, the package the registry's `node` package installs),
#                              and better-sqlite3 built for the LTS's ABI in a copy of its sources,
#                              kept in .node-lts/. scripts/bootstrap.sh test runs it; each part is
#                              skipped when already there.
#   node-lts.sh node           prints the LTS binary's path (fails when not installed)
#   node-lts.sh assemble OUT   the runtime tree (build-app.sh assemble OUT) with the LTS build of
#                              better-sqlite3 in place of the Node 20 one; the checkout is untouched
#
# better-sqlite3 is the one production dependency that links against V8 itself (the others use
# N-API, whose binaries load in any Node): a Node 20 build refuses to load in Node 26
# (NODE_MODULE_VERSION 115 vs 147), so the LTS needs its own, compiled with node-gyp against the headers
# the LTS package carries (include/node): nothing comes from nodejs.org.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PKG=tools/node-lts
case "$(uname -m)" in
  x86_64) cpu=x64 ;;
  aarch64 | arm64) cpu=arm64 ;;
  *) echo "node-lts.sh: no Node LTS package for $(uname -m)" >&2; exit 1 ;;
esac
VERSION=$(node -p "require('./$PKG/package.json').optionalDependencies['node-linux-$cpu']")
NODE_DIR=$ROOT/$PKG/node_modules/node-linux-$cpu
LTS=$NODE_DIR/bin/node

installed() { [ -x "$LTS" ] && [ "$("$LTS" --version 2>/dev/null)" = "v$VERSION" ]; }
# Where the LTS build of better-sqlite3 is kept: one per better-sqlite3 version and Node ABI.
sqlite_build() {
  local bs abi
  bs=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
  abi=$("$LTS" -p process.versions.modules)
  echo "$ROOT/.node-lts/better-sqlite3-$bs-node-abi$abi/better_sqlite3.node"
}

case "${1:-}" in
  install)
    if ! installed; then
      echo "==> Node $VERSION (npm registry: node-linux-$cpu) into $PKG"
      started=$(date +%s)
      npm ci --prefix "$PKG" --no-audit --no-fund
      installed || { echo "node-lts.sh: $LTS is not Node $VERSION after npm ci" >&2; exit 1; }
      echo "==> Node $VERSION installed in $(( $(date +%s) - started )) s"
    fi
    [ -d node_modules/better-sqlite3 ] || { echo "node-lts.sh: node_modules/better-sqlite3 missing: run 'build-app.sh compile' first" >&2; exit 1; }
    out=$(sqlite_build)
    if [ ! -s "$out" ]; then
      echo "==> better-sqlite3 for Node $VERSION (ABI $("$LTS" -p process.versions.modules)), in a copy of its sources"
      started=$(date +%s)
      work=$(mktemp -d)
      trap 'rm -rf "$work"' EXIT
      cp -R node_modules/better-sqlite3 "$work/"
      rm -rf "$work/better-sqlite3/build"
      # npm's own node-gyp, run by the LTS (so process.version and the headers agree).
      gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
      [ -f "$gyp" ] || { echo "node-lts.sh: node-gyp not found beside npm ($gyp)" >&2; exit 1; }
      (cd "$work/better-sqlite3" && PATH="$NODE_DIR/bin:$PATH" "$LTS" "$gyp" rebuild --release --nodedir="$NODE_DIR" -j 2 >"$work/gyp.log" 2>&1) ||
        { tail -n 40 "$work/gyp.log" >&2; exit 1; }
      mkdir -p "$(dirname "$out")"
      cp "$work/better-sqlite3/build/Release/better_sqlite3.node" "$out"
      echo "==> built in $(( $(date +%s) - started )) s: $out"
    fi
    ;;
  node)
    installed || { echo "node-lts.sh: Node $VERSION is not installed: run 'bash scripts/node-lts.sh install' (bootstrap.sh test does)" >&2; exit 1; }
    echo "$LTS"
    ;;
  assemble)
    dest=${2:?usage: node-lts.sh assemble OUT}
    installed || { echo "node-lts.sh: Node $VERSION is not installed: run 'bash scripts/node-lts.sh install' (bootstrap.sh test does)" >&2; exit 1; }
    built=$(sqlite_build)
    [ -s "$built" ] || { echo "node-lts.sh: $built missing: run 'bash scripts/node-lts.sh install' (bootstrap.sh test does)" >&2; exit 1; }
    bash scripts/container/build-app.sh assemble "$dest" >/dev/null
    cp "$built" "$dest/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
    echo "$dest"
    ;;
  *)
    echo "usage: node-lts.sh install | node | assemble OUT" >&2
    exit 2
    ;;
esac
