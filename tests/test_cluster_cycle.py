"""A cycle through a real Airflow cluster (issue 12): CeleryExecutor on Postgres and Redis, two attempt
workers and a warehouse worker that share no folder, only the object store (moto's S3 server),
started by `scripts/cluster.sh` as an operator would. The cycle is triggered over the REST API and
approved by a person through it; mid-cycle one attempt worker is SIGKILLed (its whole session, as a
lost host) and the scheduler is killed and restarted. Then:

- every planned attempt has exactly one run record (in the runs store, and in the warehouse), every
  attempt task ended green, and no record was refused as written twice;
- attempts ran on both attempt workers (the task instances' hostnames);
- the lost worker's containers are gone once the maintenance DAG has run;
- the board equals, byte for byte but for its timestamps, the board the same cycle gives with
  `dag.test()` on one machine.

The repositories are served by `git daemon` on 127.0.0.1: each host mirrors them itself, as it would
mirror a public forge.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
from hitl_people import free_port

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "scripts" / "cluster.sh"
CYCLE = "2026-12-cl"
POOL_SIZE = 3
ORPHAN_GRACE = 30  # seconds (ARGUSIC_ORPHAN_GRACE_SECONDS)
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
    from argusic.forge import build_forge

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


def test_a_cycle_on_the_cluster_survives_a_lost_worker_and_equals_the_single_machine_board(
    tmp_path: Path, served_catalogue: Path
) -> None:
    from argusic.executor import docker_available

    if not docker_available():
        pytest.skip("no Docker daemon")
    from hitl_people import Answerer, Person

    # Postgres runs as an unprivileged user: the cluster's folder must be reachable by it (pytest's
    # temporary folders are not, mode 700).
    cluster_dir = Path(tempfile.mkdtemp(prefix="argusic-cluster-cycle-", dir="/tmp"))
    cluster_dir.chmod(0o755)
    env = dict(
        os.environ,
        ARGUSIC_CLUSTER_DIR=str(cluster_dir),
        ARGUSIC_CLUSTER_API_PORT=str(free_port()),
        ARGUSIC_CLUSTER_PG_PORT=str(free_port()),
        ARGUSIC_CLUSTER_REDIS_PORT=str(free_port()),
        ARGUSIC_CLUSTER_S3_PORT=str(free_port()),
        # the maintenance DAG removes a lost worker's containers this long past their deadline (300 s
        # in production): the test waits for that moment, so it is short here
        ARGUSIC_ORPHAN_GRACE_SECONDS=str(ORPHAN_GRACE),
    )
    for key in [k for k in env if k.startswith(("ARGUSIC_RUNS", "ARGUSIC_WAREHOUSE", "AIRFLOW"))]:
        env.pop(key)
    started, passed = time.monotonic(), False
    try:
        _cluster(env, "start")
        print(f"cluster started in {time.monotonic() - started:.0f}s")
        _cycle_with_a_lost_worker(env, cluster_dir, tmp_path, served_catalogue, Answerer, Person)
        passed = True
    finally:
        print(_cluster(env, "stop")[-2000:])
        left = subprocess.run(
            ["pgrep", "-f", str(cluster_dir)], capture_output=True, text=True
        ).stdout.split()
        if passed:  # else kept, with every component's log in logs/, for whoever reads the failure
            shutil.rmtree(cluster_dir, ignore_errors=True)
    assert left == [], f"processes of the cluster left after stop: {left}"


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

    # What the kill left behind: the lost worker's containers (its reaper died with it; each container's
    # watchdog ends it at its budget) are removed by the maintenance DAG once they are past their
    # deadline and grace, whichever is left by then; its scratch folders by the next attempt there.
    from argusic.settings import orchestrator_config

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

    # The same cycle with dag.test() on one machine gives the same board.
    cluster_board = _board(cluster_dir / "hosts" / "warehouse" / "published" / CYCLE / "board.json")
    single = _single_machine_board(tmp_path / "single", catalogue)
    _same_board(cluster_board, single)
    print(f"boards equal: {len(single['rows'])} row(s), {len(single['projects'])} project(s)")


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
            if f"{parts[1]}.a{parts[2].removeprefix('attempt ')}" not in with_container:
                continue
            # The kill must land mid-attempt: a demo attempt ends within seconds, and a kill that
            # lands after its container ended (while the task lands /out or writes the record) is
            # another story. Paused, the container cannot end before the worker is gone.
            frozen = _pause_container_of(settings, t)
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


def _pause_container_of(settings: dict, task: dict) -> str | None:
    """Pause the container of a running attempt task (its label: agent / project / attempt n);
    None when it ended in between (the caller then looks for another)."""
    import docker

    agent, project, number = (task.get("rendered_map_index") or "").split(" · ")[0].split(" / ")
    suffix = f".{agent}.{project}.a{number.removeprefix('attempt ')}"
    mine = {"label": f"argusic.installation={settings['INSTALLATION']}", "status": "running"}
    for container in docker.from_env().containers.list(filters=mine):
        if container.labels.get("argusic.attempt_id", "").endswith(suffix):
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


def _single_machine_board(base: Path, catalogue: Path) -> dict:
    """The same cycle through `dag.test()` on one machine (tests/test_dags.py's harness), approved
    through the REST API by the same kind of person."""
    sys.path.insert(0, str(Path(__file__).parent))
    from hitl_people import Answerer, Person, api_server
    from test_dags import airflow_env, dag_test, env_for

    home = base / "home"
    migrate = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
        env=airflow_env(home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert migrate.returncode == 0, migrate.stderr[-4000:]
    port = free_port()
    env = env_for(home / "airflow", base, ARGUSIC_EXECUTOR="docker", AIRFLOW_UI_PORT=str(port))
    conf = _cycle_conf(catalogue)
    with api_server(env, base / "api-server.log", port) as server:
        ops = Person(server["url"], "admin", server["passwords"]["admin"])
        with Answerer(ops, lambda detail: (ops, "Approve", "single machine reference")) as answerer:
            (result,) = dag_test(env, [{"dag_id": "argusic_cycle", "conf": conf}], timeout=1200)
    assert not answerer.errors
    assert result["state"] == "success", [t for t in result["tis"] if t["state"] != "success"]
    return _board(base / "published" / CYCLE / "board.json")
