#!/usr/bin/env bash
# Runs every test: cargo's, tap's and the topology run, with the test services on loopback, and prints
# one line, "N passed, M failed". scripts/bootstrap.sh test installs everything first and then runs this
# inside a network namespace of its own (only loopback exists there) when the machine allows one.
#
# Nothing here reaches beyond loopback, and nothing here depends on CI: the same command gives the same
# tests, and the same failures, anywhere. Every package a test needs was installed before this runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
log() { printf '\n==> %s\n' "$*"; }
phase_start=$(date +%s)
phase() { local now; now=$(date +%s); printf '    (%s: %d s)\n' "$1" $((now - phase_start)); phase_start=$now; }

# ---- the fence --------------------------------------------------------------------------------------
# The loopback guard (test/setup/loopback-only.mjs, preloaded by tap into every test process and its
# children) refuses connects, lookups and UDP sends beyond loopback and appends each refusal here.
LOGS=$(mktemp -d /tmp/facecompute-tests.XXXXXX)
export TEST_LOOPBACK_GUARD_LOG=$LOGS/loopback-guard.log
: > "$TEST_LOOPBACK_GUARD_LOG"
# No proxy could carry a request out, and no tool may fetch: Go only reads the module cache bootstrap
# filled (no proxy, no checksum database, no toolchain download), pip has no index, cargo is offline,
# npm does not ask its registry for a newer npm, and curl is test/setup/bin's (loopback URLs only; the
# rest through a closed loopback port). Chromium is fenced by test/helpers/browser.ts and HAProxy by
# test/helpers/fence.ts. These hold with or without a network namespace: test/fence.test.ts proves them.
unset HTTP_PROXY HTTPS_PROXY ALL_PROXY FTP_PROXY http_proxy https_proxy all_proxy ftp_proxy
export NO_PROXY='*' no_proxy='*'
export GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOFLAGS=-mod=readonly
export PIP_NO_INDEX=1
export CARGO_NET_OFFLINE=true
export NPM_CONFIG_UPDATE_NOTIFIER=false
export PATH="$ROOT/test/setup/bin:$PATH"
# Node and Python children of this script (not only tap's) carry the guard too.
export NODE_OPTIONS="--import=$ROOT/test/setup/loopback-only.mjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
export PYTHONPATH="$ROOT/test/setup/python${PYTHONPATH:+:$PYTHONPATH}"
if [ "${FACECOMPUTE_TEST_NETNS:-}" = 1 ]; then
  echo "network: a namespace of its own, with only loopback: $(ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')"
else
  echo "network: the host's (no network namespace here); every fence still holds: the loopback guard in Node and Python, curl's wrapper, Chromium's proxy and routes, HAProxy's loopback-only configuration, GOPROXY=off, cargo offline (test/fence.test.ts)"
fi

# ---- test services ----------------------------------------------------------------------------------
# A fresh directory each run: a namespace cannot reach services a previous run left on the host.
export TEST_SERVICES_DIR=${TEST_SERVICES_DIR:-$(mktemp -d /tmp/facecompute-test-services.XXXXXX)}
source scripts/test-services.sh
start_test_services
trap 'stop_test_services' EXIT
phase "test services"

# ---- cargo ------------------------------------------------------------------------------------------
log "cargo test"
# The binding crate is a cdylib that links against Node at load time; its behaviour is tested from tap.
set +e
cargo test --offline --release -p facecompute-core > "$LOGS/cargo.log" 2>&1
cargo_rc=$?
set -e
grep -E "^(test result|failures:|---- )|panicked|skipped: " "$LOGS/cargo.log" || true
[ $cargo_rc -eq 0 ] || tail -n 60 "$LOGS/cargo.log"
cargo_pass=$({ grep -oE "test result: [a-zA-Z]+\. [0-9]+ passed" "$LOGS/cargo.log" || true; } | awk '{s+=$4} END {print s+0}')
cargo_fail=$({ grep -oE "[0-9]+ failed;" "$LOGS/cargo.log" || true; } | awk '{s+=$1} END {print s+0}')
phase "cargo test"

# ---- tap --------------------------------------------------------------------------------------------
log "tap"
set +e
node_modules/.bin/tap 2>&1 | tee "$LOGS/tap.log"
tap_rc=${PIPESTATUS[0]}
phase "tap"
# The chart's topology as real processes (two gateways behind HAProxy, two model servers, MCP,
# console, PostgreSQL, Redis): about 2-4 minutes on 2 busy cores, bounded by tap's --timeout=900.
log "test:topology"
npm run test:topology --silent 2>&1 | tee "$LOGS/topology.log"
topo_rc=${PIPESTATUS[0]}
phase "topology"
set -e

count() { # count FILE pass|fail: the last tap summary line's figure
  local line; line=$({ grep -E "^# \{ total: [0-9]+" "$1" || true; } | tail -n 1)
  local n; n=$(echo "$line" | grep -oE "$2: [0-9]+" | grep -oE "[0-9]+" || true)
  echo "${n:-0}"
}
tap_pass=$(count "$LOGS/tap.log" pass); tap_fail=$(count "$LOGS/tap.log" fail)
topo_pass=$(count "$LOGS/topology.log" pass); topo_fail=$(count "$LOGS/topology.log" fail)
# tap counts assertions; a file that crashed or timed out fails the run even with few failed asserts.
[ $tap_rc -eq 0 ] || [ "$tap_fail" -gt 0 ] || tap_fail=1
[ $topo_rc -eq 0 ] || [ "$topo_fail" -gt 0 ] || topo_fail=1

# ---- the guard's record -----------------------------------------------------------------------------
guard_fail=0
if [ -s "$TEST_LOOPBACK_GUARD_LOG" ]; then
  guard_fail=$(wc -l < "$TEST_LOOPBACK_GUARD_LOG")
  log "loopback guard: $guard_fail refused attempt(s) to leave loopback (each fails the run)"
  head -n 40 "$TEST_LOOPBACK_GUARD_LOG"
fi

# CI keeps only the tail of this output: repeat each failed assertion there, with the first lines
# of its diagnostic, so that a failure far up the log can still be named and replayed.
if [ "$tap_fail" -gt 0 ] || [ "$topo_fail" -gt 0 ]; then
  log "failures (repeated from above)"
  cat "$LOGS/tap.log" "$LOGS/topology.log" | awk '/^ *not ok /{n=12} n>0{print; n--}' | cut -c1-400 | head -n 160 || true
fi
echo
# grep exits 1 when nothing matches, which pipefail and set -e would turn into an exit before the summary.
skipped=$({ grep -cE "# SKIP" "$LOGS/tap.log" "$LOGS/topology.log" || true; } | awk -F: '{s+=$2} END {print s+0}')
cargo_ignored=$({ grep -oE "[0-9]+ ignored" "$LOGS/cargo.log" || true; } | awk '{s+=$1} END {print s+0}')
echo "$((cargo_pass + tap_pass + topo_pass)) passed, $((cargo_fail + tap_fail + topo_fail + guard_fail)) failed ($skipped tap skips and $cargo_ignored cargo ignored, each with its reason above)"
[ $cargo_rc -eq 0 ] && [ $tap_rc -eq 0 ] && [ $topo_rc -eq 0 ] && [ "$guard_fail" -eq 0 ]
