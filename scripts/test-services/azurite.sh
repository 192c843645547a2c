#!/usr/bin/env bash
# Azurite, blob service only, in memory, from the project's node_modules.
# Usage: azurite.sh start|stop|env
# Optional for start: AZURITE_PORT.
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

AZURITE_READY_TIMEOUT="${AZURITE_READY_TIMEOUT:-60}"
AZURITE_MAIN="$TS_REPO_ROOT/node_modules/azurite/dist/src/blob/main.js"
AZURITE_CONSTANTS="$TS_REPO_ROOT/node_modules/azurite/dist/src/blob/utils/constants.js"

state_paths() {
  ADIR="$TEST_SERVICES_STATE_DIR/azurite"
  PIDFILE="$ADIR/azurite.pid"
  LOGFILE="$ADIR/azurite.log"
}

# The dev account's name and key, as the installed emulator defines them.
account_value() {
  "$(ts_node)" -e '
    const c = require(process.argv[1]);
    const v = c[process.argv[2]];
    if (typeof v !== "string" || v === "") process.exit(1);
    console.log(v);' "$AZURITE_CONSTANTS" "$1"
}

do_start() {
  ts_ensure_state_dir
  state_paths
  ts_require_node_modules azurite
  [[ -f "$AZURITE_MAIN" ]] || ts_die "azurite: $AZURITE_MAIN not found (azurite layout changed?)"
  local port started
  ts_already_running azurite "$PIDFILE" && return 0
  mkdir -p "$ADIR/workdir"
  port="$(ts_service_port "$ADIR" "${AZURITE_PORT:-}")"
  started=$SECONDS
  # Run with the project's Node (>= 22), not whatever `node` is first on PATH.
  (cd "$ADIR/workdir" && ts_spawn "$PIDFILE" "$LOGFILE" "$(ts_node)" "$AZURITE_MAIN" \
    --blobHost 127.0.0.1 --blobPort "$port" \
    --inMemoryPersistence --loose --disableTelemetry --skipApiVersionCheck)
  # Any HTTP answer means it serves; unauthenticated calls get an error status.
  ts_await_ready azurite "$PIDFILE" "$LOGFILE" "http://127.0.0.1:$port/devstoreaccount1?comp=list" "$AZURITE_READY_TIMEOUT" "$started"
}

case "${1:-}" in
  start) do_start ;;
  stop)
    ts_require_state_dir
    state_paths
    ts_stop_pidfile "$PIDFILE" 10
    ;;
  env)
    ts_require_state_dir
    state_paths
    account="$(account_value EMULATOR_ACCOUNT_NAME)" || ts_die "azurite: no EMULATOR_ACCOUNT_NAME constant"
    key="$(account_value EMULATOR_ACCOUNT_KEY_STR)" || ts_die "azurite: no EMULATOR_ACCOUNT_KEY_STR constant"
    echo "export TEST_AZURE_BLOB_ENDPOINT=http://127.0.0.1:$(cat "$ADIR/port")/$account"
    echo "export TEST_AZURE_ACCOUNT=$account"
    echo "export TEST_AZURE_KEY=$key"
    ;;
  *)
    echo "usage: $0 start|stop|env" >&2
    exit 2
    ;;
esac
