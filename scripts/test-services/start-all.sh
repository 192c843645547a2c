#!/usr/bin/env bash
# Install what is missing and start every service the tests use, on 127.0.0.1 and free
# ports, then write an env file for the tests.
#
# Usage: start-all.sh ENV_FILE
#   Source ENV_FILE afterwards; stop everything with `stop-all.sh ENV_FILE`.
#   Runtime state (logs, data, pid files) goes to a fresh temp dir, written to ENV_FILE
#   as TEST_SERVICES_STATE_DIR; downloads and builds are cached in $MEDIA_TEST_CACHE
#   (default ~/.cache/media-service-test).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/test-services/lib.sh
source "$HERE/lib.sh"

[[ $# -eq 1 ]] || {
  echo "usage: $0 ENV_FILE" >&2
  exit 2
}
ENV_FILE="$1"
mkdir -p "$(dirname "$ENV_FILE")"
ENV_FILE="$(cd "$(dirname "$ENV_FILE")" && pwd)/$(basename "$ENV_FILE")"

# Always a fresh state dir per run (an inherited one may belong to a run still going).
unset TEST_SERVICES_STATE_DIR
ts_ensure_state_dir
STATE="$TEST_SERVICES_STATE_DIR"
touch "$STATE/.media-test-services"
ts_log "state dir $STATE, cache $MEDIA_TEST_CACHE"

# Distinct free ports for all services at once.
read -r KAFKA_PORT KAFKA_CONTROLLER_PORT S3_PORT AZURITE_PORT GCS_PORT <<<"$(ts_free_ports 5)"
export KAFKA_PORT KAFKA_CONTROLLER_PORT S3_PORT AZURITE_PORT GCS_PORT

declare -A JOBS=()

cleanup_on_signal() {
  trap - INT TERM
  ts_log "interrupted: stopping what was started"
  local pid
  for pid in "${JOBS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
  TEST_SERVICES_KEEP_STATE="${TEST_SERVICES_KEEP_STATE:-}" bash "$HERE/stop-all.sh" "" || true
  exit 130
}
trap cleanup_on_signal INT TERM

started=$SECONDS
# Kafka's JVM is the slowest, so it goes first; the rest start alongside it.
bash "$HERE/kafka.sh" start &
JOBS[kafka]=$!
bash "$HERE/s3.sh" start &
JOBS[s3]=$!
bash "$HERE/gcs.sh" start &
JOBS[gcs]=$!
bash "$HERE/azurite.sh" start &
JOBS[azurite]=$!
bash "$HERE/ffmpeg.sh" install &
JOBS[ffmpeg]=$!
bash "$HERE/vmaf.sh" install &
JOBS[vmaf]=$!
bash "$HERE/corpus.sh" install &
JOBS[corpus]=$!
bash "$HERE/schema-registry.sh" start &
JOBS[schema-registry]=$!
bash "$HERE/chromium.sh" install &
JOBS[chromium]=$!

failed=()
for name in kafka s3 gcs azurite ffmpeg vmaf corpus schema-registry chromium; do
  if ! wait "${JOBS[$name]}"; then
    failed+=("$name")
  fi
done

if ((${#failed[@]} > 0)); then
  ts_log "FAILED to start: ${failed[*]} (state dir $STATE)"
  TEST_SERVICES_KEEP_STATE=1 bash "$HERE/stop-all.sh" "" || true
  ts_log "logs kept in $STATE"
  exit 1
fi

tmp_env="$ENV_FILE.tmp.$$"
{
  echo "# written by scripts/test-services/start-all.sh on $(date -Is)"
  echo "export MEDIA_TEST_CACHE=$MEDIA_TEST_CACHE"
  echo "export TEST_SERVICES_STATE_DIR=$STATE"
  bash "$HERE/kafka.sh" env
  bash "$HERE/s3.sh" env
  bash "$HERE/azurite.sh" env
  bash "$HERE/gcs.sh" env
  bash "$HERE/ffmpeg.sh" env
  bash "$HERE/vmaf.sh" env
  bash "$HERE/corpus.sh" env
  bash "$HERE/schema-registry.sh" env
  bash "$HERE/chromium.sh" env
} >"$tmp_env"
mv "$tmp_env" "$ENV_FILE"
cp "$ENV_FILE" "$STATE/env"
ts_log "all services ready in $((SECONDS - started))s; env file $ENV_FILE"
