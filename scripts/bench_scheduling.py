"""Scheduling at scale: the real `argusic_cycle` DAG on the Celery cluster, attempts as instant stand-ins.

What runs: the cluster of scripts/cluster.sh (CeleryExecutor, Postgres, Redis, moto S3, two attempt
workers, the warehouse worker), started by this script in its own folder on free ports unless
`--cluster DIR` names a running one, and stopped at the end. Its workers carry
`ARGUSIC_BENCH_STANDIN_ATTEMPTS=1`, so every mapped `run_attempt` of a benchmark cycle (id ending in
`-bench`) reads its spec and returns at once: no container, no evidence, no record
(argusic.orchestration.bench_standin). For each size, a synthetic catalogue of size/3 projects on one real git
repository (tests/orchestration/test_dags.py `_synthetic_catalogue`) is drawn and planned by the DAG's own
prepare_pool and plan tasks, triggered over the REST API (`POST /api/v2/dags/argusic_cycle/dagRuns`,
JWT from `/auth/token`); then the mapped phase is watched in the metadata DB (Postgres). The downstream
ingest fails at once (no records): only the mapped phase is measured.

Printed per size (mapped = run_attempt task instances of the run):
- scheduler throughput: mapped instances finished per second, from the instances' end times, over the
  window from the end of `plan` (the expansion) to the last end seen, bounded by --max-minutes (then
  the run is marked failed: its remaining instances never run); and over the middle 80% of them;
- per-attempt orchestration overhead, from each finished stand-in's times: queued→end (what an attempt
  waits and costs besides its container), its parts queued→start (broker, worker pick-up, task process
  start) and start→end (the task itself), median and p95; and the worker slot-seconds per attempt
  (slots × window / finished);
- next to a bare `docker run --rm <runner image> true` measured in the same run (median of
  --docker-repeat), as ratios;
- where the CPU went during the window (per cluster component, from /proc) and the machine's load;
- the DAG parse time of argusic_cycle.py: the dag-processor's own stats (its log's table) and a
  DagBag fill in a fresh process (what `airflow dags report` does).

Timings on a shared 2-core machine are noisy and bounded by its CPU: read the ratios and where the CPU
went, not the absolute numbers.

Usage: .venv/bin/python scripts/bench_scheduling.py [--sizes 1200,11007] [--max-minutes 15]
           [--attempt-concurrency 4] [--docker-repeat 10] [--cluster DIR] [--work DIR] [--keep]
Prints a last line `@@RESULT@@{json}` with every figure
(tests/orchestration/test_bench_scheduling.py checks it;
tests/ops/test_cluster_cycle.py runs it on the shared cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

import psycopg2
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests"), str(ROOT / "tests" / "orchestration")]
from airflow_screenshots import Api, free_port  # noqa: E402  (the REST client, reused)
from argusic.core.settings import runner_image  # noqa: E402
from argusic.cycle.ids import run_id_for  # noqa: E402
from argusic.orchestration.bench_standin import STANDIN_ENV, STANDIN_LABEL  # noqa: E402
from test_dags import _synthetic_catalogue, airflow_env  # noqa: E402  (the fan-out test's catalogue)

DAG = "argusic_cycle"
MARK = "@@RESULT@@"
CLUSTER_SH = ROOT / "scripts" / "cluster.sh"
CLK_TCK = os.sysconf("SC_CLK_TCK")
TERMINAL = {"success", "failed", "skipped", "upstream_failed", "removed"}


def say(text: str) -> None:
    print(f"[bench] {datetime.now(UTC):%H:%M:%S} {text}", file=sys.stderr, flush=True)


def quantile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "median": quantile(values, 0.5),
        "p95": quantile(values, 0.95),
        "min": min(values) if values else None,
        "max": max(values) if values else None,
    }


# --- the cluster -------------------------------------------------------------------------------------


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as cluster.sh writes them (values may be shell-quoted by printf %q)."""
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key] = shlex.split(value)[0] if value else ""
    return out


class Cluster:
    """A cluster of scripts/cluster.sh, by its state folder: its ports, secrets and recorded PIDs."""

    def __init__(self, folder: Path, owned: bool) -> None:
        self.folder, self.owned = folder, owned

    def _script_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ARGUSIC_"))}
        env |= {"ARGUSIC_CLUSTER_DIR": str(self.folder), **(extra or {})}
        return env

    def start(self, extra: dict[str, str]) -> float:
        started = time.monotonic()
        proc = subprocess.run(
            ["bash", str(CLUSTER_SH), "start"], env=self._script_env(extra), capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"cluster.sh start: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
            )
        return time.monotonic() - started

    def stop(self) -> None:
        subprocess.run(
            ["bash", str(CLUSTER_SH), "stop"], env=self._script_env(), capture_output=True, text=True
        )

    @property
    def settings(self) -> dict[str, str]:
        return read_env_file(self.folder / "cluster.env") | read_env_file(self.folder / "secrets.env")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.settings['API_PORT']}"

    def admin_password(self) -> str:
        passwords = json.loads((self.folder / "simple_auth_manager_passwords.json.generated").read_text())
        return passwords["admin"]

    def db(self):
        s = self.settings
        conn = psycopg2.connect(
            host="127.0.0.1",
            port=int(s["PG_PORT"]),
            user="airflow",
            password=s["PG_PASSWORD"],
            dbname="airflow",
        )
        conn.autocommit = True
        return conn

    def components(self) -> dict[str, int]:
        """Component name -> the PID cluster.sh recorded (the leader of its own session)."""
        out = {}
        for pid_file in sorted((self.folder / "pids").glob("*.pid")):
            try:
                out[pid_file.stem] = int(pid_file.read_text().strip())
            except ValueError:
                continue
        return out

    def attempt_slots(self) -> int | None:
        """The attempt workers' concurrency, summed, as each Celery worker's banner states it."""
        total = 0
        for log in sorted((self.folder / "logs").glob("worker-attempts-*.log")):
            found = re.findall(r"concurrency:\s+(\d+)", log.read_text(errors="replace"))
            if not found:
                return None
            total += int(found[-1])
        return total or None

    def dag_processor_durations(self) -> list[tuple[str, float]]:
        """(finished at, seconds) of every parse of argusic_cycle.py in the dag-processor's stats table."""
        log = self.folder / "logs" / "dag-processor.log"
        seen: dict[str, float] = {}
        if log.exists():
            row = re.compile(r"^\S+\s+argusic_cycle\.py\s.*?\s(\d+(?:\.\d+)?)s\s+(\S+)\s*$")
            for line in log.read_text(errors="replace").splitlines():
                if match := row.match(line):
                    seen[match[2]] = float(match[1])
        return sorted(seen.items())


class BenchApi(Api):
    """The REST API client of scripts/airflow_screenshots.py, plus what triggering needs."""

    def send(self, method: str, path: str, body: dict) -> dict:
        answer = self.session.request(method, f"{self.base}/api/v2{path}", json=body, timeout=60)
        if answer.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {answer.status_code}: {answer.text[:2000]}")
        return answer.json()

    def unpause(self) -> None:
        self.send("PATCH", f"/dags/{DAG}", {"is_paused": False})

    def trigger(self, run_id: str, conf: dict) -> dict:
        return self.send(
            "POST", f"/dags/{DAG}/dagRuns", {"dag_run_id": run_id, "logical_date": None, "conf": conf}
        )

    def fail_run(self, run_id: str) -> None:
        quoted = urllib.parse.quote(run_id, safe="")
        self.send("PATCH", f"/dags/{DAG}/dagRuns/{quoted}", {"state": "failed"})


# --- what the machine does ---------------------------------------------------------------------------


def cpu_seconds_by_session() -> dict[int, float]:
    """Session id -> CPU seconds of its living processes, their reaped children included (utime,
    stime, cutime, cstime): a process that ended is counted once, in its parent's cutime/cstime."""
    out: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        session = int(fields[3])
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
        out[session] = out.get(session, 0.0) + ticks / CLK_TCK
    return out


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    total = sum(values[:8])
    return (total - idle) / CLK_TCK, total / CLK_TCK


class CpuWindow:
    """CPU seconds per cluster component, and of the whole machine, between two samples."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.components = cluster.components()
        self.sessions = cpu_seconds_by_session()
        self.machine = machine_busy_seconds()
        self.started = time.monotonic()

    def result(self) -> dict:
        now = cpu_seconds_by_session()
        busy, total = machine_busy_seconds()
        wall = time.monotonic() - self.started
        per = {
            name: round(now.get(pid, 0.0) - self.sessions.get(pid, 0.0), 1)
            for name, pid in self.components.items()
        }
        return {
            "wall_seconds": round(wall, 1),
            "cores": os.cpu_count(),
            "machine_busy_seconds": round(busy - self.machine[0], 1),
            "machine_total_seconds": round(total - self.machine[1], 1),
            "cluster_seconds": round(sum(per.values()), 1),
            "by_component": dict(sorted(per.items(), key=lambda kv: -kv[1])),
            "loadavg_at_end": Path("/proc/loadavg").read_text().split()[:3],
        }


def docker_baseline(repeat: int) -> dict:
    """`docker run --rm <runner image> true`, `repeat` times in a row: seconds each."""
    image = runner_image()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(["docker", "run", "--rm", image, "true"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return {"image": image, "seconds": [round(t, 3) for t in times], **summary(times)}


ACCESS_LINE = re.compile(
    r"^(?P<ts>\S+Z) .*\[http\.access\].*duration_us=(?P<us>\d+)"
    r".*method=(?P<method>\w+) path=/execution/(?P<path>\S*)"
)


def execution_api_requests(cluster: Cluster, start: datetime, end: datetime) -> dict:
    """The Execution API requests the api-server logged between `start` and `end` (what the workers'
    task processes asked: start, heartbeats, XComs, rendered fields, the end), by kind: count and
    median milliseconds. Every task's every state change and heartbeat goes through here."""
    log = cluster.folder / "logs" / "api-server.log"
    kinds: dict[str, list[float]] = {}
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            match = ACCESS_LINE.match(line)
            if not match:
                continue
            moment = datetime.fromisoformat(match["ts"].replace("Z", "+00:00"))
            if not start <= moment <= end:
                continue
            segments = match["path"].split("?")[0].split("/")
            what = segments[0] + (
                f"/{segments[2]}" if segments[0] == "task-instances" and len(segments) > 2 else ""
            )
            kinds.setdefault(f"{match['method']} {what}", []).append(int(match["us"]) / 1000)
    return {
        "total": sum(len(v) for v in kinds.values()),
        "by_kind": {
            k: {"n": len(v), "median_ms": round(quantile(v, 0.5), 1)}
            for k, v in sorted(kinds.items(), key=lambda kv: -len(kv[1]))
        },
    }


def dagbag_parse_seconds(work: Path, repeat: int = 3) -> dict:
    """argusic_cycle.py's parse time in a DagBag fill in a fresh process (`airflow dags report`'s
    figure: the file's import, DAG construction included), `repeat` fresh processes."""
    code = (
        "import json, os\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "folder = os.environ['AIRFLOW__CORE__DAGS_FOLDER']\n"
        "bag = DagBag(dag_folder=os.path.join(folder, 'argusic_cycle.py'))\n"
        "assert not bag.import_errors, bag.import_errors\n"
        "(s,) = bag.dagbag_stats\n"
        "d = s.duration\n"
        "print('@@PARSE@@' + json.dumps(d.total_seconds() if hasattr(d, 'total_seconds') else float(d)))\n"
    )
    env = airflow_env(work / "dagbag")
    times = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"parsing argusic_cycle.py in a DagBag failed:\n{proc.stderr[-3000:]}")
        out = proc.stdout
        times.append(json.loads(next(x for x in out.splitlines() if x.startswith("@@PARSE@@"))[9:]))
    return {"seconds": [round(t, 3) for t in times], **summary(times)}


# --- one size ----------------------------------------------------------------------------------------

TI_ROWS = """
SELECT task_id, map_index, state, queued_dttm, start_date, end_date, rendered_map_index, hostname
FROM task_instance WHERE dag_id = %s AND run_id = %s
"""
MAPPED_COUNTS = """
SELECT state, rendered_map_index = %s, count(*) FROM task_instance
WHERE dag_id = %s AND run_id = %s AND task_id = 'run_attempt' GROUP BY 1, 2
"""


def task_row(db, run_id: str, task_id: str) -> dict | None:
    with db.cursor() as cur:
        cur.execute(
            "SELECT state, start_date, end_date FROM task_instance WHERE dag_id = %s AND run_id = %s "
            "AND task_id = %s AND map_index = -1",
            (DAG, run_id, task_id),
        )
        row = cur.fetchone()
    return None if row is None else {"state": row[0], "start": row[1], "end": row[2]}


def mapped_counts(db, run_id: str) -> dict[str, int]:
    """run_attempt instances by state; `success_not_standin` counts finished ones that were no stand-in."""
    out: dict[str, int] = {}
    with db.cursor() as cur:
        cur.execute(MAPPED_COUNTS, (STANDIN_LABEL, DAG, run_id))
        for state, standin, count in cur.fetchall():
            key = state or "none"
            out[key] = out.get(key, 0) + count
            if state == "success" and not standin:
                out["success_not_standin"] = out.get("success_not_standin", 0) + count
    return out


def wait_for_plan(api: BenchApi, db, run_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        plan = task_row(db, run_id, "plan")
        if plan and plan["state"] == "success":
            return plan
        run = api.run(run_id)
        if run["state"] == "failed" or (plan and plan["state"] in ("failed", "upstream_failed")):
            raise RuntimeError(f"run {run_id}: the run failed before the mapped phase (plan: {plan})")
        time.sleep(2)
    raise TimeoutError(f"run {run_id}: plan not done after {timeout:.0f} s")


def stop_run(api: BenchApi, db, run_id: str) -> None:
    """Mark the run failed (its remaining instances never run) and wait until none is queued/running."""
    try:
        api.fail_run(run_id)
    except RuntimeError as err:
        say(f"could not mark {run_id} failed: {err}")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        counts = mapped_counts(db, run_id)
        if not any(counts.get(s) for s in ("queued", "running", "scheduled")):
            break
        time.sleep(3)
    time.sleep(10)  # messages already in the broker reach a worker and are refused by the API


def measure_size(api: BenchApi, cluster: Cluster, db, size: int, catalogue: Path, args) -> dict:
    if size % 3:
        raise SystemExit(f"--sizes: {size} is not a multiple of 3 (projects x 3 attempts)")
    stamp = datetime.now(UTC)
    cycle_id = f"2026-12-s{size}-{stamp:%H%M%S}-bench"
    run_id = run_id_for(cycle_id, stamp)
    conf = {
        "cycle_id": cycle_id,
        "catalogue": str(catalogue),
        "pool_size": size // 3,
        "agents": ["readme-runner"],
    }
    say(f"size {size}: triggering {run_id} ({size // 3} projects x 3 attempts)")
    triggered = time.monotonic()
    api.trigger(run_id, conf)
    plan = wait_for_plan(api, db, run_id, timeout=args.plan_timeout)
    pool = task_row(db, run_id, "prepare_pool")
    say(f"size {size}: plan done {time.monotonic() - triggered:.0f} s after the trigger; mapped phase begins")
    cpu = CpuWindow(cluster)
    window_start = plan["end"]
    bound = args.max_minutes * 60
    aborted = None
    last_print = 0.0
    while True:
        counts = mapped_counts(db, run_id)
        created = sum(v for k, v in counts.items() if k != "success_not_standin")
        finished = sum(counts.get(s, 0) for s in TERMINAL)
        if counts.get("success_not_standin"):
            aborted = (
                f"{counts['success_not_standin']} attempt(s) ended without being a stand-in: the workers "
                f"lack {STANDIN_ENV}=1; the run was stopped"
            )
        elif counts.get("failed"):
            aborted = f"{counts['failed']} attempt task(s) failed (stand-in refused?); the run was stopped"
        elapsed = (datetime.now(UTC) - window_start).total_seconds()
        if time.monotonic() - last_print > 30:
            say(
                f"size {size}: {elapsed:.0f} s into the mapped phase: {created} created, {finished} finished "
                f"{ {k: v for k, v in counts.items() if k != 'success_not_standin'} }"
            )
            last_print = time.monotonic()
        if aborted or (created >= size and finished >= size) or elapsed >= bound:
            break
        time.sleep(3)
    cpu_used = cpu.result()
    complete = not aborted and finished >= size
    # The instances as they are now: marking the run failed below turns every instance of it failed,
    # the finished ones included (their times and labels stay).
    with db.cursor() as cur:
        cur.execute(TI_ROWS, (DAG, run_id))
        rows = cur.fetchall()
    if not complete:
        say(
            f"size {size}: {'aborted: ' + aborted if aborted else f'bound reached ({args.max_minutes} min)'};"
            " marking the run failed"
        )
        stop_run(api, db, run_id)
    else:  # ingest fails at once (no records): let the run end before the next size
        api.wait_run(run_id, timeout=300)

    window_end_bound = window_start.timestamp() + bound
    mapped = [r for r in rows if r[0] == "run_attempt"]
    done = [  # a stand-in that ended: only its own successful end sets this label
        r
        for r in mapped
        if r[6] == STANDIN_LABEL and r[5] is not None and r[5].timestamp() <= window_end_bound
    ]
    ends = sorted(r[5].timestamp() for r in done)
    t0 = window_start.timestamp()
    # Complete (or aborted): up to the last end; bounded: the whole bound was watched.
    window = float(bound) if not complete and not aborted else ((ends[-1] - t0) if ends else 0.0)
    middle = {}
    if len(ends) >= 20:
        lo, hi = int(len(ends) * 0.1), int(len(ends) * 0.9)
        middle = {
            "finished": hi - lo,
            "seconds": round(ends[hi] - ends[lo], 2),
            "per_second": round((hi - lo) / (ends[hi] - ends[lo]), 3) if ends[hi] > ends[lo] else None,
        }
    queued_to_end = [(r[5] - r[3]).total_seconds() for r in done if r[3]]
    queued_to_start = [(r[4] - r[3]).total_seconds() for r in done if r[3] and r[4]]
    start_to_end = [(r[5] - r[4]).total_seconds() for r in done if r[4]]
    first_start = min((r[4] for r in done if r[4]), default=None)
    hosts: dict[str, int] = {}
    for r in done:
        hosts[r[7] or "?"] = hosts.get(r[7] or "?", 0) + 1
    slots = cluster.attempt_slots()
    return {
        "size": size,
        "cycle_id": cycle_id,
        "run_id": run_id,
        "mapped_created": len(mapped),
        "finished_in_window": len(done),
        "complete": complete,
        "aborted": aborted,
        "bound_seconds": bound,
        "window_seconds": round(window, 2),
        "before_mapped_phase": {
            "trigger_to_plan_end_seconds": round(
                (plan["end"] - (pool["start"] if pool and pool["start"] else plan["start"])).total_seconds(),
                1,
            ),
            "prepare_pool_seconds": round((pool["end"] - pool["start"]).total_seconds(), 1) if pool else None,
            "plan_seconds": round((plan["end"] - plan["start"]).total_seconds(), 1),
        },
        "plan_end_to_first_start_seconds": round((first_start - window_start).total_seconds(), 2)
        if first_start
        else None,
        "throughput_per_second": round(len(done) / window, 3) if window > 0 else None,
        "throughput_middle_80pct": middle,
        "queued_to_end": summary(queued_to_end),
        "queued_to_start": summary(queued_to_start),
        "start_to_end": summary(start_to_end),
        "attempt_slots": slots,
        "slot_seconds_per_attempt": round(slots * window / len(done), 3) if slots and done else None,
        "by_worker": hosts,
        "cpu": cpu_used,
        "execution_api": execution_api_requests(
            cluster, window_start, datetime.fromtimestamp(t0 + window, UTC)
        ),
    }


# --- report ------------------------------------------------------------------------------------------


def fmt(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_report(result: dict) -> None:
    b = result["docker_baseline"]
    base = b["median"]
    print(f"machine: {result['machine']}")
    print(f"date: {result['date']}   commit: {result['commit']}")
    print(f"cluster: {result['cluster']}")
    print(
        f"baseline: docker run --rm {b['image']} true, {b['n']} runs: median {fmt(base, 3)} s "
        f"(min {fmt(b['min'], 3)}, p95 {fmt(b['p95'], 3)}, max {fmt(b['max'], 3)})"
    )
    p = result["parse"]
    print(
        f"DAG parse, argusic_cycle.py: DagBag fill in a fresh process, {p['dagbag']['n']} runs: median "
        f"{fmt(p['dagbag']['median'], 3)} s (min {fmt(p['dagbag']['min'], 3)}, "
        f"max {fmt(p['dagbag']['max'], 3)})"
    )
    dp = p["dag_processor"]
    if dp["n"]:
        print(
            f"DAG parse, argusic_cycle.py: the dag-processor's stats, {dp['n']} parses during the benchmark: "
            f"median {fmt(dp['median'], 2)} s, max {fmt(dp['max'], 2)} s (first {fmt(dp['first'], 2)} s)"
        )
    for s in result["sizes"]:
        print()
        if "error" in s:
            print(f"== {s['size']} mapped attempts: NOT MEASURED: {s['error']}")
            continue
        print(f"== {s['size']} mapped attempts (run {s['run_id']}) ==")
        bm = s["before_mapped_phase"]
        print(
            f"before the mapped phase: prepare_pool {fmt(bm['prepare_pool_seconds'], 1)} s, plan "
            f"{fmt(bm['plan_seconds'], 1)} s (specs written to the runs store)"
        )
        state = (
            "all finished"
            if s["complete"]
            else (
                f"ABORTED: {s['aborted']}"
                if s["aborted"]
                else f"bounded at {s['bound_seconds'] / 60:.0f} min"
            )
        )
        print(
            f"mapped instances created: {s['mapped_created']}; finished stand-ins measured: "
            f"{s['finished_in_window']} in {fmt(s['window_seconds'], 1)} s from the end of plan ({state})"
        )
        print(f"plan end -> first stand-in started: {fmt(s['plan_end_to_first_start_seconds'])} s")
        mid = s["throughput_middle_80pct"]
        print(
            f"scheduler throughput: {fmt(s['throughput_per_second'], 3)} mapped TI/s over the window; "
            f"{fmt(mid.get('per_second'), 3)} TI/s over the middle 80% of them"
        )
        for key, what in (
            ("queued_to_end", "queued -> end"),
            ("queued_to_start", "queued -> start"),
            ("start_to_end", "start -> end (task)"),
        ):
            v = s[key]
            ratio = f"{v['median'] / base:.2f}x" if v["median"] is not None and base else "-"
            print(
                f"  {what:22s}: median {fmt(v['median'])} s, p95 {fmt(v['p95'])} s   "
                f"(median / docker run = {ratio})"
            )
        if s["slot_seconds_per_attempt"]:
            print(
                f"  worker slot-seconds per attempt: {fmt(s['slot_seconds_per_attempt'])} s "
                f"({s['attempt_slots']} slots x window / finished; "
                f"{s['slot_seconds_per_attempt'] / base:.2f}x docker run)"
            )
        print(f"  by worker: {s['by_worker']}")
        c = s["cpu"]
        share = c["cluster_seconds"] / c["wall_seconds"] if c["wall_seconds"] else 0
        print(
            f"  CPU during the window ({c['wall_seconds']} s wall, {c['cores']} cores): "
            f"cluster {c['cluster_seconds']} CPU-s ({share:.2f} cores), "
            f"whole machine {c['machine_busy_seconds']} of {c['machine_total_seconds']} "
            f"CPU-s; load average at the end {' '.join(c['loadavg_at_end'])}"
        )
        print("  by component (CPU-s): " + ", ".join(f"{k} {v}" for k, v in c["by_component"].items()))
        api = s["execution_api"]
        if api["total"] and s["finished_in_window"]:
            print(
                f"  Execution API requests in the window: {api['total']} "
                f"({api['total'] / s['finished_in_window']:.1f} per finished attempt): "
                + ", ".join(f"{k} {v['n']} (median {v['median_ms']} ms)" for k, v in api["by_kind"].items())
            )
        if s["finished_in_window"]:
            print(
                f"  CPU-s per finished attempt: {c['cluster_seconds'] / s['finished_in_window']:.2f} "
                f"(scheduler {c['by_component'].get('scheduler', 0) / s['finished_in_window']:.3f}, "
                f"api-server {c['by_component'].get('api-server', 0) / s['finished_in_window']:.3f}, "
                f"postgres {c['by_component'].get('postgres', 0) / s['finished_in_window']:.3f})"
            )


def git_commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    mem = int(Path("/proc/meminfo").read_text().split()[1]) // (1024 * 1024)
    return f"{os.uname().nodename}, {os.cpu_count()} cores ({model}), {mem} GiB RAM, {os.uname().release}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1200,11007", help="mapped attempts per run, comma-separated")
    parser.add_argument("--max-minutes", type=float, default=15.0, help="bound of each mapped phase")
    parser.add_argument(
        "--attempt-concurrency", type=int, default=4, help="slots per attempt worker (own cluster)"
    )
    parser.add_argument("--docker-repeat", type=int, default=10)
    parser.add_argument("--plan-timeout", type=float, default=1200.0, help="seconds for prepare_pool + plan")
    parser.add_argument(
        "--cluster",
        type=Path,
        default=None,
        help=f"state folder of a running cluster (its workers started with {STANDIN_ENV}=1 and "
        "ARGUSIC_REPO_ROOTS including --work); default: start one, stop it at the end",
    )
    parser.add_argument("--work", type=Path, default=None, help="folder for the catalogue (and the cluster)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    work = args.work or Path(tempfile.mkdtemp(prefix="argusic-bench-sched-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # Postgres runs as its own user: it must reach its data folder inside
    cluster = (
        Cluster(args.cluster.resolve(), owned=False)
        if args.cluster
        else Cluster(work / "cluster", owned=True)
    )
    result: dict = {
        "machine": machine(),
        "date": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "commit": git_commit(),
    }
    try:
        (work / "catalogue").mkdir(exist_ok=True)
        projects = max(sizes) // 3
        established = round(projects * 0.8)
        catalogue = _synthetic_catalogue(
            work / "catalogue" / "catalogue.json", established, projects - established
        )
        if cluster.owned:
            extra = {
                STANDIN_ENV: "1",
                "ARGUSIC_REPO_ROOTS": str(work / "catalogue"),
                "ARGUSIC_CLUSTER_ATTEMPT_CONCURRENCY": str(args.attempt_concurrency),
                "ARGUSIC_CLUSTER_API_PORT": str(free_port()),
                "ARGUSIC_CLUSTER_PG_PORT": str(free_port()),
                "ARGUSIC_CLUSTER_REDIS_PORT": str(free_port()),
                "ARGUSIC_CLUSTER_S3_PORT": str(free_port()),
            }
            say(f"starting the cluster in {cluster.folder}")
            seconds = cluster.start(extra)
            result["cluster"] = (
                f"started by the benchmark in {seconds:.0f} s: 2 attempt workers x "
                f"{args.attempt_concurrency} slots, {STANDIN_ENV}=1"
            )
        else:
            result["cluster"] = f"the running cluster in {cluster.folder}"
        api = BenchApi(cluster.base_url, cluster.admin_password())
        from airflow_screenshots import wait_for_dag

        wait_for_dag(api)
        api.unpause()
        say(f"baseline: docker run --rm {runner_image()} true x {args.docker_repeat}")
        result["docker_baseline"] = docker_baseline(args.docker_repeat)
        db = cluster.db()
        result["parse"] = {"dagbag": dagbag_parse_seconds(work)}
        result["sizes"] = []
        for size in sizes:
            try:
                result["sizes"].append(measure_size(api, cluster, db, size, catalogue, args))
                say(
                    f"size {size}: {json.dumps(result['sizes'][-1], default=str)}"
                )  # kept if a later one dies
            except (RuntimeError, TimeoutError, psycopg2.Error, requests.RequestException) as err:
                say(f"size {size}: not measured: {err}")
                result["sizes"].append({"size": size, "error": str(err)[:2000]})
        durations = [d for _, d in cluster.dag_processor_durations()]
        result["parse"]["dag_processor"] = {
            **summary(durations),
            "first": durations[0] if durations else None,
        }
    finally:
        if cluster.owned:
            say("stopping the cluster")
            cluster.stop()
        if not args.keep and not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print_report(result)
    print(MARK + json.dumps(result, default=str))


if __name__ == "__main__":
    main()
