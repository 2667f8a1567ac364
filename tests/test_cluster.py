"""The loopback cluster (scripts/cluster.sh) and the worker host names (argusic.cluster_host)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import requests
from argusic import cluster_host
from argusic.settings import orchestrator_config

ROOT = Path(__file__).resolve().parents[1]
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

    monkeypatch.setenv("AIRFLOW__CORE__HOSTNAME_CALLABLE", "argusic.cluster_host.hostname")
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
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "argusic.cluster_host", "concurrency"],
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


# --- the real cluster --------------------------------------------------------------------------

PROBE_DAG = """
import os
import time

from airflow.sdk import dag, task


def _where(queue: str) -> str:
    line = " ".join(
        f"{name}={os.environ.get(name, '-')}"
        for name in (
            "ARGUSIC_HOSTNAME", "ARGUSIC_RUNS_DIR", "TMPDIR", "ARGUSIC_WAREHOUSE", "ARGUSIC_RUNS_URL"
        )
    )
    print(f"PROBE queue={queue} {line}")
    return os.environ["ARGUSIC_HOSTNAME"]


@dag(dag_id="argusic_cluster_probe", schedule=None, catchup=False)
def argusic_cluster_probe():
    @task(queue="argusic_attempts")
    def on_attempts(i: int) -> str:
        time.sleep(4)  # long enough that both attempt workers take some
        return _where("argusic_attempts")

    @task(queue="argusic_warehouse")
    def on_warehouse() -> str:
        return _where("argusic_warehouse")

    @task
    def on_default() -> str:
        return _where("default")

    on_attempts.expand(i=list(range(8)))
    on_warehouse()
    on_default()


argusic_cluster_probe()
"""


class Api:
    def __init__(self, base: str, password_file: Path) -> None:
        self.base = base
        password = json.loads(password_file.read_text())["admin"]
        token = requests.post(
            f"{base}/auth/token", json={"username": "admin", "password": password}, timeout=30
        ).json()["access_token"]
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **params: object) -> requests.Response:
        return requests.get(f"{self.base}/api/v2{path}", headers=self.headers, params=params, timeout=30)

    def send(self, method: str, path: str, body: dict) -> dict:
        response = requests.request(
            method, f"{self.base}/api/v2{path}", headers=self.headers, json=body, timeout=30
        )
        assert response.ok, response.text
        return response.json()


def _until(check, what: str, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def _sessions(pids_dir: Path) -> set[int]:
    return {int(p.read_text()) for p in pids_dir.glob("*.pid")}


def _processes_in(sessions: set[int]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) in sessions:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


@pytest.mark.slow
def test_cluster_runs_a_task_on_every_queue_and_stops_clean() -> None:
    # Not under pytest's tmp_path: the Postgres user must be able to reach its data folder.
    cluster_dir = Path(tempfile.mkdtemp(prefix="argusic-cluster-", dir="/tmp"))
    cluster_dir.chmod(0o755)
    dags = cluster_dir / "dags"
    dags.mkdir()
    (dags / "argusic_cluster_probe.py").write_text(PROBE_DAG)
    ports = {name: _free_port() for name in ("API", "PG", "REDIS", "S3")}
    env = {f"ARGUSIC_CLUSTER_{name}_PORT": str(port) for name, port in ports.items()}
    env |= {"ARGUSIC_CLUSTER_DAGS_FOLDER": str(dags), "ARGUSIC_CLUSTER_STOP_GRACE": "15"}
    started: list[psutil.Process] = []
    try:
        start = _script("start", cluster_dir=cluster_dir, env=env, timeout=400)
        assert start.returncode == 0, start.stdout + start.stderr
        assert "cluster started" in start.stdout
        again = _script("start", cluster_dir=cluster_dir, env=env)
        assert again.returncode == 0 and "already running" in again.stdout
        status = _script("status", cluster_dir=cluster_dir)
        assert status.returncode == 0, status.stdout
        assert status.stdout.count(" alive ") == 11

        # Every process of every component, and every listener they hold: loopback only.
        sessions = _sessions(cluster_dir / "pids")
        started = _processes_in(sessions)
        pids = {p.pid for p in started}
        listeners = [
            c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in pids
        ]
        assert {c.laddr.ip for c in listeners} == {"127.0.0.1"}, listeners
        assert set(ports.values()) <= {c.laddr.port for c in listeners}

        # Postgres runs as an unprivileged user, never as root.
        postgres = psutil.Process(int((cluster_dir / "pids" / "postgres.pid").read_text()))
        assert postgres.uids().effective != 0

        # The secrets file is private.
        assert (cluster_dir / "secrets.env").stat().st_mode & 0o077 == 0

        api = Api(
            f"http://127.0.0.1:{ports['API']}", cluster_dir / "simple_auth_manager_passwords.json.generated"
        )
        dag = "argusic_cluster_probe"
        _until(lambda: api.get(f"/dags/{dag}").ok, "the probe DAG to be parsed", 120)
        assert api.get(f"/dags/{dag}").json()["is_paused"]  # start unpauses nothing
        api.send("PATCH", f"/dags/{dag}", {"is_paused": False})
        run_id = api.send("POST", f"/dags/{dag}/dagRuns", {"logical_date": None})["dag_run_id"]
        state = _until(
            lambda: (
                (s := api.get(f"/dags/{dag}/dagRuns/{run_id}").json()["state"]) in ("success", "failed") and s
            ),
            "the probe run",
            240,
        )
        tis = api.get(f"/dags/{dag}/dagRuns/{run_id}/taskInstances", limit=100).json()["task_instances"]
        assert state == "success", [(t["task_id"], t["map_index"], t["state"]) for t in tis]
        hosts = {(t["task_id"], t["map_index"]): t["hostname"] for t in tis}
        assert hosts[("on_warehouse", -1)] == "warehouse"
        assert hosts[("on_default", -1)] == "warehouse"
        attempt_hosts = [h for (task, _), h in hosts.items() if task == "on_attempts"]
        assert len(attempt_hosts) == 8
        assert set(attempt_hosts) == {"attempts-1", "attempts-2"}, attempt_hosts

        # Task logs come from the object store (no worker serves logs), with what each host saw.
        def log_of(task: str, map_index: int = -1) -> str:
            def read() -> str | None:
                response = api.get(
                    f"/dags/{dag}/dagRuns/{run_id}/taskInstances/{task}/logs/1",
                    map_index=map_index,
                    full_content=True,
                )
                text = response.text if response.ok else ""
                return text if "s3://argusic/logs/" in text and "PROBE " in text else None

            return _until(read, f"the log of {task}[{map_index}] from S3", 60)

        for task, map_index in (("on_warehouse", -1), ("on_default", -1), ("on_attempts", 0)):
            log = log_of(task, map_index)
            host = hosts[(task, map_index)]
            assert f"ARGUSIC_HOSTNAME={host} " in log
            assert f"ARGUSIC_RUNS_DIR={cluster_dir}/hosts/{host}/runs " in log
            assert f"TMPDIR={cluster_dir}/hosts/{host}/tmp " in log
            expected_warehouse = (
                f"{cluster_dir}/hosts/warehouse/warehouse/argusic.duckdb" if host == "warehouse" else "-"
            )
            assert f"ARGUSIC_WAREHOUSE={expected_warehouse} " in log
            assert "ARGUSIC_RUNS_URL=s3://argusic/runs" in log

        # A lost host (the warehouse: its Celery worker and its build worker) SIGKILLed, then back.
        lost = {
            int((cluster_dir / "pids" / f"{name}.pid").read_text())
            for name in ("worker-warehouse", "build-worker")
        }
        killed = _script("kill-worker", "warehouse", cluster_dir=cluster_dir)
        assert killed.returncode == 0, killed.stderr
        assert not _processes_in(lost)
        status = _script("status", cluster_dir=cluster_dir)
        assert status.returncode == 3
        assert [
            line.split()[3] for line in status.stdout.splitlines() if line.startswith(("worker-", "build-"))
        ] == [
            "alive",
            "alive",
            "down",
            "down",
        ]
        restarted = _script("start-worker", "warehouse", cluster_dir=cluster_dir, timeout=240)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert _script("status", cluster_dir=cluster_dir).returncode == 0
        assert not _sessions(cluster_dir / "pids") & lost

        # The scheduler killed and started again schedules the next run.
        scheduler_pid = int((cluster_dir / "pids" / "scheduler.pid").read_text())
        restarted = _script("restart-scheduler", "--kill", cluster_dir=cluster_dir, timeout=240)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        assert not _processes_in({scheduler_pid})
        started += _processes_in(_sessions(cluster_dir / "pids"))
        run_id = api.send("POST", f"/dags/{dag}/dagRuns", {"logical_date": None})["dag_run_id"]
        state = _until(
            lambda: (
                (s := api.get(f"/dags/{dag}/dagRuns/{run_id}").json()["state"]) in ("success", "failed") and s
            ),
            "the run after the restarts",
            240,
        )
        assert state == "success"
        again_hosts = {
            t["hostname"]
            for t in api.get(f"/dags/{dag}/dagRuns/{run_id}/taskInstances", limit=100).json()[
                "task_instances"
            ]
        }
        assert again_hosts <= {"attempts-1", "attempts-2", "warehouse"}
    finally:
        stop = _script("stop", cluster_dir=cluster_dir, timeout=300)
    assert stop.returncode == 0, stop.stderr
    left = [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [(p.pid, p.cmdline()) for p in left]
    assert not list((cluster_dir / "pids").glob("*.pid"))
    shutil.rmtree(cluster_dir, ignore_errors=True)
