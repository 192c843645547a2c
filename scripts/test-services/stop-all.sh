#!/usr/bin/env bash
# Stop every service that start-all.sh started (by the pid files in the state dir), then
# remove the state dir (set TEST_SERVICES_KEEP_STATE=1 to keep logs and data).
# Idempotent: stopping twice, or with nothing started, is fine.
#
# Usage: stop-all.sh [ENV_FILE]
#   The state dir comes from ENV_FILE when given (and present), else from
#   $TEST_SERVICES_STATE_DIR.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/test-services/lib.sh
source "$HERE/lib.sh"

state="${TEST_SERVICES_STATE_DIR:-}"
if [[ -n "${1:-}" ]]; then
  if [[ -f "$1" ]]; then
    line="$(grep -E '^export TEST_SERVICES_STATE_DIR=' "$1" | tail -n 1 || true)"
    state="${line#export TEST_SERVICES_STATE_DIR=}"
  else
    state=""
  fi
fi
if [[ -z "$state" || ! -d "$state" ]]; then
  exit 0
fi

# Stop all at once (Kafka's graceful shutdown takes a few seconds). The three-node cluster, when
# a test left it running, stops its own way (kafka-cluster.sh: its last node has no quorum left).
pids=()
if [[ -d "$state/kafka-cluster" ]]; then
  TEST_SERVICES_STATE_DIR="$state" bash "$HERE/kafka.sh" cluster-stop &
  pids+=("$!")
fi
while IFS= read -r -d '' pidfile; do
  ts_stop_pidfile "$pidfile" 30 &
  pids+=("$!")
done < <(find "$state" -name '*.pid' -type f -not -path "$state/kafka-cluster/*" -print0)
for pid in "${pids[@]}"; do wait "$pid" || true; done

if [[ "${TEST_SERVICES_KEEP_STATE:-}" != 1 && -f "$state/.media-test-services" ]]; then
  rm -rf "$state"
fi
