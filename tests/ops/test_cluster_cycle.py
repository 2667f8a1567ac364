"""Every test on a real Airflow cluster (issues 12 and 23), all on one cluster started once for the
module: CeleryExecutor on Postgres and Redis, two attempt workers and a warehouse worker that share no
folder, only the object store (moto's S3 server), started by `scripts/cluster.sh` as an operator
would. In order:

1. **start**: every component alive, listening on 127.0.0.1 only; a probe DAG's task on every queue
   runs on its host, its log read from the object store; the warehouse host lost and started again,
   the scheduler killed and started again, and the next run goes through;
2. **a cycle with a lost worker**: triggered over the REST API and approved by a person through it;
   mid-attempt (its container paused, so the kill always lands while it runs) one attempt worker is
   SIGKILLed (its whole session, as a lost host), the scheduler is killed and restarted, the worker
   started again. Then every planned attempt has exactly one run record (in the runs store and in
   the warehouse), every attempt task ended green, attempts ran on both workers, the lost worker's
   containers are gone once the maintenance DAG has run;
3. **the scheduling benchmark** (scripts/bench_scheduling.py --cluster) at a tiny size;
4. **stop**: nothing of the cluster is left running;
5. **the same cycle on one machine** with `dag.test()`, twice (the second measures nothing again): its
   board equals the cluster's, byte for byte but for its timestamps.

The repositories are served by `git daemon` on 127.0.0.1: each host mirrors them itself, as it would
mirror a public forge.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest
import requests
from hitl_people import free_port

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "scripts" / "cluster.sh"
CYCLE = "2026-12-cl"
POOL_SIZE = 3
ORPHAN_GRACE = 30  # seconds (ARGUSIC_ORPHAN_GRACE_SECONDS)
BOARDS: dict[str, dict] = {}  # the cluster cycle's board, for the single machine's test after it

# A task on every queue: which host ran it and what it saw there.
PROBE_DAG = """
import os
import sys
import time

from airflow.sdk import dag, task


def _where(queue: str) -> str:
    line = " ".join(
        f"{name}={os.environ.get(name, '-')}"
        for name in (
            "ARGUSIC_HOSTNAME", "ARGUSIC_RUNS_DIR", "TMPDIR", "ARGUSIC_WAREHOUSE", "ARGUSIC_RUNS_URL"
        )
    )
    # imported by the worker before Celery forked it (argusic.orchestration.preload), not by this task
    line += f" PRELOADED={'argusic.cycle.run' in sys.modules}"
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
pytestmark = [pytest.mark.slow, pytest.mark.docker]


def _cluster(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    done = subprocess.run(
        ["bash", str(CLUSTER), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"cluster.sh {' '.join(args)}: {done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr


class Api:
    """The REST API as a person's script uses it: a token from /auth/token, then /api/v2."""

    def __init__(self, url: str, user: str, password: str) -> None:
        self.url = url
        token = requests.post(f"{url}/auth/token", json={"username": user, "password": password}, timeout=30)
        token.raise_for_status()
        self.headers = {"Authorization": f"Bearer {token.json()['access_token']}"}

    def get(self, path: str, **params) -> dict:
        reply = requests.get(f"{self.url}/api/v2{path}", headers=self.headers, params=params, timeout=60)
        reply.raise_for_status()
        return reply.json()

    def send(self, method: str, path: str, body: dict) -> dict:
        reply = requests.request(
            method, f"{self.url}/api/v2{path}", headers=self.headers, json=body, timeout=60
        )
        assert reply.ok, f"{method} {path}: {reply.status_code} {reply.text[:2000]}"
        return reply.json()

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        found, offset = [], 0
        while True:
            page = self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", limit=100, offset=offset)
            found += page["task_instances"]
            offset += len(page["task_instances"])
            if not page["task_instances"] or offset >= page["total_entries"]:
                return found

    def wait_for_dag(self, dag_id: str, timeout: float = 300) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            reply = requests.get(f"{self.url}/api/v2/dags/{dag_id}", headers=self.headers, timeout=30)
            if reply.ok:
                return
            time.sleep(2)
        raise AssertionError(f"{dag_id} was not parsed within {timeout}s")


def _forge_served(base: Path) -> tuple[Path, subprocess.Popen]:
    """The demo forge's repositories behind `git daemon` on 127.0.0.1, and a catalogue naming them by
    git:// URL (each host mirrors them itself)."""
    from argusic.sources.forge import build_forge

    catalogue_path = build_forge(base / "forge")
    repos = base / "forge" / "repos"
    port = free_port()
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={repos}",
            "--export-all",
            "--reuseaddr",
            str(repos),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    catalogue = json.loads(catalogue_path.read_text())
    for candidate in catalogue["candidates"]:
        candidate["repo_url"] = f"git://127.0.0.1:{port}/{Path(candidate['repo_url']).name}"
    served = base / "catalogue-git.json"
    served.write_text(json.dumps(catalogue, indent=1))
    for _ in range(50):
        probe = subprocess.run(
            ["git", "ls-remote", catalogue["candidates"][0]["repo_url"]], capture_output=True, timeout=30
        )
        if probe.returncode == 0:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("git daemon did not answer")
    return served, daemon


def _board(path: Path) -> dict:
    """A published board without what differs between two runs of the same cycle: when it was cut and
    when its attempts ran (every `…_at` timestamp), and so which of a project's passing attempts ended
    first (a verdict cites its earliest pass: `verified_by_attempt_id` keeps agent and project, not
    the attempt's number, since attempts run in parallel end in any order)."""

    def timeless(value):
        if isinstance(value, dict):
            kept = {
                k: timeless(v) for k, v in value.items() if not k.endswith("_at") and k != "attempts_through"
            }
            if kept.get("verified_by_attempt_id"):
                kept["verified_by_attempt_id"] = ".".join(kept["verified_by_attempt_id"].split(".")[:4])
            return kept
        if isinstance(value, list):
            return [timeless(v) for v in value]
        return value

    return timeless(json.loads(path.read_text()))


def _same_board(cluster: dict, single: dict) -> None:
    if cluster != single:
        import difflib

        a = json.dumps(single, indent=1, sort_keys=True).splitlines()
        b = json.dumps(cluster, indent=1, sort_keys=True).splitlines()
        diff = "\n".join(difflib.unified_diff(a, b, "dag.test()", "cluster", lineterm="", n=2))
        raise AssertionError(f"the cluster's board differs from the single machine's:\n{diff[:6000]}")


def _attempts_in_containers(settings: dict) -> list[str]:
    """The attempt ids of the cluster's live containers (their label)."""
    import docker

    mine = {"label": f"argusic.installation={settings['INSTALLATION']}"}
    # sparse: names and labels from the list answer itself; a full list inspects each container after
    # listing it, and one removed in between (the cycle goes on) raised NotFound in a CI run
    found = docker.from_env().containers.list(filters=mine, sparse=True)
    return [(c.attrs.get("Labels") or {}).get("argusic.attempt_id", "") for c in found]


def _installation_containers(installation: str) -> list[str]:
    import docker

    client = docker.from_env()
    found = client.containers.list(
        all=True, filters={"label": f"argusic.installation={installation}"}, sparse=True
    )
    return [c.attrs["Names"][0].lstrip("/") for c in found]  # sparse: see _attempts_in_containers


@pytest.fixture(scope="module")
def served_catalogue(tmp_path_factory):
    base = tmp_path_factory.mktemp("forge-served")
    catalogue, daemon = _forge_served(base)
    yield catalogue
    os.killpg(daemon.pid, signal.SIGTERM)
    daemon.wait(timeout=30)


class SharedCluster:
    """The one cluster of this module: its folder, the environment its script runs with, and every
    process it ever ran (read again after each restart) for the last test's check that none is left."""

    def __init__(self, folder: Path, env: dict[str, str], started_output: str, bench_work: Path) -> None:
        self.folder, self.env, self.started_output, self.bench_work = folder, env, started_output, bench_work
        self.seen: list[psutil.Process] = []
        self.note_processes()

    def script(self, *args: str, timeout: float = 600) -> str:
        return _cluster(self.env, *args, timeout=timeout)

    def run_script(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(CLUSTER), *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def sessions(self) -> set[int]:
        return {int(p.read_text()) for p in (self.folder / "pids").glob("*.pid")}

    def note_processes(self) -> None:
        self.seen += _processes_in(self.sessions())


def _processes_in(sessions: set[int]) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) in sessions:
                found.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


@pytest.fixture(scope="module")
def cluster(request) -> SharedCluster:
    """One cluster for every test of this module (issue 23: it was started three times per run), its
    DAGs folder holding the project's DAGs and the probe DAG; its attempt workers may read the
    benchmark's catalogue folder. Stopped by the last test, which checks that nothing is left; kept
    with its logs when a test of the module failed."""
    from argusic.sandbox.executor import docker_available

    if not docker_available():
        pytest.skip("no Docker daemon")
    # Postgres runs as an unprivileged user: the cluster's folder must be reachable by it (pytest's
    # temporary folders are not, mode 700).
    folder = Path(tempfile.mkdtemp(prefix="argusic-cluster-", dir="/tmp"))
    folder.chmod(0o755)
    dags = folder / "dags"
    dags.mkdir()
    for dag_file in sorted((ROOT / "dags").glob("*.py")):
        shutil.copy2(dag_file, dags / dag_file.name)
    (dags / "argusic_cluster_probe.py").write_text(PROBE_DAG)
    bench_work = folder / "bench"
    (bench_work / "catalogue").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ARGUSIC_"))}
    env |= {
        "ARGUSIC_CLUSTER_DIR": str(folder),
        "ARGUSIC_CLUSTER_DAGS_FOLDER": str(dags),
        "ARGUSIC_CLUSTER_STOP_GRACE": "15",
        "ARGUSIC_CLUSTER_ATTEMPT_CONCURRENCY": "2",
        # the maintenance DAG removes a lost worker's containers this long past their deadline (300 s
        # in production): the cycle test waits for that moment, so it is short here
        "ARGUSIC_ORPHAN_GRACE_SECONDS": str(ORPHAN_GRACE),
        "ARGUSIC_REPO_ROOTS": str(bench_work / "catalogue"),
        # a restarted scheduler adopts the tasks its killed predecessor queued this often (60 s in
        # scripts/cluster.sh): the lost worker's attempts are retried sooner after the restart
        "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "20",
    }
    env |= {f"ARGUSIC_CLUSTER_{name}_PORT": str(free_port()) for name in ("API", "PG", "REDIS", "S3")}
    failed_before = request.session.testsfailed
    started = time.monotonic()
    output = _cluster(env, "start", timeout=600)
    print(f"cluster started in {time.monotonic() - started:.0f} s")
    shared = SharedCluster(folder, env, output, bench_work)
    yield shared
    if list((folder / "pids").glob("*.pid")):  # the last test did not get to stop it
        subprocess.run(["bash", str(CLUSTER), "stop"], env=env, capture_output=True, timeout=600)
    if request.session.testsfailed == failed_before:  # else kept, every component's log in logs/
        shutil.rmtree(folder, ignore_errors=True)


def test_the_cluster_starts_on_loopback_and_runs_a_task_on_every_queue(cluster: SharedCluster) -> None:
    """Started by scripts/cluster.sh as an operator would: every component alive, every listener on
    127.0.0.1, Postgres unprivileged, the secrets private; a task on every queue runs on its host and
    its log comes from the object store; a lost host (the warehouse: its Celery worker and its build
    worker) SIGKILLed and started again, the scheduler killed and started again, and the next run
    still goes through."""
    folder = cluster.folder
    assert "cluster started" in cluster.started_output
    again = cluster.run_script("start")
    assert again.returncode == 0 and "already running" in again.stdout
    status = cluster.run_script("status")
    assert status.returncode == 0, status.stdout
    assert status.stdout.count(" alive ") == 11

    # Every process of every component, and every listener they hold: loopback only.
    settings = _recorded(folder)
    ports = {int(settings[f"{name}_PORT"]) for name in ("API", "PG", "REDIS", "S3")}
    pids = {p.pid for p in _processes_in(cluster.sessions())}
    listeners = [
        c for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and c.pid in pids
    ]
    assert {c.laddr.ip for c in listeners} == {"127.0.0.1"}, listeners
    assert ports <= {c.laddr.port for c in listeners}

    # Postgres runs as an unprivileged user, never as root.
    postgres = psutil.Process(int((folder / "pids" / "postgres.pid").read_text()))
    assert postgres.uids().effective != 0

    # The secrets file is private.
    assert (folder / "secrets.env").stat().st_mode & 0o077 == 0

    password = json.loads((folder / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    api = Api(f"http://127.0.0.1:{settings['API_PORT']}", "admin", password)
    dag = "argusic_cluster_probe"
    api.wait_for_dag(dag, timeout=120)
    assert api.get(f"/dags/{dag}")["is_paused"]  # start unpauses nothing
    api.send("PATCH", f"/dags/{dag}", {"is_paused": False})
    run_id = api.send("POST", f"/dags/{dag}/dagRuns", {"logical_date": None})["dag_run_id"]
    state = _wait_for_run(api, dag, run_id, timeout=240)
    tis = api.task_instances(dag, run_id)
    assert state == "success", [(t["task_id"], t["map_index"], t["state"]) for t in tis]
    hosts = {(t["task_id"], t["map_index"]): t["hostname"] for t in tis}
    assert hosts[("on_warehouse", -1)] == "warehouse"
    assert hosts[("on_default", -1)] == "warehouse"
    attempt_hosts = [h for (task, _), h in hosts.items() if task == "on_attempts"]
    assert len(attempt_hosts) == 8
    assert set(attempt_hosts) == {"attempts-1", "attempts-2"}, attempt_hosts

    # Task logs come from the object store (no worker serves logs), with what each host saw.
    def log_of(task: str, map_index: int = -1) -> str:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            response = requests.get(
                f"{api.url}/api/v2/dags/{dag}/dagRuns/{run_id}/taskInstances/{task}/logs/1",
                headers=api.headers,
                params={"map_index": map_index, "full_content": True},
                timeout=30,
            )
            text = response.text if response.ok else ""
            if "s3://argusic/logs/" in text and "PROBE " in text:
                return text
            time.sleep(1)
        raise AssertionError(f"the log of {task}[{map_index}] did not come from S3 within 60 s")

    for task, map_index in (("on_warehouse", -1), ("on_default", -1), ("on_attempts", 0)):
        log = log_of(task, map_index)
        host = hosts[(task, map_index)]
        assert f"ARGUSIC_HOSTNAME={host} " in log
        assert f"ARGUSIC_RUNS_DIR={folder}/hosts/{host}/runs " in log
        assert f"TMPDIR={folder}/hosts/{host}/tmp " in log
        expected_warehouse = (
            f"{folder}/hosts/warehouse/warehouse/argusic.duckdb" if host == "warehouse" else "-"
        )
        assert f"ARGUSIC_WAREHOUSE={expected_warehouse} " in log
        assert "ARGUSIC_RUNS_URL=s3://argusic/runs" in log
        if task == "on_attempts":  # started with the attempt path imported (the worker preloads it; #29)
            assert re.search(r"PRELOADED=True\b", log), log[-2000:]

    # A lost host (the warehouse: its Celery worker and its build worker) SIGKILLed, then back.
    lost = {
        int((folder / "pids" / f"{name}.pid").read_text()) for name in ("worker-warehouse", "build-worker")
    }
    killed = cluster.run_script("kill-worker", "warehouse")
    assert killed.returncode == 0, killed.stderr
    assert not _processes_in(lost)
    status = cluster.run_script("status")
    assert status.returncode == 3
    down = [line.split()[3] for line in status.stdout.splitlines() if line.startswith(("worker-", "build-"))]
    assert down == ["alive", "alive", "down", "down"]
    restarted = cluster.run_script("start-worker", "warehouse", timeout=240)
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    print("the warehouse worker was killed and started again")
    assert cluster.run_script("status").returncode == 0
    assert not cluster.sessions() & lost

    # The scheduler killed and started again schedules the next run.
    scheduler_pid = int((folder / "pids" / "scheduler.pid").read_text())
    restarted = cluster.run_script("restart-scheduler", "--kill", timeout=240)
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert not _processes_in({scheduler_pid})
    cluster.note_processes()
    run_id = api.send("POST", f"/dags/{dag}/dagRuns", {"logical_date": None})["dag_run_id"]
    assert _wait_for_run(api, dag, run_id, timeout=240) == "success"
    again_hosts = {t["hostname"] for t in api.task_instances(dag, run_id)}
    assert again_hosts <= {"attempts-1", "attempts-2", "warehouse"}


def test_a_cycle_on_the_cluster_survives_a_lost_worker(
    cluster: SharedCluster, tmp_path: Path, served_catalogue: Path
) -> None:
    from hitl_people import Answerer, Person

    _cycle_with_a_lost_worker(cluster.env, cluster.folder, tmp_path, served_catalogue, Answerer, Person)
    cluster.note_processes()


def test_the_scheduling_benchmark_runs_its_stand_ins_on_the_cluster(cluster: SharedCluster) -> None:
    """scripts/bench_scheduling.py at a tiny size on this cluster (--cluster): 12 mapped stand-ins
    (4 projects x 3), all measured, on the attempt workers only. The benchmark wants attempt workers
    with its stand-in switch on (a worker with it refuses every real cycle): both are started again
    with it first."""
    from argusic.orchestration.bench_standin import STANDIN_ENV
    from test_bench_scheduling import check_smoke_result

    for host in ("attempts-1", "attempts-2"):
        cluster.script("kill-worker", host)
        _cluster(cluster.env | {STANDIN_ENV: "1"}, "start-worker", host, timeout=240)
        print(f"attempt worker {host} started again with {STANDIN_ENV}=1 for the benchmark")
    cluster.note_processes()

    proc = subprocess.run(
        [
            sys.executable, str(ROOT / "scripts" / "bench_scheduling.py"),
            "--sizes", "12", "--max-minutes", "5", "--docker-repeat", "2",
            "--cluster", str(cluster.folder), "--work", str(cluster.bench_work),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ARGUSIC_"))},
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    check_smoke_result(proc.stdout)
    assert "the running cluster in" in proc.stdout


def test_the_cluster_stops_and_leaves_no_process(cluster: SharedCluster) -> None:
    """The last test of the module: `stop` ends every component and whatever they started."""
    stop = cluster.run_script("stop", timeout=600)
    assert stop.returncode == 0, stop.stderr
    left = [p for p in cluster.seen if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, [(p.pid, p.cmdline()) for p in left]
    assert not list((cluster.folder / "pids").glob("*.pid"))
    named = subprocess.run(
        ["pgrep", "-f", str(cluster.folder)], capture_output=True, text=True
    ).stdout.split()
    assert named == [], f"processes of the cluster left after stop: {named}"


def _cycle_with_a_lost_worker(
    env, cluster_dir: Path, tmp_path: Path, catalogue: Path, Answerer, Person
) -> None:
    settings = _recorded(cluster_dir)
    url = f"http://127.0.0.1:{settings['API_PORT']}"
    password = json.loads((cluster_dir / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
    api = Api(url, "admin", password)
    for dag_id in ("argusic_cycle", "argusic_maintenance"):
        api.wait_for_dag(dag_id)
        api.send("PATCH", f"/dags/{dag_id}", {"is_paused": False})

    run_id = f"cycle__{CYCLE}__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    conf = _cycle_conf(catalogue)
    api.send(
        "POST", "/dags/argusic_cycle/dagRuns", {"dag_run_id": run_id, "logical_date": None, "conf": conf}
    )

    ops = Person(url, "admin", password)
    events: list[str] = []
    with Answerer(ops, lambda detail: (ops, "Approve", "cluster end to end: checked")) as answerer:
        kill = _lose_a_worker_mid_cycle(api, env, cluster_dir, settings, run_id, events)
        killed = kill["worker"]
        state = _wait_for_run(api, "argusic_cycle", run_id, timeout=1500)
    print("\n".join(events))
    tis = api.task_instances("argusic_cycle", run_id)
    attempts = [t for t in tis if t["task_id"] == "run_attempt"]
    assert state == "success", [
        (t["task_id"], t["map_index"], t["state"]) for t in tis if t["state"] != "success"
    ]
    assert not answerer.errors, answerer.errors

    # Every attempt ran to a record exactly once: green, one record per planned attempt in the store
    # and in the warehouse, none refused as written twice.
    assert len(attempts) == POOL_SIZE * 3 and all(t["state"] == "success" for t in attempts)
    tries = [
        attempt_try
        for t in attempts
        for attempt_try in api.get(
            f"/dags/argusic_cycle/dagRuns/{run_id}/taskInstances/run_attempt/{t['map_index']}/tries"
        )["task_instances"]
    ]
    spread: dict[str, int] = {}
    for attempt_try in tries:
        key = f"{attempt_try['hostname']} ({attempt_try['state']})"
        spread[key] = spread.get(key, 0) + 1
    print(f"attempt tries per worker: {spread}")
    assert {t["hostname"] for t in tries} == {"attempts-1", "attempts-2"}
    lost = [t for t in tries if t["hostname"] == killed and t["state"] != "success"]
    assert lost, f"no try of {killed} was lost with it: {spread}"
    assert all(t["try_number"] > 1 for t in attempts if t["map_index"] in {x["map_index"] for x in lost})
    records = _store_records(env, settings)
    assert len(records) == POOL_SIZE * 3, _record_endings(settings, records)
    warehouse = cluster_dir / "hosts" / "warehouse" / "warehouse" / "argusic.duckdb"
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            "SELECT attempt_id, count(*) FROM raw.run_records WHERE cycle_id = ? GROUP BY 1", [CYCLE]
        ).fetchall()
    assert sorted(a for a, _ in rows) == sorted(records) and all(n == 1 for _, n in rows)

    # What the kill left behind: the lost tries' reapers (sessions of their own) remove their containers
    # and scratch folders at once (seen: nothing left); whatever they could not is removed by the
    # maintenance DAG once past its deadline and grace (containers), or by the next attempt's sweep
    # there (folders).
    from argusic.core.settings import orchestrator_config

    budget = max(orchestrator_config().budgets_minutes.values()) * 60 / 360  # demo budgets
    removable_at = kill["at"] + budget + 120 + ORPHAN_GRACE  # 120: watchdog grace and slack
    print(f"maintenance {max(0.0, removable_at - time.time()):.0f} s after the cycle ended")
    time.sleep(max(0.0, removable_at - time.time()))
    maintenance_id = f"maintenance__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    api.send(
        "POST", "/dags/argusic_maintenance/dagRuns", {"dag_run_id": maintenance_id, "logical_date": None}
    )
    _wait_for_run(api, "argusic_maintenance", maintenance_id, timeout=600)
    ran = api.task_instances("argusic_maintenance", maintenance_id)
    removed = {t["task_id"]: t["state"] for t in ran}
    assert removed["remove_orphaned_containers"] == "success", removed
    removed_by_maintenance = api.get(
        f"/dags/argusic_maintenance/dagRuns/{maintenance_id}/taskInstances/remove_orphaned_containers"
        "/xcomEntries/return_value"
    )["value"]
    after = _installation_containers(settings["INSTALLATION"])
    victim_scratch = sorted(p.name for p in (cluster_dir / "hosts" / killed / "scratch").iterdir())
    print(f"left by the kill: containers {kill['containers']}, scratch {kill['scratch']}")
    print(f"removed by the maintenance DAG: {removed_by_maintenance}")
    print(f"after the cycle and maintenance: containers {after}, scratch of {killed} {victim_scratch}")
    assert after == []

    # The module's last test runs the same cycle with dag.test() on one machine and compares boards.
    BOARDS["cluster"] = _board(cluster_dir / "hosts" / "warehouse" / "published" / CYCLE / "board.json")


def _cycle_conf(catalogue: Path) -> dict:
    """The cycle both runs trigger: the same pool, agent and (demo) budgets."""
    return {
        "cycle_id": CYCLE,
        "catalogue": str(catalogue),
        "pool_size": POOL_SIZE,
        "agents": ["readme-runner"],
        "demo": True,
    }


def _recorded(cluster_dir: Path) -> dict[str, str]:
    """The ports and secrets scripts/cluster.sh recorded at start (cluster.env, secrets.env)."""
    found = {}
    for name in ("cluster.env", "secrets.env"):
        for line in (cluster_dir / name).read_text().splitlines():
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip().strip("'\"")
    return found


def _s3(settings: dict):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{settings['S3_PORT']}",
        aws_access_key_id=settings["S3_ACCESS_KEY"],
        aws_secret_access_key=settings["S3_SECRET_KEY"],
        region_name="us-east-1",
    )


def _record_endings(settings: dict, attempt_ids: list[str]) -> dict[str, str]:
    """How each stored record ended (end reason, invalid reason, executor, when): what a failure of
    the one-record-per-attempt check needs to tell which try measured what."""
    s3, found = _s3(settings), {}
    for attempt_id in attempt_ids:
        body = s3.get_object(Bucket="argusic", Key=f"runs/{CYCLE}/{attempt_id}/run_record.json")["Body"]
        doc = json.loads(body.read())
        found[attempt_id] = (
            f"{doc['end_reason']} {doc['started_at']}..{doc['ended_at']}; invalid: {doc['invalid_reason']}"
        )
    return found


def _store_records(env: dict[str, str], settings: dict) -> list[str]:
    s3 = _s3(settings)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="argusic", Prefix=f"runs/{CYCLE}/"):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return sorted(k.split("/")[2] for k in keys if k.endswith("/run_record.json"))


def _wait_for_run(api: Api, dag_id: str, run_id: str, timeout: float) -> str:
    end = time.monotonic() + timeout
    state = "queued"
    while time.monotonic() < end:
        state = api.get(f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
        if state in {"success", "failed"}:
            return state
        time.sleep(3)
    raise AssertionError(f"{dag_id} {run_id} still {state} after {timeout}s")


def _lose_a_worker_mid_cycle(
    api: Api, env, cluster_dir: Path, settings: dict, run_id: str, events: list[str]
) -> dict:
    """Wait until an attempt runs on an attempt worker, then SIGKILL that worker's whole session (a
    lost host); kill the scheduler and start it again; start the lost worker again a little later.
    Returns the lost worker's name, when, and what it left (containers, scratch folders)."""
    end = time.monotonic() + 600
    victim = None
    while victim is None:
        assert time.monotonic() < end, "no attempt's container was up on a worker within 600s"
        with_container = {
            c.split(".")[-2] + "." + c.split(".")[-1] for c in _attempts_in_containers(settings)
        }
        for t in api.task_instances("argusic_cycle", run_id):
            label = (t.get("rendered_map_index") or "").split(" · ")[0]
            parts = label.split(" / ")
            if t["task_id"] != "run_attempt" or t["state"] != "running" or len(parts) != 3:
                continue
            key = f"{parts[1]}.a{parts[2].removeprefix('attempt ')}"
            if key not in with_container:
                continue
            # The kill must land mid-attempt: a demo attempt ends within seconds, and a kill that
            # lands after its container ended (while the task lands /out or writes the record) is
            # another story. Paused, the container cannot end before the worker is gone.
            frozen = _pause_container_of(settings, key)
            if frozen is not None:
                victim, chosen = t["hostname"], t
                break
        time.sleep(0.5)
    events.append(f"{time.strftime('%X')} attempt {chosen['map_index']} ran on {victim}, its container up")
    _cluster(env, "kill-worker", victim)
    at = time.time()
    events.append(f"{time.strftime('%X')} SIGKILL worker {victim} (its attempt's container {frozen} paused)")
    _unpause(frozen)
    left = {
        "worker": victim,
        "at": at,
        "containers": _installation_containers(settings["INSTALLATION"]),
        "scratch": sorted(p.name for p in (cluster_dir / "hosts" / victim / "scratch").iterdir()),
    }
    _cluster(env, "restart-scheduler", "--kill")
    events.append(f"{time.strftime('%X')} scheduler killed and started again")
    time.sleep(20)
    _cluster(env, "start-worker", victim)
    events.append(f"{time.strftime('%X')} worker {victim} started again")
    return left


def _pause_container_of(settings: dict, key: str) -> str | None:
    """Pause the running container of the attempt `<project>.a<n>` (the key the caller matched);
    None when it ended in between (the caller then looks for another)."""
    import docker

    mine = {"label": f"argusic.installation={settings['INSTALLATION']}", "status": "running"}
    for container in docker.from_env().containers.list(filters=mine):
        if container.labels.get("argusic.attempt_id", "").endswith(f".{key}"):
            with contextlib.suppress(docker.errors.APIError):
                container.pause()
                return container.name
    return None


def _unpause(name: str | None) -> None:
    import docker

    if name is None:
        return
    with contextlib.suppress(docker.errors.APIError):  # removed meanwhile by the lost try's reaper
        docker.from_env().containers.get(name).unpause()


def test_the_same_cycle_on_one_machine_gives_the_same_board_and_runs_once(
    tmp_path: Path, served_catalogue: Path
) -> None:
    """The same cycle through `dag.test()` on one machine (tests/orchestration/test_dags.py's
    harness, the Docker
    executor), approved through the REST API by the same kind of person, twice: the second run finds
    every record and measures nothing again, loads nothing twice. Its board equals the cluster's
    (the cycle test above), byte for byte but for its timestamps. (Told once: this was also
    tests/orchestration/test_dags.py's Docker cycle, on another pool.)"""
    import duckdb
    from argusic.core.record import load_record_file
    from argusic.sandbox.executor import docker_available
    from hitl_people import Answerer, Person, api_server
    from test_dags import airflow_env, dag_test, env_for, migrate_metadata_db

    if not docker_available():
        pytest.skip("no Docker daemon")
    home = tmp_path / "home"
    migrate_metadata_db(airflow_env(home))
    port = free_port()
    env = env_for(home / "airflow", tmp_path, ARGUSIC_EXECUTOR="docker", AIRFLOW_UI_PORT=str(port))
    conf = _cycle_conf(served_catalogue)
    started = time.perf_counter()
    with api_server(env, tmp_path / "api-server.log", port) as server:
        ops = Person(server["url"], "admin", server["passwords"]["admin"])
        with Answerer(ops, lambda detail: (ops, "Approve", "single machine reference")) as answerer:
            first, second = dag_test(env, [{"dag_id": "argusic_cycle", "conf": conf}] * 2, timeout=1200)
    print(f"dag.test x2: {time.perf_counter() - started:.1f}s ({first['seconds']}s, {second['seconds']}s)")
    assert not answerer.errors, answerer.errors
    answered = [a["detail"]["task_instance"]["task_id"] for a in answerer.answered]
    assert answered == ["approve_publication"] * 2

    assert first["state"] == "success", [t for t in first["tis"] if t["state"] != "success"]
    attempts = [t for t in first["tis"] if t["task_id"] == "run_attempt"]
    assert len(attempts) == POOL_SIZE * 3
    assert all(t["state"] == "success" and t["try"] == 1 for t in attempts)
    labels = sorted(t["label"] for t in attempts)
    assert all(label.startswith("readme-runner / ") for label in labels), labels
    # The label says how each attempt ended, once it has: "agent / project / attempt N · ✓ ran, …".
    assert all(" · ✓ " in label or " · ✗ " in label for label in labels), labels
    named = {label.split(" · ")[0].rsplit(" / ", 1)[1] for label in labels}
    assert named == {"attempt 1", "attempt 2", "attempt 3"}

    returned = [p for x in first["xcom"] if x["task_id"] == "run_attempt" for p in x["value"]]
    records = [load_record_file(Path(p)) for p in returned]
    assert all(r.executor == "docker" and r.cycle_id == CYCLE for r in records)
    assert len({(r.project_id, r.attempt_no) for r in records if r.rerun_of is None}) == POOL_SIZE * 3
    ingested = next(x["value"] for x in first["xcom"] if x["task_id"] == "ingest")
    assert ingested["inserted"] == len(returned) and ingested["already_present"] == 0

    def row_count() -> int:
        with duckdb.connect(env["ARGUSIC_WAREHOUSE"], read_only=True) as con:
            query = "SELECT count(*) FROM raw.run_records WHERE cycle_id = ?"
            return con.execute(query, [CYCLE]).fetchone()[0]

    assert row_count() == len(returned)
    # The same cycle again: every attempt finds its record, nothing is measured or loaded twice.
    assert second["state"] == "success", second
    again = next(x["value"] for x in second["xcom"] if x["task_id"] == "ingest")
    assert again == {"files": len(returned), "inserted": 0, "already_present": len(returned)}
    assert row_count() == len(returned)

    single = _board(tmp_path / "published" / CYCLE / "board.json")
    assert [row["configuration"]["agent_id"] for row in single["rows"]] == ["readme-runner"]
    assert "cluster" in BOARDS, "no board of the cluster's cycle to compare with: the cycle test failed"
    _same_board(BOARDS["cluster"], single)
    print(f"boards equal: {len(single['rows'])} row(s), {len(single['projects'])} project(s)")
