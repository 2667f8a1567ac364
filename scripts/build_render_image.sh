#!/usr/bin/env bash
# Build the rendering image (issue 14, Layer 1 hints): the runner's layout (same debootstrap, same
# unprivileged user `agent`) plus Debian's headless Chromium, which argusic.judging.render drives over
# the DevTools protocol on a pipe (--remote-debugging-pipe: no port, no driver binary, no Python package
# beyond the standard library). Built offline the runner's way by scripts/build_runner_image.sh with
# parameters; cached by tag and label argusic.render.layout, so it never touches the runner's or the
# grader's tag. Every package is upgraded from bookworm-security (layout 2): Chromium's fixes come
# there, not in the main suite. The values must match argusic.judging.render (RENDER_IMAGE, RENDER_LAYOUT).
set -euo pipefail
export ARGUSIC_IMAGE_FROM_DOCKERFILE=0  # the Dockerfile describes the runner, not this image
ARGUSIC_RUNNER_IMAGE="${ARGUSIC_RENDER_IMAGE:-argusic-render:bookworm}" \
ARGUSIC_IMAGE_EXTRA_PACKAGES="chromium,fonts-liberation,dbus-x11" \
ARGUSIC_IMAGE_APT_PACKAGES="" \
ARGUSIC_IMAGE_RUNNER_PACKAGES="" \
ARGUSIC_IMAGE_LAYOUT_LABEL="argusic.render.layout" \
ARGUSIC_IMAGE_LAYOUT="2" \
ARGUSIC_IMAGE_SECURITY_UPDATES=1 \
  exec bash "$(dirname "$0")/build_runner_image.sh"
