#!/usr/bin/env bash
# Headless Chromium for the UI screenshots (scripts/airflow_screenshots.py): Debian's `chromium`
# package, installed when missing. Playwright (PyPI) drives it through executable_path, so no browser
# is ever downloaded from outside the package registries.
set -euo pipefail
CHROMIUM="${ARGUSIC_CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$CHROMIUM" ]]; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  echo "Chromium is missing ($CHROMIUM): install Debian's package as root: apt-get install chromium" >&2
  exit 1
fi
echo "installing Debian's chromium (headless screenshots of the Airflow UI)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
"$CHROMIUM" --version >&2
