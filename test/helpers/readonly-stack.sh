#!/usr/bin/env bash
# Runs an assembled image tree the way the chart runs the image: as uid 10001, with the application
# and the models read-only, a fresh /tmp (the pod's emptyDir) and data directory, and nothing else
# writable.
#
#   readonly-stack.sh APP_DIR MODELS_DIR
# Environment: MS_PORT, GW_PORT, CONSOLE_PORT, MCP_PORT (passed to the processes).
# Starts the model server, the gateway, the console and the MCP endpoint (each its own process, as
# each is its own Deployment) and waits; SIGTERM stops them all. It prints, before anything starts:
#   LAYOUT <mount|permissions> FENCE=<dir> GUARD_LOG=<file>   where the processes find the guard
#   READONLY-OK                                              the write check below held
#   STARTED <pids>
#
# Two layouts, the first this machine allows:
#   - mount: a private mount namespace (unshare, root) builds the pod's tree: /opt/facecompute/{app,
#     models} bind-mounted read-only, tmpfs on /tmp and the data directory, /var/tmp and /dev/shm
#     closed, as uid 10001.
#   - permissions (no `unshare --mount`, as in most containers): the same tree by ownership. As root,
#     the processes run as uid 10001, which owns only a private tmp and data directory; the app and
#     models stay root's, readable and not writable. Not root, they run as this user with the app and
#     models made read-only (restored on exit). The host's own world-writable directories stay open
#     here; TMPDIR points at the private tmp.
#
# The processes start with `env -i`, as the image's entrypoint would, but keep the loopback guard: the
# guard (test/setup) is reachable read-only and preloaded by NODE_OPTIONS, and its refusals, logged in
# the pod's tmp, are appended to the run's TEST_LOOPBACK_GUARD_LOG on exit.
set -euo pipefail
app=$(cd "$1" && pwd)
models=$(cd "$2" && pwd)
node_bin=$(command -v node)
fence=$(cd "$(dirname "${BASH_SOURCE[0]}")/../setup" && pwd)
guard_log=${TEST_LOOPBACK_GUARD_LOG:-}
export app models node_bin fence guard_log

# What both layouts share, given: APP MODELS DATA PODTMP FENCE GUARD_DIR and as_user (the command
# prefix that becomes the app user), and CLOSED (directories that must not be writable).
read -r -d '' STACK <<'STACK' || true
as_app() {
  "${as_user[@]}" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$PODTMP" TMPDIR="$PODTMP" NODE_ENV=production \
      NODE_OPTIONS="--import=$FENCE/loopback-only.mjs" TEST_LOOPBACK_GUARD_LOG="$PODTMP/loopback-guard.log" \
      FACECOMPUTE_HOST=127.0.0.1 FACECOMPUTE_MODELS_CACHE="$MODELS" FACECOMPUTE_DATA_DIR="$DATA" \
      FACECOMPUTE_LOG_LEVEL=warn FACECOMPUTE_ALLOWED_MODELS=Dlib FACECOMPUTE_DEFAULT_MODEL=Dlib \
      "$@" "$node_bin" "$APP/bin/facecompute.js" "$cmd" &
}
# The proof that the image's assumptions hold: the app user can write to its tmp and the data
# volume and nowhere else that matters.
check_writes() {
  "${as_user[@]}" bash -c '
    for d in "$1" "$2"; do touch "$d/.w" && rm "$d/.w" || { echo "WRITE-FAILED $d"; exit 1; }; done
    shift 2
    for d; do
      if touch "$d/.w" 2>/dev/null; then echo "WRITABLE $d"; exit 1; fi
    done
    echo READONLY-OK' check "$PODTMP" "$DATA" "${CLOSED[@]}"
}
echo "LAYOUT $LAYOUT FENCE=$FENCE GUARD_LOG=$PODTMP/loopback-guard.log"
check_writes
pids=()
# The app user's refusals, into the run's log (a refusal there fails the run, as anywhere else).
keep_guard_log() {
  if [ -n "$guard_log" ] && [ -s "$PODTMP/loopback-guard.log" ]; then cat "$PODTMP/loopback-guard.log" >> "$GUARD_DIR/$(basename "$guard_log")"; fi
}
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; keep_guard_log; cleanup' TERM INT
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
cleanup
exit 1
STACK
export STACK

if unshare --mount --propagation private true 2>/dev/null; then
  exec unshare --mount --propagation private -- bash -c '
set -euo pipefail
# /opt becomes a small tree of its own: the image'"'"'s two read-only directories and the data volume.
mount -t tmpfs -o size=1m,mode=755 tmpfs /opt
mkdir -p /opt/facecompute/app /opt/facecompute/models /opt/facecompute/data /opt/facecompute/fence /opt/facecompute/guard-log
mount --bind "$app" /opt/facecompute/app
mount -o remount,bind,ro /opt/facecompute/app
mount --bind "$models" /opt/facecompute/models
mount -o remount,bind,ro /opt/facecompute/models
mount --bind "$fence" /opt/facecompute/fence
mount -o remount,bind,ro /opt/facecompute/fence
# The run'"'"'s guard log, reachable after /tmp is replaced (root appends to it; the app user cannot).
if [ -n "$guard_log" ]; then mount --bind "$(dirname "$guard_log")" /opt/facecompute/guard-log; fi
mount -t tmpfs -o size=64m,uid=10001,gid=10001,mode=700 tmpfs /opt/facecompute/data
mount -o remount,ro /opt
# The pod'"'"'s /tmp (an emptyDir); other world-writable places of the host are closed.
mount -t tmpfs -o size=256m,mode=1777 tmpfs /tmp
mount -t tmpfs -o ro tmpfs /var/tmp
mount -t tmpfs -o ro tmpfs /dev/shm
LAYOUT=mount APP=/opt/facecompute/app MODELS=/opt/facecompute/models DATA=/opt/facecompute/data PODTMP=/tmp
FENCE=/opt/facecompute/fence GUARD_DIR=/opt/facecompute/guard-log
as_user=(setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all --)
CLOSED=(/opt/facecompute/app /opt/facecompute/models /opt/facecompute/models/onnx / /opt /var/tmp /dev/shm /root /etc)
cleanup() { :; }
eval "$STACK"'
fi

# The permissions layout.
LAYOUT=permissions APP=$app MODELS=$models
rt=$(mktemp -d "${TMPDIR:-/tmp}/fc-pod-XXXXXX")
chmod 755 "$rt"
mkdir -p "$rt/tmp" "$rt/data"
cp -R "$fence" "$rt/fence"
chmod -R a+rX,go-w "$rt/fence"
DATA=$rt/data PODTMP=$rt/tmp FENCE=$rt/fence GUARD_DIR=$(dirname "${guard_log:-/dev/null}")
CLOSED=("$APP" "$MODELS" "$MODELS/onnx" "$FENCE" / /etc)
app_user=(setpriv --reuid=10001 --regid=10001 --clear-groups --inh-caps=-all --bounding-set=-all --)
if [ "$(id -u)" = 0 ] && "${app_user[@]}" true 2>/dev/null; then
  as_user=("${app_user[@]}")
  chown 10001:10001 "$rt/tmp" "$rt/data"
  chmod 700 "$rt/tmp" "$rt/data"
  # uid 10001 must reach the trees it reads: their parent directories get search permission.
  for d in "$APP" "$MODELS"; do
    p=$(dirname "$d")
    while [ "$p" != / ]; do chmod o+x "$p"; p=$(dirname "$p"); done
  done
  CLOSED+=(/root)
  cleanup() { rm -rf "$rt"; }
else
  as_user=(env)
  chmod -R a-w "$APP" "$MODELS"
  cleanup() { chmod -R u+w "$APP" "$MODELS"; rm -rf "$rt"; }
fi
eval "$STACK"
