# The attempt runner image, for machines where a registry answers. Offline, scripts/build_runner_image.sh
# makes the same image (Debian bookworm minbase + python3, git, ca-certificates, and for desktop
# applications xvfb, xauth, python3-tk, x11-utils, fonts-dejavu-core; build-essential, pkg-config and
# ffmpeg for compiled projects and decoding media; python3-pip, python3-venv, nodejs and npm, the
# package managers of Python and JavaScript projects) with debootstrap.
# Attempts run as `agent` (uid/gid 10001, home /home/agent): argusic.sandbox.containment's AGENT_UID.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 git ca-certificates \
    xvfb xauth python3-tk x11-utils fonts-dejavu-core build-essential pkg-config ffmpeg \
    python3-pip python3-venv nodejs npm \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 agent \
 && useradd --uid 10001 --gid 10001 --create-home --home-dir /home/agent --shell /bin/bash agent
ENV LANG=C.UTF-8
LABEL argusic.runner.layout="5"
WORKDIR /workspace
CMD ["/bin/bash"]
