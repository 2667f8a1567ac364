"""The runner image has what the methodology promised (issue #26): native build tools (edition 1.1),
a media decoder (section 16: verify media by decoding it) and the package managers of Python and
JavaScript projects (pip, venv, npm), usable by the unprivileged agent on a read-only root with no
network."""

from __future__ import annotations

import os

import pytest
from argusic.core.settings import runner_image
from argusic.sandbox.containment import AGENT_GID, AGENT_UID, LAYOUT_LABEL, RUNNER_LAYOUT
from argusic.sandbox.executor import docker_available
from test_containment import attempt, env, hostile_repo  # noqa: F401 - env is a fixture

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
python3 -m venv /tmp/venv && /tmp/venv/bin/python -m pip --version >/dev/null && echo venv-pip
python3 -m pip --version >/dev/null && echo pip
node -e 'console.log("node " + (6 * 7))'
npm --version >/dev/null && echo npm
"""


def test_build_tools_ffmpeg_and_package_managers_work_for_the_agent_without_a_network() -> None:
    import docker

    client = docker.from_env()
    image = client.images.get(runner_image())
    assert image.labels.get(LAYOUT_LABEL) == RUNNER_LAYOUT
    output = client.containers.run(
        runner_image(), ["bash", "-c", SCRIPT], remove=True, network_disabled=True, network_mode="none",
        user=f"{AGENT_UID}:{AGENT_GID}", read_only=True, tmpfs={"/tmp": "exec,size=128m"}, cap_drop=["ALL"],
    ).decode()  # fmt: skip
    expected = ["compiled", "made", "pkg-config", "pcm_s16le,8000,1", "decoded"]
    expected += ["venv-pip", "pip", "node", "42", "npm"]
    assert output.split() == expected, output


SETUP_PY = """from setuptools import setup
setup(name="tinypkg", version="1.0", py_modules=["tinypkg"],
      entry_points={"console_scripts": ["tinypkg-answer=tinypkg:main"]})
"""
TINY_README = """# tinypkg

## Install

```sh
pip install --no-index --no-build-isolation .
```

## Usage

```sh
tinypkg-answer > answer.txt
cat answer.txt
```
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="size-capped areas are loop mounts: root only")
def test_the_reference_agent_installs_a_python_project_into_a_virtual_environment(env, tmp_path):  # noqa: F811
    """Debian's Python refuses `pip install` outside a virtual environment (PEP 668), as on any clean
    Debian 12 machine; the README runner's venv move makes one and goes on: one error, fixed."""
    files = {"README.md": TINY_README, "setup.py": SETUP_PY, "tinypkg.py": "def main():\n    print(6 * 7)\n"}
    bare, commit = hostile_repo(tmp_path, "tinypkg", [], files)
    record, _, store = attempt(env, bare, commit, "tinypkg", budget=300)
    log = store.read(record.evidence.log.uri).decode()
    assert "externally-managed-environment" in log, log[-3000:]
    assert "Python's system site is not writable (PEP 668)" in log, log[-3000:]
    assert (record.report.errors_encountered, record.report.errors_fixed) == (1, 1), log[-3000:]
    assert record.report.install_ok and record.report.ran_ok, log[-3000:]
    assert record.observed.install_ok and record.observed.ran_ok
