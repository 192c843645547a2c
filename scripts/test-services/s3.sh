#!/usr/bin/env bash
# S3-compatible server: moto in server mode, from a venv in the cache.
# Usage: s3.sh install|start|stop|env
# Optional for start: S3_PORT.
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MOTO_VERSION=5.2.5
# Only what S3 in server mode needs: moto[server] would pull in every AWS service's
# dependencies (twice the size and time).
MOTO_PACKAGES=("moto[s3,s3crc32c]==$MOTO_VERSION" flask flask-cors)
MOTO_VENV="$MEDIA_TEST_CACHE/moto-$MOTO_VERSION-s3"
S3_READY_TIMEOUT="${S3_READY_TIMEOUT:-90}"

state_paths() {
  SDIR="$TEST_SERVICES_STATE_DIR/s3"
  PIDFILE="$SDIR/moto.pid"
  LOGFILE="$SDIR/moto.log"
}

build_venv() {
  if [[ -f "$MOTO_VENV/.complete" ]] && "$MOTO_VENV/bin/python" -c "" 2>/dev/null; then
    return 0
  fi
  ts_log "s3: installing ${MOTO_PACKAGES[*]} into $MOTO_VENV"
  rm -rf "$MOTO_VENV"
  python3 -m venv "$MOTO_VENV" || ts_die "s3: python3 -m venv failed (apt-get install python3-venv?)"
  if ! "$MOTO_VENV/bin/python" -m pip install -q "${MOTO_PACKAGES[@]}" \
    >"$MOTO_VENV/pip.log" 2>&1; then
    ts_log_tail "$MOTO_VENV/pip.log"
    ts_die "s3: pip install moto failed"
  fi
  "$MOTO_VENV/bin/python" -c 'import moto.server' || ts_die "s3: moto does not import"
  touch "$MOTO_VENV/.complete"
}

do_install() {
  command -v python3 >/dev/null || ts_with_lock apt ts_apt_install python3 python3-venv
  ts_with_lock "moto-$MOTO_VERSION" build_venv
}

do_start() {
  ts_ensure_state_dir
  state_paths
  do_install
  local port started
  ts_already_running s3 "$PIDFILE" && return 0
  port="$(ts_service_port "$SDIR" "${S3_PORT:-}")"
  started=$SECONDS
  (cd "$SDIR" && ts_spawn "$PIDFILE" "$LOGFILE" "$MOTO_VENV/bin/python" -m moto.server \
    -H 127.0.0.1 -p "$port")
  # GET / is S3 ListBuckets; 200 once moto serves.
  ts_await_ready s3 "$PIDFILE" "$LOGFILE" "http://127.0.0.1:$port/" "$S3_READY_TIMEOUT" "$started" 200
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
    echo "export TEST_S3_ENDPOINT=http://127.0.0.1:$(cat "$SDIR/port")"
    echo "export TEST_S3_REGION=us-east-1"
    echo "export TEST_S3_ACCESS_KEY_ID=test"
    echo "export TEST_S3_SECRET_ACCESS_KEY=test"
    ;;
  *)
    echo "usage: $0 install|start|stop|env" >&2
    exit 2
    ;;
esac
