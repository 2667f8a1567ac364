#!/usr/bin/env bash
# Build the repair grader image (issue 13): the runner's layout (same debootstrap, same unprivileged
# user `agent`) plus Debian's packaged test runner and what real trials need. Built offline the runner's
# way by scripts/build_runner_image.sh with parameters; cached by tag and label argusic.grader.layout.
# The values must match argusic.repair.testrun (GRADER_IMAGE, GRADER_LAYOUT).
set -euo pipefail
export ARGUSIC_IMAGE_FROM_DOCKERFILE=0  # the Dockerfile describes the runner, not this image
ARGUSIC_RUNNER_IMAGE="${ARGUSIC_GRADER_IMAGE:-argusic-grader:bookworm}" \
ARGUSIC_IMAGE_EXTRA_PACKAGES="python3-pytest,python3-setuptools,python3-pip,python3-venv,python3-wheel" \
ARGUSIC_IMAGE_APT_PACKAGES="" \
ARGUSIC_IMAGE_RUNNER_PACKAGES="" \
ARGUSIC_IMAGE_LAYOUT_LABEL="argusic.grader.layout" \
ARGUSIC_IMAGE_LAYOUT="1" \
  exec bash "$(dirname "$0")/build_runner_image.sh"
