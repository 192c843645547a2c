#!/usr/bin/env bash
# The whole test command (`npm test`):
#   1. npm ci (npm install without a lockfile) when node_modules is missing, npm install
#      when it is older than package.json / package-lock.json
#   2. eslint, tsc --noEmit, prettier --check
#   3. start the real test services (scripts/test-services/start-all.sh), always stopped
#      again on exit, failure or Ctrl-C
#   4. mocha over test/**/*.test.ts with the env of those services
# Exits non-zero when anything fails. The last two lines printed are always "N skipped" and
# "N passed, N failed". With CI=true a skipped test counts as a failure: nothing is skipped
# silently in CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
SERVICES="$ROOT/scripts/test-services"
REPORTER="test/support/summary-reporter.cjs"

RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/media-test-run.XXXXXX")"
ENV_FILE="$RUN_DIR/services.env"
services_started=0

say() { printf '[test-all] %s\n' "$*"; }

stop_services() {
  if ((services_started)); then
    services_started=0
    # Quiet: nothing may follow the closing summary line.
    bash "$SERVICES/stop-all.sh" "$ENV_FILE" >>"$RUN_DIR/stop-all.log" 2>&1 || true
  fi
}

# shellcheck disable=SC2317  # invoked by the EXIT trap
on_exit() {
  local rc=$?
  stop_services
  if ((rc == 0)); then rm -rf "$RUN_DIR"; fi
  exit "$rc"
}
trap on_exit EXIT
trap 'echo; say "interrupted"; printf "0 skipped\n0 passed, 1 failed\n"; exit 130' INT TERM

# A step that fails before mocha runs: report it, end with the plain summary lines.
fail_early() {
  say "FAILED: $*"
  printf '0 skipped\n0 passed, 1 failed\n'
  exit 1
}

# ---- 1. dependencies ---------------------------------------------------------------
# npm rewrites node_modules/.package-lock.json on every install, so the tree is current
# when that file is newer than both manifests.
deps_fresh() {
  [[ -f node_modules/.package-lock.json && -x node_modules/.bin/node ]] || return 1
  [[ node_modules/.package-lock.json -nt package.json ]] || return 1
  [[ ! -f package-lock.json || node_modules/.package-lock.json -nt package-lock.json ]]
}

if [[ ! -d node_modules ]]; then
  if [[ -f package-lock.json ]]; then
    say "npm ci"
    if ! npm ci --no-audit --no-fund; then
      say "npm ci failed (lockfile out of step with package.json?); trying npm install"
      npm install --no-audit --no-fund || fail_early "npm install"
    fi
  else
    say "npm install (no lockfile)"
    npm install --no-audit --no-fund || fail_early "npm install"
  fi
elif ! deps_fresh; then
  # Stale: install in place (npm ci would first delete a tree that may be in use).
  say "node_modules is older than package.json / package-lock.json: npm install"
  npm install --no-audit --no-fund || fail_early "npm install"
fi

# Node 24 from the `node` devDependency runs everything below, whatever node is on PATH.
export PATH="$ROOT/node_modules/.bin:$PATH"
NODE="$ROOT/node_modules/.bin/node"
[[ -x "$NODE" ]] || fail_early "node_modules/.bin/node is missing (the node devDependency)"
node_version="$("$NODE" --version)"
"$NODE" -e '
  const [maj, min] = process.versions.node.split(".").map(Number);
  process.exit(maj > 22 || (maj === 22 && min >= 18) ? 0 : 1);' ||
  fail_early "need Node >= 22.18, node_modules/.bin/node is $node_version"
say "node $node_version ($(command -v node))"

# ---- 2. lint and type check --------------------------------------------------------
say "npm run lint"
npm run --silent lint || fail_early "lint"
say "npm run typecheck"
npm run --silent typecheck || fail_early "typecheck"
say "npm run format:check"
npm run --silent format:check || fail_early "formatting (npm run format fixes it)"

# ---- 3. services -------------------------------------------------------------------
say "starting test services"
services_started=1
if ! bash "$SERVICES/start-all.sh" "$ENV_FILE"; then
  fail_early "starting the test services (see the log above)"
fi
# shellcheck source=/dev/null
source "$ENV_FILE"

# ---- 4. tests ----------------------------------------------------------------------
reporter_args=(--reporter spec)
if [[ -f "$REPORTER" ]]; then reporter_args=(--reporter "$REPORTER"); fi
say "mocha 'test/**/*.test.ts'"
# Every service a test spawns writes its log here too (test/support/spawn-service.ts).
export TEST_SERVICE_LOG_DIR="$RUN_DIR/service-logs"
set +e
"$NODE" "$ROOT/node_modules/mocha/bin/mocha.js" 'test/**/*.test.ts' "${reporter_args[@]}" 2>&1 |
  tee "$RUN_DIR/mocha.out"
mocha_rc=${PIPESTATUS[0]}
set -e

# The counts: the reporter's closing lines, else spec's "N passing" / "N failing" / "N pending".
summary_re='^([0-9]+) passed, ([0-9]+) failed'
skipped_re='^([0-9]+) skipped$'
passed=0
failed=0
skipped=0
last_summary="$(grep -E "$summary_re" "$RUN_DIR/mocha.out" | tail -n 1 || true)"
if [[ "$last_summary" =~ $summary_re ]]; then
  passed="${BASH_REMATCH[1]}"
  failed="${BASH_REMATCH[2]}"
  line="$(grep -E "$skipped_re" "$RUN_DIR/mocha.out" | tail -n 1 || true)"
  if [[ "$line" =~ $skipped_re ]]; then skipped="${BASH_REMATCH[1]}"; fi
else
  passing_re='^ *([0-9]+) passing'
  failing_re='^ *([0-9]+) failing'
  pending_re='^ *([0-9]+) pending'
  line="$(grep -E "$passing_re" "$RUN_DIR/mocha.out" | tail -n 1 || true)"
  if [[ "$line" =~ $passing_re ]]; then passed="${BASH_REMATCH[1]}"; fi
  line="$(grep -E "$failing_re" "$RUN_DIR/mocha.out" | tail -n 1 || true)"
  if [[ "$line" =~ $failing_re ]]; then failed="${BASH_REMATCH[1]}"; fi
  line="$(grep -E "$pending_re" "$RUN_DIR/mocha.out" | tail -n 1 || true)"
  if [[ "$line" =~ $pending_re ]]; then skipped="${BASH_REMATCH[1]}"; fi
fi
# Mocha failed without counting a failure (crash, load error): count it as one.
if ((mocha_rc != 0 && failed == 0)); then failed=1; fi
# In CI nothing is skipped silently: a skipped test fails the run (the reporter lists them).
if [[ "${CI:-}" == "true" ]] && ((skipped > 0)); then
  say "CI=true: $skipped skipped test(s) count as failed"
  failed=$((failed + skipped))
fi

skipped_line="$skipped skipped"
final_line="$passed passed, $failed failed"
printed_last="$(grep -v '^[[:space:]]*$' "$RUN_DIR/mocha.out" | tail -n 2 || true)"
# The closing lines, unless the reporter's are already the last ones printed.
print_closing() {
  if [[ "$printed_last" != "$skipped_line"$'\n'"$final_line" ]]; then
    printf '%s\n%s\n' "$skipped_line" "$final_line"
  fi
}
if ((failed > 0)); then
  TEST_SERVICES_KEEP_STATE=1
  export TEST_SERVICES_KEEP_STATE
  stop_services
  say "mocha exited with $mocha_rc; service logs kept in ${TEST_SERVICES_STATE_DIR:-?}, run dir $RUN_DIR"
  printf '%s\n%s\n' "$skipped_line" "$final_line"
  exit 1
fi
stop_services
print_closing
exit 0
