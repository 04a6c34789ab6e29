#!/usr/bin/env bash
# Times a fresh clone to /readiness 200 with `bash scripts/bootstrap.sh serve`: clones this checkout's
# HEAD (or $REPO) into $TIMING_DIR/NAME, runs bootstrap there with every output line stamped with the
# seconds since the start (bootstrap prints each step's time), and stops once /readiness answers 200.
#   cold: empty npm, pip and cargo caches (HOME and CARGO_HOME of its own; the rustup toolchain is
#         shared), no local wheel directory, an empty models cache
#   warm: the machine's npm, pip and cargo caches; an empty models cache
# Not a test: it needs the registries (npm, PyPI, crates.io, Debian). apt packages already installed
# are not reinstalled, so the apt step is only measured on a machine without them.
#   bench/bootstrap/time-fresh-clone.sh NAME cold|warm   -> $TIMING_DIR/NAME/bootstrap.log
set -u
name=$1; kind=$2
base=${TIMING_DIR:-/tmp/facecompute-timing}/$name
rm -rf "$base"; mkdir -p "$base"
git clone -q "${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}" "$base/clone"
cd "$base/clone"
export FACECOMPUTE_GATEWAY_PORT=${PORT_BASE:-25180} FACECOMPUTE_MCP_PORT=$((${PORT_BASE:-25180} + 1)) FACECOMPUTE_CONSOLE_PORT=$((${PORT_BASE:-25180} + 2)) FACECOMPUTE_MODEL_SERVER_PORT=$((${PORT_BASE:-25180} + 10)) FACECOMPUTE_DATA_DIR=$base/data
export RUSTUP_HOME=${RUSTUP_HOME:-/root/.rustup}
if [ "$kind" = cold ]; then
  # Empty client caches: npm (~/.npm), pip (~/.cache/pip), cargo's registry (CARGO_HOME), the models cache.
  export HOME=$base/home CARGO_HOME=$base/cargo; mkdir -p "$HOME" "$CARGO_HOME"
  export PATH=/root/.cargo/bin:$PATH
  unset PIP_FIND_LINKS XDG_CACHE_HOME
  cp /root/.npmrc "$HOME/.npmrc" 2>/dev/null || true   # the machine's npm settings (nodedir), not its cache
else
  # The machine's warm caches (npm, pip, cargo); a fresh models cache of its own.
  export XDG_CACHE_HOME=$base/xdg PIP_CACHE_DIR=/root/.cache/pip
fi
t0=$(date +%s.%N)
echo "start $(date -Is) load $(cut -d' ' -f1-3 /proc/loadavg) kind $kind"
stamp() { while IFS= read -r line; do printf '%7.1f %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$line"; done; }
( nice -n 10 bash scripts/bootstrap.sh serve 2>&1 | stamp > "$base/bootstrap.log" ) &
bpid=$!
code=0
while :; do
  code=$(curl -s -o /dev/null -w '%{http_code}' localhost:$FACECOMPUTE_GATEWAY_PORT/readiness || true)
  [ "$code" = 200 ] && break
  kill -0 "$bpid" 2>/dev/null || break
  sleep 1
done
t1=$(date +%s.%N)
printf 'readiness %s after %.0f s, load %s\n' "$code" "$(echo "$t1 - $t0" | bc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
du -sh node_modules target .venv "${XDG_CACHE_HOME:-$HOME/.cache}/facecompute" 2>/dev/null
# Stop what bootstrap started: the serve it exec'd (and its model-server child).
for p in $(pgrep -f "facecompute.js serve"); do [ "$(readlink /proc/$p/cwd)" = "$base/clone" ] && kill -TERM "$p"; done
wait
