#!/usr/bin/env bash
# A Confluent-compatible schema registry: Apicurio Registry 2.6 (in-memory storage), whose
# runnable zip is published on Maven Central. Its Confluent API is under /apis/ccompat/v7.
# Usage: schema-registry.sh install|start|stop|env
# Optional for start: SCHEMA_REGISTRY_PORT.
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

APICURIO_VERSION=2.6.13.Final
APICURIO_HOME="$MEDIA_TEST_CACHE/apicurio-$APICURIO_VERSION"
REGISTRY_READY_TIMEOUT="${REGISTRY_READY_TIMEOUT:-120}"

state_paths() {
  RDIR="$TEST_SERVICES_STATE_DIR/schema-registry"
  PIDFILE="$RDIR/registry.pid"
  LOGFILE="$RDIR/registry.log"
}

fetch_zip() {
  [[ -f "$APICURIO_HOME/.complete" ]] && return 0
  ts_log "schema-registry: fetching io.apicurio:apicurio-registry-app:$APICURIO_VERSION:zip:all"
  local work="$APICURIO_HOME.tmp"
  rm -rf "$work"
  mkdir -p "$work"
  if ! mvn -B -q -Dmaven.repo.local="$MEDIA_TEST_CACHE/m2" dependency:copy \
    -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:zip:all" \
    -DoutputDirectory="$work" >"$work/mvn.log" 2>&1; then
    ts_log_tail "$work/mvn.log" 80
    ts_die "schema-registry: mvn dependency:copy failed"
  fi
  (cd "$work" && unzip -q ./*.zip && rm -f ./*.zip)
  [[ -f "$work/apicurio-registry-app-$APICURIO_VERSION-runner.jar" ]] || ts_die "schema-registry: runner jar missing after unzip"
  rm -rf "$APICURIO_HOME"
  mv "$work" "$APICURIO_HOME"
  touch "$APICURIO_HOME/.complete"
}

do_install() {
  local missing=()
  command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  command -v unzip >/dev/null || missing+=(unzip)
  if ((${#missing[@]} > 0)); then
    ts_with_lock apt ts_apt_install "${missing[@]}"
  fi
  ts_with_lock "apicurio-$APICURIO_VERSION" fetch_zip
}

do_start() {
  ts_ensure_state_dir
  state_paths
  do_install
  local port started
  ts_already_running schema-registry "$PIDFILE" && return 0
  port="$(ts_service_port "$RDIR" "${SCHEMA_REGISTRY_PORT:-}")"
  started=$SECONDS
  (cd "$RDIR" && ts_spawn "$PIDFILE" "$LOGFILE" java -Xms128m -Xmx384m -XX:+UseSerialGC \
    -XX:TieredStopAtLevel=1 -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -jar "$APICURIO_HOME/apicurio-registry-app-$APICURIO_VERSION-runner.jar")
  ts_await_ready schema-registry "$PIDFILE" "$LOGFILE" "http://127.0.0.1:$port/apis/ccompat/v7/subjects" "$REGISTRY_READY_TIMEOUT" "$started" 200
}

case "${1:-}" in
  install) do_install ;;
  start) do_start ;;
  stop)
    ts_require_state_dir
    state_paths
    ts_stop_pidfile "$PIDFILE" 10
    ;;
  env)
    ts_require_state_dir
    state_paths
    echo "export TEST_SCHEMA_REGISTRY_URL=http://127.0.0.1:$(cat "$RDIR/port")/apis/ccompat/v7"
    ;;
  *)
    echo "usage: $0 install|start|stop|env" >&2
    exit 2
    ;;
esac
