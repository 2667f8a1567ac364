"""The section-7 attempt network for real (issue #26): an attempt reaches "the outside" (a server in
a network namespace this test makes, routed through the host as the internet would be), and is
refused by the host's own services and by a neighbouring attempt's container. Root, Docker,
iptables and `ip netns` are needed; traffic goes only to this test's namespace and networks."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from argusic.core.settings import package_index_env
from argusic.sandbox.attempt_network import ensure_network, network_name, remove_network
from argusic.sandbox.executor import docker_available
from test_containment import attempt, env, hostile_repo  # noqa: F401 - env is a fixture

pytestmark = [
    pytest.mark.docker,
    pytest.mark.slow,
    pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers"),
    pytest.mark.skipif(
        shutil.which("iptables") is None or shutil.which("ip") is None, reason="no iptables/ip"
    ),
]

OUTSIDE, HOST_SIDE = "198.51.100.2", "198.51.100.1"  # TEST-NET-2, only inside this test's namespace

PROBE = r"""
import json, socket, sys, urllib.request
seen = {}
for name, url in json.load(open("targets.json")).items():
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            seen[name] = "ok: " + answer.read().decode()[:100]
    except Exception as err:
        seen[name] = f"refused: {type(err).__name__}: {err}"[:200]
json.dump(seen, open("/out/net.json", "w"))
print(json.dumps(seen))
"""


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@pytest.fixture
def outside(tmp_path: Path):
    """An HTTP server in a network namespace of this test's own, at 198.51.100.2, routed from the
    host through a veth pair: what an attempt reaches when it downloads a dependency."""
    suffix = uuid.uuid4().hex[:6]
    ns, host_if, ns_if = f"argt-out-{suffix}", f"argth{suffix}", f"argtn{suffix}"
    www = tmp_path / "www"
    www.mkdir()
    (www / "pkg.txt").write_text("a package from outside")
    server = None
    try:
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        sh("ip", "link", "set", ns_if, "netns", ns)
        sh("ip", "addr", "add", f"{HOST_SIDE}/30", "dev", host_if)
        sh("ip", "link", "set", host_if, "up")
        for argv in (
            ["ip", "addr", "add", f"{OUTSIDE}/30", "dev", ns_if],
            ["ip", "link", "set", ns_if, "up"],
            ["ip", "link", "set", "lo", "up"],
            ["ip", "route", "add", "default", "via", HOST_SIDE],
        ):
            sh("ip", "netns", "exec", ns, *argv)  # fmt: skip
        server = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-m", "http.server", "8765", "--bind", OUTSIDE,
             "--directory", str(www)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://{OUTSIDE}:8765/pkg.txt"
        for _ in range(100):
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as answer:
                assert answer.read() == b"a package from outside"
                break
            time.sleep(0.1)
        yield url
    finally:
        if server is not None:
            server.kill()
            server.wait()
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _answers(url: str, tries: int = 100) -> bool:
    for _ in range(tries):
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1):
            return True
        time.sleep(0.1)
    return False


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def test_an_attempt_reaches_the_outside_but_not_the_host_or_a_neighbour(env, tmp_path, outside):  # noqa: F811
    from argusic.core.settings import runner_image

    import docker

    client = docker.from_env()
    net = ensure_network(client)
    host_service = http.server.ThreadingHTTPServer((net.gateway, 0), _Quiet)  # a "host service"
    threading.Thread(target=host_service.serve_forever, daemon=True).start()
    neighbour = client.containers.run(
        runner_image(), ["python3", "-m", "http.server", "8766"], detach=True, network=net.name,
        user="10001:10001", labels={"argusic.test": "neighbour"},
    )  # fmt: skip
    try:
        neighbour.reload()
        neighbour_ip = neighbour.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"]
        # the neighbour answers the host (so a refusal below is the firewall, not a server still starting)
        assert _answers(f"http://{neighbour_ip}:8766/"), "the neighbour's server never came up"
        targets = {
            "outside": outside,
            "host": f"http://{net.gateway}:{host_service.server_address[1]}/",
            "neighbour": f"http://{neighbour_ip}:8766/",
        }
        bare, commit = hostile_repo(
            tmp_path, "netprobe", ["python3 probe.py"],
            {"probe.py": PROBE, "targets.json": json.dumps(targets)},
        )  # fmt: skip
        record, landed, _ = attempt(env, bare, commit, "netprobe", network="section7")
        seen = json.loads((landed / "net.json").read_text())
        assert seen["outside"] == "ok: a package from outside", seen
        assert seen["host"].startswith("refused"), seen
        assert seen["neighbour"].startswith("refused"), seen
        assert record.environment.limits.network == "section7"
        assert record.invalid_reason is None and record.container_fault is None
        rules = subprocess.run(["iptables", "-S", "DOCKER-USER"], capture_output=True, text=True).stdout
        inputs = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True).stdout
        print("seen from the attempt:", json.dumps(seen, indent=1))  # shown with -s: the closing note's
        print("\n".join(line for line in (inputs + rules).splitlines() if net.bridge in line))
        assert f"-A DOCKER-USER -d 169.254.0.0/16 -i {net.bridge}" in rules  # metadata: rejected, never sent
        inspected = client.networks.get(net.name).attrs
        assert inspected["Options"]["com.docker.network.bridge.enable_icc"] == "false"
        assert not inspected["Internal"]
    finally:
        host_service.shutdown()
        neighbour.remove(force=True)
        removed = remove_network(client)
    assert network_name() in removed
    left = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    assert net.bridge not in left  # every rule of ours is gone with the network


TINY_README = """# tinypkg

## Install

```sh
pip install tinypkg
```

## Usage

```sh
tinypkg-answer > answer.txt
cat answer.txt
```
"""


def _tiny_wheel(folder: Path) -> str:
    """A pure-Python wheel made here (zipfile: no build tool), its file name."""
    import base64
    import hashlib
    import zipfile

    name, info = "tinypkg-1.0-py3-none-any.whl", "tinypkg-1.0.dist-info"
    files = {
        "tinypkg.py": "def main():\n    print(6 * 7)\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: argusic-test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\ntinypkg-answer = tinypkg:main\n",
    }
    record = []
    with zipfile.ZipFile(folder / name, "w") as wheel:
        for path, text in files.items():
            data = text.encode()
            wheel.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return name


def test_a_python_project_installs_its_dependency_from_the_operators_package_index(
    env,  # noqa: F811 - the fixture
    tmp_path,
    outside,
    monkeypatch,
):
    """The whole chain of a real cycle's install: the section-7 network, the operator's package index
    (here in this test's namespace, standing for PyPI or a mirror of it) given as PIP_INDEX_URL, Debian's
    pip refusing the system site (PEP 668) and the reference agent's venv move: installed, ran, one
    error fixed; the index saw the download."""
    www = tmp_path / "www"  # what the `outside` fixture serves
    (www / "packages").mkdir()
    wheel = _tiny_wheel(www / "packages")
    (www / "simple" / "tinypkg").mkdir(parents=True)
    (www / "simple" / "tinypkg" / "index.html").write_text(f'<a href="../../packages/{wheel}">{wheel}</a>\n')
    index = outside.rsplit("/", 1)[0] + "/simple/"
    bare, commit = hostile_repo(tmp_path, "tinypkg", [], {"README.md": TINY_README})
    monkeypatch.setenv("ARGUSIC_PIP_INDEX_URL", index)  # as the operator sets it
    given = package_index_env()
    indexes = tuple(sorted(given.items()))
    record, _, store = attempt(
        env, bare, commit, "tinypkg", budget=300, network="section7", package_indexes=indexes
    )
    try:
        log = store.read(record.evidence.log.uri).decode()
        assert "externally-managed-environment" in log, log[-3000:]
        assert record.report.install_ok and record.report.ran_ok, log[-3000:]
        assert (record.report.errors_encountered, record.report.errors_fixed) == (1, 1), log[-3000:]
        assert f"Looking in indexes: {index}" in log and "Successfully installed tinypkg-1.0" in log, log[
            -3000:
        ]
        assert "\n42\n" in log, log[-3000:]
        assert record.environment.limits.package_indexes == given
    finally:
        remove_network(__import__("docker").from_env())
