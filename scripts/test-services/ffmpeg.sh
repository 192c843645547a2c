#!/usr/bin/env bash
# ffmpeg, ffprobe, the DejaVu font for drawtext, and setsid + setpriv + prlimit (util-linux, which
# bound every ffmpeg the workers start), from Debian's packages.
# Usage: ffmpeg.sh install   (idempotent; prints nothing when all is there)
#        ffmpeg.sh env       (prints the export lines for the env file)
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FONT_FILE=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf

do_install() {
  local missing=()
  command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  command -v ffprobe >/dev/null || missing+=(ffmpeg)
  [[ -f "$FONT_FILE" ]] || missing+=(fonts-dejavu-core)
  command -v setpriv >/dev/null || missing+=(util-linux)
  command -v prlimit >/dev/null || missing+=(util-linux)
  command -v setsid >/dev/null || missing+=(util-linux)
  if ((${#missing[@]} > 0)); then
    # ffmpeg's recommends are not needed; fonts-dejavu-core is asked for explicitly.
    ts_with_lock apt ts_apt_install ffmpeg fonts-dejavu-core util-linux
  fi
  command -v ffmpeg >/dev/null || ts_die "ffmpeg is still missing after apt-get install"
  command -v ffprobe >/dev/null || ts_die "ffprobe is still missing after apt-get install"
  [[ -f "$FONT_FILE" ]] || ts_die "font file $FONT_FILE is missing after installing fonts-dejavu-core"
  ffmpeg -hide_banner -version >/dev/null || ts_die "ffmpeg does not run"
  command -v setpriv >/dev/null || ts_die "setpriv is still missing after installing util-linux"
  command -v prlimit >/dev/null || ts_die "prlimit is still missing after installing util-linux"
  setsid setpriv --pdeathsig KILL -- prlimit --data=2147483648 -- ffmpeg -hide_banner -version >/dev/null ||
    ts_die "ffmpeg does not run under setsid setpriv --pdeathsig KILL -- prlimit --data=N"
}

case "${1:-}" in
  install) do_install ;;
  env)
    echo "export TEST_FFMPEG=$(command -v ffmpeg)"
    echo "export TEST_FFPROBE=$(command -v ffprobe)"
    echo "export TEST_FONT_FILE=$FONT_FILE"
    ;;
  *)
    echo "usage: $0 install|env" >&2
    exit 2
    ;;
esac
