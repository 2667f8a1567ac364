# The attempt runner image, for machines where a registry answers. Offline, scripts/build_runner_image.sh
# makes the same image (Debian bookworm minbase + python3, git, ca-certificates) with debootstrap.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV LANG=C.UTF-8
WORKDIR /workspace
CMD ["/bin/bash"]
