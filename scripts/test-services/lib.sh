# shellcheck shell=bash
# Shared helpers for the test-service scripts. Source it; do not run it.
#
# Layout:
#   cache  ${MEDIA_TEST_CACHE:-$HOME/.cache/media-service-test}  downloads and builds, kept
#   state  ${TEST_SERVICES_STATE_DIR}                            one run: logs, data, pids
#          (a fresh temp dir is made when it is unset)

TS_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TS_REPO_ROOT="$(cd "$TS_LIB_DIR/../.." && pwd)"
MEDIA_TEST_CACHE="${MEDIA_TEST_CACHE:-$HOME/.cache/media-service-test}"
export MEDIA_TEST_CACHE
# The system python starts faster than a version-manager shim; any python3 will do.
if [[ -x /usr/bin/python3 ]]; then TS_PYTHON=/usr/bin/python3; else TS_PYTHON=python3; fi

ts_log() {
  printf '[test-services %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

ts_die() {
  ts_log "ERROR: $*"
  exit 1
}

# Make sure TEST_SERVICES_STATE_DIR points at an existing directory.
ts_ensure_state_dir() {
  if [[ -z "${TEST_SERVICES_STATE_DIR:-}" ]]; then
    TEST_SERVICES_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/media-test-services.XXXXXX")"
  fi
  mkdir -p "$TEST_SERVICES_STATE_DIR"
  TEST_SERVICES_STATE_DIR="$(cd "$TEST_SERVICES_STATE_DIR" && pwd)"
  export TEST_SERVICES_STATE_DIR
}

# Require an existing state dir (for stop/restart of something already started).
ts_require_state_dir() {
  [[ -n "${TEST_SERVICES_STATE_DIR:-}" ]] ||
    ts_die "TEST_SERVICES_STATE_DIR is not set (source the env file written by start-all.sh)"
  [[ -d "$TEST_SERVICES_STATE_DIR" ]] ||
    ts_die "TEST_SERVICES_STATE_DIR=$TEST_SERVICES_STATE_DIR does not exist"
}

# Print N distinct free TCP ports on 127.0.0.1 (all sockets are held open together,
# so the ports differ from each other).
ts_free_ports() {
  "$TS_PYTHON" - "${1:-1}" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# Wait up to $1 seconds until nothing listens on any of the ports 127.0.0.1:$2...;
# fails (printing the busy port) when one is still taken then.
ts_wait_ports_free() {
  "$TS_PYTHON" - "$@" <<'PY'
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[1])
for port in map(int, sys.argv[2:]):
    while True:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.close()
            break
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                print(port)
                sys.exit(1)
            time.sleep(0.1)
PY
}

ts_pid_alive() {
  [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null
}

# Pid stored in a pid file, or empty.
ts_read_pid() {
  if [[ -f "$1" ]]; then
    tr -d '[:space:]' <"$1"
  fi
}

# Start a command detached (own session, so a Ctrl-C aimed at the test runner does not
# hit it; stop-all.sh stops it), stdout+stderr to a log file, pid to a pid file.
# Usage: ts_spawn PIDFILE LOGFILE CMD [ARGS...]
ts_spawn() {
  local pidfile="$1" logfile="$2"
  shift 2
  # In a non-interactive shell a background job is not a group leader, so setsid
  # execs the command itself and $! is the service's own pid.
  setsid "$@" </dev/null >>"$logfile" 2>&1 &
  echo "$!" >"$pidfile"
}

# Stop the process of a pid file: SIGTERM, wait up to $2 seconds (default 20), SIGKILL.
# Removes the pid file. Quietly does nothing when there is no such process.
ts_stop_pidfile() {
  local pidfile="$1" grace="${2:-20}" signal="${3:-TERM}" pid i
  pid="$(ts_read_pid "$pidfile")"
  if ts_pid_alive "$pid"; then
    kill "-$signal" "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      ts_pid_alive "$pid" || break
      sleep 0.1
    done
    if ts_pid_alive "$pid"; then
      ts_log "pid $pid ($pidfile) did not stop in ${grace}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        ts_pid_alive "$pid" || break
        sleep 0.1
      done
    fi
  fi
  rm -f "$pidfile"
}

# Print the last lines of a log file to stderr, framed.
ts_log_tail() {
  local file="$1" lines="${2:-60}"
  {
    echo "----- last $lines lines of $file -----"
    if [[ -f "$file" ]]; then tail -n "$lines" "$file"; else echo "(no log file)"; fi
    echo "----- end of $file -----"
  } >&2
}

# Wait until an HTTP URL answers at all (any status code), while the process of PID is
# alive. Usage: ts_wait_http URL PID TIMEOUT_SECONDS [EXPECTED_STATUS]
ts_wait_http() {
  local url="$1" pid="$2" timeout="$3" expect="${4:-}" code deadline
  deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    ts_pid_alive "$pid" || return 2
    code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" || true)"
    if [[ -n "$code" && "$code" != "000" ]]; then
      if [[ -z "$expect" || "$code" == "$expect" ]]; then
        return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}

# The node binary the project uses (Node 24 from the `node` devDependency when installed).
ts_node() {
  if [[ -x "$TS_REPO_ROOT/node_modules/.bin/node" ]]; then
    echo "$TS_REPO_ROOT/node_modules/.bin/node"
  else
    command -v node
  fi
}

# apt-get install, non-interactive (root, or sudo when there is one).
ts_apt_install() {
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null || ts_die "need root (or sudo) to apt-get install $*"
    sudo=(sudo)
  fi
  ts_log "apt-get install $*"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# Fail unless the project's node_modules has Node >= 22.18 and the named packages.
ts_require_node_modules() {
  local node pkg
  node="$(ts_node)"
  "$node" -e '
    const [maj, min] = process.versions.node.split(".").map(Number);
    process.exit(maj > 22 || (maj === 22 && min >= 18) ? 0 : 1);' ||
    ts_die "need Node >= 22.18 (found $("$node" --version) at $node): run npm install in $TS_REPO_ROOT"
  for pkg in "$@"; do
    [[ -f "$TS_REPO_ROOT/node_modules/$pkg/package.json" ]] ||
      ts_die "node_modules/$pkg is missing: run npm install in $TS_REPO_ROOT"
  done
}

# Run a command while holding an exclusive lock on a file in the cache, so two runs that
# install the same thing at once do not trip over each other.
ts_with_lock() {
  local name="$1"
  shift
  mkdir -p "$MEDIA_TEST_CACHE/locks"
  (
    flock -w 1800 9 || ts_die "timed out waiting for lock $name"
    "$@"
  ) 9>"$MEDIA_TEST_CACHE/locks/$name.lock"
}

# True, and says so, when the process of a service's pid file is running.
# Usage: ts_already_running NAME PIDFILE
ts_already_running() {
  local pid
  pid="$(ts_read_pid "$2")"
  ts_pid_alive "$pid" || return 1
  ts_log "$1: already running (pid $pid)"
}

# The service's port: picked once (WANTED, or a free one) and kept in DIR/port, so a restart
# comes back on the same port. Usage: ts_service_port DIR [WANTED]
ts_service_port() {
  local dir="$1" wanted="${2:-}"
  mkdir -p "$dir"
  [[ -f "$dir/port" ]] || echo "${wanted:-$(ts_free_ports 1)}" >"$dir/port"
  cat "$dir/port"
}

# Waits for a just-spawned service to answer over HTTP; on failure prints its log tail, stops
# it and dies. Usage: ts_await_ready NAME PIDFILE LOGFILE URL TIMEOUT STARTED [STATUS]
ts_await_ready() {
  local name="$1" pidfile="$2" logfile="$3" url="$4" timeout="$5" started="$6" expect="${7:-}"
  local pid rc=0
  pid="$(ts_read_pid "$pidfile")"
  ts_wait_http "$url" "$pid" "$timeout" "$expect" || rc=$?
  if ((rc != 0)); then
    ts_log_tail "$logfile"
    ts_stop_pidfile "$pidfile" 5
    ts_die "$name: not ready at $url (rc=$rc)"
  fi
  ts_log "$name: ready at $url (pid $pid) in $((SECONDS - started))s"
}

# Make `python3 -m pip` work: Debian's python3-pip from apt when it is missing.
ts_require_pip() {
  "$TS_PYTHON" -m pip --version >/dev/null 2>&1 && return 0
  ts_with_lock apt ts_apt_install python3-pip
  "$TS_PYTHON" -m pip --version >/dev/null 2>&1 || ts_die "python3 -m pip is still missing after installing python3-pip"
}

# One pinned wheel into $MEDIA_TEST_CACHE/wheels, checked against its sha256 (a mismatch is
# refused and the file removed). Prints the wheel's path. Pip runs only when the file is not
# already there; the platform is pinned too, so the same file comes on every machine.
# Usage: ts_fetch_wheel REQUIREMENT FILE SHA256 [PIP_DOWNLOAD_ARGS...]
ts_fetch_wheel() {
  local requirement="$1" file="$2" sha256="$3" dir="$MEDIA_TEST_CACHE/wheels"
  shift 3
  mkdir -p "$dir"
  if [[ ! -f "$dir/$file" ]] || ! ts_sha256_ok "$dir/$file" "$sha256"; then
    ts_require_pip
    ts_log "pip download $requirement"
    "$TS_PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$dir" "$@" "$requirement" >&2 ||
      ts_die "pip download $requirement failed"
    [[ -f "$dir/$file" ]] || ts_die "pip download $requirement did not give $file"
    if ! ts_sha256_ok "$dir/$file" "$sha256"; then
      rm -f "$dir/$file"
      ts_die "$file: sha256 is not the pinned $sha256; refused"
    fi
  fi
  echo "$dir/$file"
}

ts_sha256_ok() {
  [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]
}

# Copy members of a zip (a wheel) into a folder, flat, with python3's zipfile (unzip may be
# missing). Usage: ts_unzip_members ZIP DEST_DIR MEMBER...
ts_unzip_members() {
  "$TS_PYTHON" - "$@" <<'PY'
import os, shutil, sys, zipfile
archive, dest, members = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(dest, exist_ok=True)
with zipfile.ZipFile(archive) as z:
    for member in members:
        with z.open(member) as src, open(os.path.join(dest, os.path.basename(member)), "wb") as out:
            shutil.copyfileobj(src, out)
PY
}
