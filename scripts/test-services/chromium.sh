#!/usr/bin/env bash
# Debian's chromium, which the stream playback test drives headless (puppeteer-core from npm
# talks to it; no browser is downloaded from elsewhere).
# Usage: chromium.sh install   (idempotent; prints nothing when it is there)
#        chromium.sh env       (prints the export line for the env file)
set -euo pipefail
# shellcheck source=scripts/test-services/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

chromium_path() {
  command -v chromium || command -v chromium-browser || true
}

do_install() {
  if [[ -z "$(chromium_path)" ]]; then
    ts_with_lock apt ts_apt_install chromium
  fi
  [[ -n "$(chromium_path)" ]] || ts_die "chromium is still missing after apt-get install"
  "$(chromium_path)" --headless=new --no-sandbox --disable-gpu --version >/dev/null 2>&1 ||
    ts_die "chromium does not run headless"
}

case "${1:-}" in
  install) do_install ;;
  env) echo "export TEST_CHROMIUM=$(chromium_path)" ;;
  *)
    echo "usage: $0 install|env" >&2
    exit 2
    ;;
esac
