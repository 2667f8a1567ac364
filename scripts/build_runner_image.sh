#!/usr/bin/env bash
# Build the attempt runner image. Cached by tag: does nothing when the tag already exists with the
# current layout (label argusic.runner.layout; an older image under the tag is rebuilt).
# Where a registry answers, `docker build` of the Dockerfile makes the same image; here there is
# none, so the root filesystem comes from Debian's mirror through debootstrap and `docker import`.
# Attempts run as the unprivileged user `agent` (uid/gid 10001, home /home/agent) made here; the
# values must match argusic.sandbox.containment (AGENT_UID, AGENT_GID, AGENT_HOME, RUNNER_LAYOUT), and the
# package list the Dockerfile's.
# Other images built the same way (scripts/build_grader_image.sh) pass ARGUSIC_IMAGE_EXTRA_PACKAGES (comma
# separated Debian packages added to the runner's), ARGUSIC_IMAGE_LAYOUT_LABEL and ARGUSIC_IMAGE_LAYOUT;
# ARGUSIC_IMAGE_SECURITY_UPDATES=1 upgrades every package from <suite>-security after debootstrap
# (debootstrap takes the main suite only; scripts/build_render_image.sh needs the browser's fixes).
set -euo pipefail

TAG="${ARGUSIC_RUNNER_IMAGE:-argusic-runner:bookworm}"
SUITE="${ARGUSIC_RUNNER_SUITE:-bookworm}"
# Desktop applications (methodology section 7, item 6) get a virtual display: Debian's Xvfb (the
# harness starts it on :99), xauth, Tk for Python, x11-utils (xdpyinfo, xwininfo: an agent can look at
# the display without screenshots) and one font family. Layout 3 added them. Layout 4: the native
# build tools methodology edition 1.1 promised (build-essential, pkg-config) and ffmpeg, which
# section 16's "verify media by decoding it" needs (ffprobe, ffmpeg -f null). Layout 5: the package
# managers of the two most common languages on the board, as a clean Debian machine has them (pip
# and venv, Node.js and npm): without them no Python or JavaScript project could install anything.
PACKAGES="python3,git,ca-certificates,xvfb,xauth,python3-tk,x11-utils,fonts-dejavu-core"
PACKAGES="$PACKAGES,build-essential,pkg-config,ffmpeg"
# (ARGUSIC_IMAGE_RUNNER_PACKAGES: the grader and render images built by this script set none.)
RUNNER_PACKAGES="${ARGUSIC_IMAGE_RUNNER_PACKAGES-python3-pip,python3-venv,nodejs}"
PACKAGES="$PACKAGES${RUNNER_PACKAGES:+,$RUNNER_PACKAGES}"
# Installed by apt inside the new root after debootstrap (ARGUSIC_IMAGE_APT_PACKAGES; the grader and
# render images set none): debootstrap's own resolver cannot configure
# npm's web of node-* packages (dependency loops), apt can.
APT_PACKAGES="${ARGUSIC_IMAGE_APT_PACKAGES-npm}"
PACKAGES="$PACKAGES${ARGUSIC_IMAGE_EXTRA_PACKAGES:+,$ARGUSIC_IMAGE_EXTRA_PACKAGES}"
LAYOUT_LABEL="${ARGUSIC_IMAGE_LAYOUT_LABEL:-argusic.runner.layout}"
LAYOUT="${ARGUSIC_IMAGE_LAYOUT:-5}"
AGENT_UID=10001

layout=$(docker image inspect -f '{{ index .Config.Labels "'"$LAYOUT_LABEL"'" }}' "$TAG" 2>/dev/null || true)
if [ "$layout" = "$LAYOUT" ]; then
  echo "build_runner_image: $TAG already present" >&2
  exit 0
fi

if [ "${ARGUSIC_IMAGE_FROM_DOCKERFILE:-0}" = "1" ]; then
  docker build -t "$TAG" "$(dirname "$0")/.."
  exit 0
fi

mirror="${ARGUSIC_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  # Use the mirror apt is configured with on this machine (the only one reachable).
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
fi
[ -n "$mirror" ] || { echo "build_runner_image: no Debian mirror found in apt sources" >&2; exit 1; }

rootfs=$(mktemp -d /tmp/argusic-rootfs.XXXXXX)
# One log per build (next to its root filesystem), so images built at the same time never share one.
log="$rootfs.debootstrap.log"
trap 'rm -rf "$rootfs" "$log"' EXIT
echo "build_runner_image: debootstrap $SUITE from $mirror" >&2
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" >"$log" 2>&1 \
  || { tail -30 "$log" >&2; exit 1; }
if [ -n "$APT_PACKAGES" ]; then
  echo "build_runner_image: apt-get install $APT_PACKAGES" >&2
  printf 'deb %s %s main\n' "$mirror" "$SUITE" >"$rootfs/etc/apt/sources.list"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  { chroot "$rootfs" apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y -qq --no-install-recommends \
        $APT_PACKAGES; } >>"$log" 2>&1 \
    || { tail -30 "$log" >&2; exit 1; }
  chroot "$rootfs" apt-get clean
  : >"$rootfs/etc/resolv.conf"
fi
if [ "${ARGUSIC_IMAGE_SECURITY_UPDATES:-0}" = "1" ]; then
  security="${ARGUSIC_DEBIAN_SECURITY_MIRROR:-}"
  if [ -z "$security" ]; then
    security=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
      2>/dev/null | grep -oE 'https?://[^ ]+/debian-security/?$' | head -1 || true)
  fi
  [ -n "$security" ] || { echo "build_runner_image: no Debian security mirror found in apt sources" >&2; exit 1; }
  echo "build_runner_image: upgrading from $SUITE-security ($security)" >&2
  printf 'deb %s %s main\ndeb %s %s-security main\n' "$mirror" "$SUITE" "$security" "$SUITE" \
    >"$rootfs/etc/apt/sources.list"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  { chroot "$rootfs" apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get -y -qq upgrade; } >>"$log" 2>&1 \
    || { tail -30 "$log" >&2; exit 1; }
  chroot "$rootfs" apt-get clean
  : >"$rootfs/etc/resolv.conf"
fi
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
chroot "$rootfs" groupadd --gid "$AGENT_UID" agent
chroot "$rootfs" useradd --uid "$AGENT_UID" --gid "$AGENT_UID" --create-home --home-dir /home/agent \
  --shell /bin/bash agent
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL $LAYOUT_LABEL=$LAYOUT" \
  --change 'WORKDIR /workspace' \
  --change 'CMD ["/bin/bash"]' \
  - "$TAG" >/dev/null
echo "build_runner_image: built $TAG" >&2
