#!/usr/bin/env bash
# Runs an assembled image tree the way the chart runs the image: as uid 10001, with the application
# and the models read-only, a fresh tmpfs on /tmp (the pod's emptyDir) and on the data directory,
# and nothing else writable. A private mount namespace (unshare) keeps all of it away from the host.
#
#   readonly-stack.sh APP_DIR MODELS_DIR
# Environment: MS_PORT, GW_PORT, CONSOLE_PORT, MCP_PORT, INTERNAL_TOKEN (passed to the processes).
# Starts the model server, the gateway, the console and the MCP endpoint (each its own process, as
# each is its own Deployment) and waits; SIGTERM stops them all.
#
# The processes start with `env -i`, as the image's entrypoint would, but keep the loopback guard: the
# guard (test/setup) is mounted read-only at /opt/facecompute/fence and preloaded by NODE_OPTIONS, and its
# refusals, logged inside to the pod's /tmp, are appended to the run's TEST_LOOPBACK_GUARD_LOG on exit.
set -euo pipefail
app=$(cd "$1" && pwd)
models=$(cd "$2" && pwd)
node_bin=$(command -v node)
fence=$(cd "$(dirname "${BASH_SOURCE[0]}")/../setup" && pwd)
guard_log=${TEST_LOOPBACK_GUARD_LOG:-}
exec unshare --mount --propagation private -- bash -s "$app" "$models" "$node_bin" "$fence" "$guard_log" <<'INNER'
set -euo pipefail
app=$1; models=$2; node_bin=$3; fence=$4; guard_log=$5
# /opt becomes a small tree of its own: the image's two read-only directories and the data volume.
mount -t tmpfs -o size=1m,mode=755 tmpfs /opt
mkdir -p /opt/facecompute/app /opt/facecompute/models /opt/facecompute/data /opt/facecompute/fence /opt/facecompute/guard-log
mount --bind "$app" /opt/facecompute/app
mount -o remount,bind,ro /opt/facecompute/app
mount --bind "$models" /opt/facecompute/models
mount -o remount,bind,ro /opt/facecompute/models
mount --bind "$fence" /opt/facecompute/fence
mount -o remount,bind,ro /opt/facecompute/fence
# The run's guard log, reachable after /tmp is replaced (root appends to it; the app user cannot).
if [ -n "$guard_log" ]; then mount --bind "$(dirname "$guard_log")" /opt/facecompute/guard-log; fi
mount -t tmpfs -o size=64m,uid=10001,gid=10001,mode=700 tmpfs /opt/facecompute/data
mount -o remount,ro /opt
# The pod's /tmp (an emptyDir); other world-writable places of the host are closed.
mount -t tmpfs -o size=256m,mode=1777 tmpfs /tmp
mount -t tmpfs -o ro tmpfs /var/tmp
mount -t tmpfs -o ro tmpfs /dev/shm
as_app() {
  setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all -- \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp NODE_ENV=production \
      NODE_OPTIONS=--import=/opt/facecompute/fence/loopback-only.mjs TEST_LOOPBACK_GUARD_LOG=/tmp/loopback-guard.log \
      FACECOMPUTE_HOST=127.0.0.1 FACECOMPUTE_MODELS_CACHE=/opt/facecompute/models FACECOMPUTE_DATA_DIR=/opt/facecompute/data \
      FACECOMPUTE_LOG_LEVEL=warn FACECOMPUTE_ALLOWED_MODELS=Dlib FACECOMPUTE_DEFAULT_MODEL=Dlib \
      "$@" "$node_bin" /opt/facecompute/app/bin/facecompute.js "$cmd" &
}
# The proof that the image's assumptions hold: the app user can write to /tmp and the data volume
# and nowhere else.
check_writes() {
  setpriv --reuid=10001 --regid=10001 --clear-groups -- bash -c '
    for d in /tmp /opt/facecompute/data; do touch "$d/.w" && rm "$d/.w" || { echo "WRITE-FAILED $d"; exit 1; }; done
    for d in /opt/facecompute/app /opt/facecompute/models /opt/facecompute/models/onnx / /opt /var/tmp /dev/shm /root /etc; do
      if touch "$d/.w" 2>/dev/null; then echo "WRITABLE $d"; exit 1; fi
    done
    echo READONLY-OK'
}
check_writes
pids=()
# The app user's refusals, into the run's log (a refusal there fails the run, as anywhere else).
keep_guard_log() {
  if [ -n "$guard_log" ] && [ -s /tmp/loopback-guard.log ]; then cat /tmp/loopback-guard.log >> "/opt/facecompute/guard-log/$(basename "$guard_log")"; fi
}
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; keep_guard_log' TERM INT
cd /
cmd=model-server; as_app FACECOMPUTE_MODEL_SERVER_PORT="$MS_PORT"; pids+=($!)
common=(FACECOMPUTE_MODEL_SERVER_URLS="http://127.0.0.1:$MS_PORT")
cmd=gateway; as_app "${common[@]}" FACECOMPUTE_GATEWAY_PORT="$GW_PORT"; pids+=($!)
cmd=console; as_app FACECOMPUTE_CONSOLE_PORT="$CONSOLE_PORT"; pids+=($!)
cmd=mcp; as_app "${common[@]}" FACECOMPUTE_MCP_PORT="$MCP_PORT"; pids+=($!)
echo "STARTED ${pids[*]}"
wait -n "${pids[@]}" || true
echo "EXITED: a process stopped" >&2
kill -TERM "${pids[@]}" 2>/dev/null || true
wait
keep_guard_log
exit 1
INNER
