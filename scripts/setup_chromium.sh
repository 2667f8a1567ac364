#!/usr/bin/env bash
# Headless Chromium for the browser tests and the UI screenshots: Debian's `chromium` and
# `chromium-driver` packages, installed when missing. Selenium (the attempt page's test) and Playwright
# (scripts/airflow_screenshots.py) drive this binary, so no browser is ever downloaded from outside the
# package registries.
set -euo pipefail
CHROMIUM="${ARGUSIC_CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$CHROMIUM" ]] && command -v chromedriver >/dev/null; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "Chromium is missing ($CHROMIUM): install Debian's packages as root: apt-get install chromium chromium-driver" >&2
  exit 1
fi
echo "installing Debian's chromium and chromium-driver (browser tests, screenshots)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
"$CHROMIUM" --version >&2
