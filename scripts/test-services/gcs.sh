#!/usr/bin/env bash
# Google Cloud Storage emulator: fake-gcs-server, built once with `go install` into the cache.
# Usage: gcs.sh install|start|stop|env
# Optional for start: GCS_PORT.
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FAKE_GCS_VERSION=v1.55.1
FAKE_GCS_HOME="$MEDIA_TEST_CACHE/fake-gcs-server-$FAKE_GCS_VERSION"
FAKE_GCS_BIN="$FAKE_GCS_HOME/bin/fake-gcs-server"
GCS_READY_TIMEOUT="${GCS_READY_TIMEOUT:-60}"

state_paths() {
  GDIR="$TEST_SERVICES_STATE_DIR/gcs"
  PIDFILE="$GDIR/fake-gcs-server.pid"
  LOGFILE="$GDIR/fake-gcs-server.log"
}

build() {
  [[ -x "$FAKE_GCS_BIN" && -f "$FAKE_GCS_HOME/.complete" ]] && return 0
  command -v go >/dev/null || ts_die "gcs: the go toolchain is missing"
  ts_log "gcs: building fake-gcs-server@$FAKE_GCS_VERSION (first run only)"
  mkdir -p "$FAKE_GCS_HOME"
  local log="$FAKE_GCS_HOME/build.log"
  # Modules and build cache live in the cache folder too; cgo is not needed.
  if ! env GOBIN="$FAKE_GCS_HOME/bin" GOPATH="$MEDIA_TEST_CACHE/go" \
    GOMODCACHE="$MEDIA_TEST_CACHE/go/pkg/mod" GOCACHE="$MEDIA_TEST_CACHE/go/build-cache" \
    CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local \
    go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" >"$log" 2>&1; then
    ts_log_tail "$log"
    ts_die "gcs: go install fake-gcs-server failed"
  fi
  [[ -x "$FAKE_GCS_BIN" ]] || ts_die "gcs: $FAKE_GCS_BIN missing after go install"
  # The binary is what is kept; the build cache would only take disk space.
  rm -rf "$MEDIA_TEST_CACHE/go/build-cache"
  touch "$FAKE_GCS_HOME/.complete"
}

do_install() {
  ts_with_lock "fake-gcs-server-$FAKE_GCS_VERSION" build
}

do_start() {
  ts_ensure_state_dir
  state_paths
  do_install
  local port started
  ts_already_running gcs "$PIDFILE" && return 0
  port="$(ts_service_port "$GDIR" "${GCS_PORT:-}")"
  started=$SECONDS
  # -external-url: without it, resumable upload sessions point at 0.0.0.0.
  (cd "$GDIR" && ts_spawn "$PIDFILE" "$LOGFILE" "$FAKE_GCS_BIN" -backend memory -scheme http \
    -host 127.0.0.1 -port "$port" -external-url "http://127.0.0.1:$port" -log-level info)
  ts_await_ready gcs "$PIDFILE" "$LOGFILE" "http://127.0.0.1:$port/_internal/healthcheck" "$GCS_READY_TIMEOUT" "$started" 200
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
    echo "export TEST_GCS_ENDPOINT=http://127.0.0.1:$(cat "$GDIR/port")"
    echo "export TEST_GCS_PROJECT=test-project"
    ;;
  *)
    echo "usage: $0 install|start|stop|env" >&2
    exit 2
    ;;
esac
