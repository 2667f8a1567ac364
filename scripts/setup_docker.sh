#!/usr/bin/env bash
# Install Debian's Docker engine when missing and start dockerd if no daemon answers.
# Idempotent: safe to call from `make` on every run.
set -euo pipefail

if ! command -v dockerd >/dev/null 2>&1; then
  echo "setup_docker: installing docker.io and debootstrap from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi
command -v debootstrap >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

echo "setup_docker: starting dockerd" >&2
mkdir -p /var/log/argusic
# No bridge traffic is wanted: attempts run with networking off; the default bridge stays for builds only.
# setsid: the daemon leaves the caller's session and process group, so stopping whatever started it
# (a test run's job, `kill -- -<pgid>`) does not take every other user's Docker down with it.
setsid nohup dockerd --host=unix:///var/run/docker.sock >>/var/log/argusic/dockerd.log 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "setup_docker: dockerd is up" >&2
    exit 0
  fi
  sleep 1
done
echo "setup_docker: dockerd did not answer within 60 s; see /var/log/argusic/dockerd.log" >&2
tail -20 /var/log/argusic/dockerd.log >&2 || true
exit 1
