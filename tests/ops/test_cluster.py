"""The loopback cluster (scripts/cluster.sh) and the worker host names (argusic.ops.cluster_host)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from argusic.core.settings import orchestrator_config
from argusic.ops import cluster_host

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cluster.sh"


# --- the host name Airflow records -------------------------------------------------------------


def test_hostname_is_the_worker_name_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUSIC_HOSTNAME", "attempts-2")
    assert cluster_host.hostname() == "attempts-2"


def test_hostname_falls_back_to_the_fqdn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGUSIC_HOSTNAME", raising=False)
    assert cluster_host.hostname() == socket.getfqdn()
    monkeypatch.setenv("ARGUSIC_HOSTNAME", "")
    assert cluster_host.hostname() == socket.getfqdn()


@pytest.mark.parametrize("bad", ["../etc", "a b", "-lead", "x" * 64, "host\n", "ünï"])
def test_hostname_refuses_what_is_not_a_host_name(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("ARGUSIC_HOSTNAME", bad)
    with pytest.raises(ValueError, match="ARGUSIC_HOSTNAME"):
        cluster_host.hostname()


def test_airflow_records_the_name_through_the_hostname_callable(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.utils.net import get_hostname

    monkeypatch.setenv("AIRFLOW__CORE__HOSTNAME_CALLABLE", "argusic.ops.cluster_host.hostname")
    monkeypatch.setenv("ARGUSIC_HOSTNAME", "warehouse")
    assert get_hostname() == "warehouse"


# --- attempts per worker host ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cores", "cpus", "expected"),
    [(2, 1.0, 2), (1, 1.0, 1), (1, 2.0, 1), (3, 2.0, 1), (16, 1.5, 10), (3, 0.1, 30), (64, 4.0, 16)],
)
def test_attempt_concurrency_is_cores_over_cpus_per_attempt(cores: int, cpus: float, expected: int) -> None:
    assert cluster_host.attempt_concurrency(cores, cpus) == expected


def test_attempt_concurrency_defaults_to_this_host_and_the_orchestrator_config() -> None:
    cores = len(os.sched_getaffinity(0))
    expected = max(1, int(cores // orchestrator_config().container_cpus))
    assert cluster_host.attempt_concurrency() == expected
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "argusic.ops.cluster_host", "concurrency"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "plugins")},
    )
    assert out.stdout.strip() == str(expected)


@pytest.mark.parametrize(("cores", "cpus"), [(0, 1.0), (2, 0.0), (2, -1.0), (2, float("nan"))])
def test_attempt_concurrency_refuses_nonsense(cores: int, cpus: float) -> None:
    with pytest.raises(ValueError):
        cluster_host.attempt_concurrency(cores, cpus)


# --- the script, without starting anything -----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _script(*args: str, cluster_dir: Path, env: dict[str, str] | None = None, timeout: float = 60):
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "ARGUSIC_CLUSTER_DIR": str(cluster_dir), **(env or {})},
    )


def test_status_and_stop_of_a_cluster_never_started(tmp_path: Path) -> None:
    status = _script("status", cluster_dir=tmp_path)
    assert status.returncode == 3
    assert "scheduler" in status.stdout and "down" in status.stdout
    stop = _script("stop", cluster_dir=tmp_path)
    assert stop.returncode == 0, stop.stderr


def test_start_refuses_a_taken_port_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _script("start", cluster_dir=tmp_path, env={"ARGUSIC_CLUSTER_REDIS_PORT": str(port)})
    assert result.returncode == 1
    assert f"port {port} (REDIS_PORT) is taken" in result.stderr
    assert not list((tmp_path / "pids").glob("*.pid"))


def test_worker_subcommands_refuse_unknown_names(tmp_path: Path) -> None:
    for command in ("kill-worker", "start-worker"):
        result = _script(command, "scheduler", cluster_dir=tmp_path)
        assert result.returncode == 1
        assert "one of attempts-1 attempts-2 warehouse" in result.stderr


# The real cluster (start, every queue, a lost host, stop) is tested in tests/ops/test_cluster_cycle.py,
# on the one cluster every cluster test shares.
