"""The runner image has what the methodology promised (issue #26): native build tools (edition 1.1)
and a media decoder (section 16: verify media by decoding it), usable by the unprivileged agent on
a read-only root with no network."""

from __future__ import annotations

import pytest
from argusic.core.settings import runner_image
from argusic.sandbox.containment import AGENT_GID, AGENT_UID, LAYOUT_LABEL, RUNNER_LAYOUT
from argusic.sandbox.executor import docker_available

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers"),
]

SCRIPT = r"""
set -e
cd /tmp
printf '#include <stdio.h>\nint main(void){puts("compiled");return 0;}\n' > hello.c
cc -o hello hello.c && ./hello
printf 'all:\n\t@echo made\n' > Makefile && make -s
pkg-config --version >/dev/null && echo pkg-config
ffmpeg -v error -f lavfi -i sine=frequency=440:duration=0.5 -ac 1 -ar 8000 tone.wav
ffprobe -v error -show_entries stream=codec_name,sample_rate,channels -of csv=p=0 tone.wav
ffmpeg -v error -i tone.wav -f null - && echo decoded
"""


def test_build_tools_and_ffmpeg_work_for_the_agent_without_a_network() -> None:
    import docker

    client = docker.from_env()
    image = client.images.get(runner_image())
    assert image.labels.get(LAYOUT_LABEL) == RUNNER_LAYOUT
    output = client.containers.run(
        runner_image(), ["bash", "-c", SCRIPT], remove=True, network_disabled=True, network_mode="none",
        user=f"{AGENT_UID}:{AGENT_GID}", read_only=True, tmpfs={"/tmp": "exec,size=64m"}, cap_drop=["ALL"],
    ).decode()  # fmt: skip
    assert output.split() == ["compiled", "made", "pkg-config", "pcm_s16le,8000,1", "decoded"], output
