#!/usr/bin/env bash
# Debian's docker-compose (1.29.2 on bookworm), the validator of docker-compose.yml, when missing.
# Idempotent: `make compose-check` and tests/ops/test_compose.py call it.
set -euo pipefail

if command -v docker-compose >/dev/null 2>&1; then
  exit 0
fi
echo "setup_compose: installing Debian's docker-compose" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq docker-compose >/dev/null
docker-compose version --short >&2
