# Services the test suite uses, on loopback only: Redis and PostgreSQL in throwaway directories.
# Sourced by bootstrap.sh; exports FACECOMPUTE_TEST_REDIS_URL and FACECOMPUTE_TEST_DATABASE_URL.
TEST_SERVICES_DIR=${TEST_SERVICES_DIR:-/tmp/facecompute-test-services}
TEST_REDIS_PORT=${TEST_REDIS_PORT:-6391}
TEST_PG_PORT=${TEST_PG_PORT:-54391}

start_test_services() {
  mkdir -p "$TEST_SERVICES_DIR"
  # Redis
  if ! redis-cli -h 127.0.0.1 -p "$TEST_REDIS_PORT" ping >/dev/null 2>&1; then
    redis-server --bind 127.0.0.1 --port "$TEST_REDIS_PORT" --save '' --appendonly no \
      --daemonize yes --dir "$TEST_SERVICES_DIR" --logfile "$TEST_SERVICES_DIR/redis.log" \
      --pidfile "$TEST_SERVICES_DIR/redis.pid"
    for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p "$TEST_REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  fi
  export FACECOMPUTE_TEST_REDIS_URL="redis://127.0.0.1:$TEST_REDIS_PORT"
  # PostgreSQL (initdb refuses root, so it runs as the postgres user when we are root)
  local pgbin; pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  local pgdata="$TEST_SERVICES_DIR/pg"
  local as=(); [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  if [ -n "$pgbin" ]; then
    if [ ! -f "$pgdata/PG_VERSION" ]; then
      mkdir -p "$pgdata"; [ "$(id -u)" -eq 0 ] && chown -R postgres "$TEST_SERVICES_DIR"
      "${as[@]}" "$pgbin/initdb" -D "$pgdata" -U facecompute --auth=trust >/dev/null
    fi
    if ! "${as[@]}" "$pgbin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
      "${as[@]}" "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/log" -w \
        -o "-c listen_addresses=127.0.0.1 -p $TEST_PG_PORT -k $TEST_SERVICES_DIR -c fsync=off" start >/dev/null
    fi
    "$pgbin/psql" -h 127.0.0.1 -p "$TEST_PG_PORT" -U facecompute -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname='facecompute_test'" | grep -q 1 ||
      "$pgbin/psql" -h 127.0.0.1 -p "$TEST_PG_PORT" -U facecompute -d postgres -qc "CREATE DATABASE facecompute_test"
    export FACECOMPUTE_TEST_DATABASE_URL="postgres://facecompute@127.0.0.1:$TEST_PG_PORT/facecompute_test"
  fi
}

stop_test_services() {
  redis-cli -h 127.0.0.1 -p "$TEST_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  local pgbin; pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  local as=(); [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  [ -n "$pgbin" ] && "${as[@]}" "$pgbin/pg_ctl" -D "$TEST_SERVICES_DIR/pg" -m fast stop >/dev/null 2>&1 || true
}
