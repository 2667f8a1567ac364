"""Trigger to approval: the demo cycle through Airflow (the UI's services, LocalExecutor) against the CLI.

What runs, in one temporary folder (nothing of yours is touched), both on the same demo forge:

1. the CLI: `argusic cycle run` of a cycle `<cycle>-cli` (demo budgets, --workers as given), timed
   from start to exit (it stops after the build: the board is ready for approval);
2. Airflow as ops run it: scripts/airflow_ui.sh --detach (API server, scheduler with the
   LocalExecutor of scripts/airflow_env.sh, DAG processor, triggerer), `argusic_cycle` unpaused and
   triggered over the REST API with the documented demo params for cycle `<cycle>`, watched every
   2 s (each poll costs the API server CPU the cycle competes for) until `approve_publication` is
   *awaiting input* (trigger → approval-ready), then stopped.

Printed: both wall times and their ratio; per attempt, the Airflow task's start→end against the
container's own start→end (the run record's started_at/ended_at, reruns included), the difference
(overhead) median and max, and the same for the CLI (its attempt workers' wall per attempt is not
recorded, so only the records' durations, for reference); when each Airflow task phase ended after
the trigger (pool, plan, last attempt, ingest, build, prepare); the CPU-seconds the Airflow services
used (their process groups, children included) and the machine's load. The machine is shared: read
ratios and CPU-seconds, not absolute wall times. No assertion: a measurement.

Usage: .venv/bin/python scripts/bench_cycle_airflow.py [--pool-size 8] [--workers 2] [--skip-cli]
           [--work DIR] [--keep]
Last line: `@@RESULT@@{json}` with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from airflow_screenshots import Api, environment, free_port, wait_for_dag  # noqa: E402

BIN = Path(sys.executable).parent
DAG = "argusic_cycle"
MARK = "@@RESULT@@"
CLK_TCK = os.sysconf("SC_CLK_TCK")
DEMO_SCALE = 1 / 360  # what `demo: true` means (docs/airflow.md)


def say(text: str) -> None:
    print(f"[bench] {datetime.now(UTC):%H:%M:%S} {text}", file=sys.stderr, flush=True)


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def container_seconds(runs: Path, cycle: str, attempt_id: str) -> float | None:
    """The container's own time of an attempt: its run records' ended_at - started_at (reruns too)."""
    total, found = 0.0, False
    for record in sorted((runs / cycle).glob(f"{attempt_id}*/run_record.json")):
        name = record.parent.name
        if name != attempt_id and not name.startswith(f"{attempt_id}.r"):
            continue
        data = json.loads(record.read_text())
        total += (parse_time(data["ended_at"]) - parse_time(data["started_at"])).total_seconds()
        found = True
    return total if found else None


def group_cpu_seconds(pids: list[int]) -> float:
    """CPU-seconds of every live process in the process groups of `pids` (utime+stime, plus the
    children they reaped: cutime+cstime)."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pgrp = int(fields[2])
        if pgrp in pids:
            total += sum(int(f) for f in fields[11:15])
    return total / CLK_TCK


def summary(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
        "min": round(min(values), 2),
    }


def run_cli(env: dict[str, str], work: Path, cycle: str, pool_size: int, workers: int) -> dict:
    from argusic.sources.forge import build_forge

    cli_env = env | {
        "ARGUSIC_RUNS_DIR": str(work / "cli" / "runs"),
        "ARGUSIC_WAREHOUSE": str(work / "cli" / "warehouse" / "argusic.duckdb"),
        "ARGUSIC_EVIDENCE_URL": (work / "cli" / "evidence_store").as_uri(),
        "ARGUSIC_PUBLISH_DIR": str(work / "cli" / "published"),
    }
    catalogue = build_forge(Path(env["ARGUSIC_FORGE_DIR"]))
    cmd = [
        str(BIN / "argusic"), "cycle", "run", "--catalogue", str(catalogue), "--cycle", cycle,
        "--agents", "readme-runner", "--budget-scale", repr(DEMO_SCALE), "--pool-size", str(pool_size),
        "--workers", str(workers),
    ]  # fmt: skip
    say(f"CLI: {' '.join(cmd[1:])}")
    before = os.times()
    started = time.monotonic()
    done = subprocess.run(cmd, env=cli_env, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    after = os.times()
    if done.returncode != 0:
        raise RuntimeError(
            f"argusic cycle run: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    runs = Path(cli_env["ARGUSIC_RUNS_DIR"])
    durations = []
    for record in (runs / cycle).glob("*/run_record.json"):
        data = json.loads(record.read_text())
        durations.append((parse_time(data["ended_at"]) - parse_time(data["started_at"])).total_seconds())
    return {
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(
            after.children_user + after.children_system - before.children_user - before.children_system, 1
        ),
        "records": len(durations),
        "container_seconds": summary(durations),
        "container_seconds_total": round(sum(durations), 1),
    }


class Airflow:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.run_dir = Path(env["AIRFLOW_HOME"]) / "ui"

    def start(self) -> Api:
        say("starting Airflow (scripts/airflow_ui.sh --detach)")
        subprocess.run(
            ["bash", str(ROOT / "scripts" / "airflow_ui.sh"), "--detach"],
            env=self.env,
            check=True,
            timeout=900,
        )
        password = json.loads(
            Path(self.env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]).read_text()
        )["admin"]
        api = Api(f"http://127.0.0.1:{self.env['AIRFLOW_UI_PORT']}", password)
        wait_for_dag(api)
        return api

    def pids(self) -> list[int]:
        return [int(p.read_text()) for p in self.run_dir.glob("*.pid")]

    def stop(self) -> None:
        subprocess.run(["bash", str(ROOT / "scripts" / "airflow_ui.sh"), "--stop"], env=self.env, timeout=120)


def run_airflow(env: dict[str, str], cycle: str, pool_size: int, poll: float = 2.0) -> dict:
    airflow = Airflow(env)
    api = airflow.start()
    try:
        api.session.patch(
            f"{api.base}/api/v2/dags/{DAG}", json={"is_paused": False}, timeout=30
        ).raise_for_status()
        run_id = f"cycle__{cycle}__{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
        conf = {"cycle_id": cycle, "demo": True, "pool_size": pool_size}
        time.sleep(5)  # let the services settle after start-up (the health check passes before that)
        cpu_before = group_cpu_seconds(airflow.pids())
        load_before = os.getloadavg()
        say(f"trigger {run_id} {json.dumps(conf)}")
        started = time.monotonic()
        triggered_at = datetime.now(UTC)
        api.session.post(
            f"{api.base}/api/v2/dags/{DAG}/dagRuns",
            json={"dag_run_id": run_id, "logical_date": None, "conf": conf},
            timeout=60,
        ).raise_for_status()
        ready = None
        ended: dict[str, float] = {}
        while time.monotonic() - started < 1800:
            tis = api.task_instances(run_id)
            now = time.monotonic() - started
            attempts_done = all(
                t["state"] in ("success", "skipped", "failed") for t in tis if t["task_id"] == "run_attempt"
            )
            for ti in tis:
                done = ti["state"] in ("success", "skipped", "failed")
                if done and ti["task_id"] not in ended and (ti["task_id"] != "run_attempt" or attempts_done):
                    ended[ti["task_id"]] = round(now, 1)
            states = {t["task_id"]: t["state"] for t in tis}
            if states.get("approve_publication") == "awaiting_input":
                ready = now
                break
            if any(t["state"] in ("failed", "upstream_failed") for t in tis):
                raise RuntimeError(f"the run failed: {states}")
            time.sleep(poll)
        if ready is None:
            raise TimeoutError("approve_publication never waited")
        cpu = group_cpu_seconds(airflow.pids()) - cpu_before
        say(f"approval-ready after {ready:.1f} s")
        tis = api.task_instances(run_id)
        quoted = urllib.parse.quote(run_id, safe="")
        plan = api.get(f"/dags/{DAG}/dagRuns/{quoted}/taskInstances/plan/xcomEntries/return_value")["value"]
        if isinstance(plan, str):
            plan = json.loads(plan)
        from argusic.core.spec import read_spec  # after the ARGUSIC_* folders are set (main)

        runs = Path(env["ARGUSIC_RUNS_DIR"])
        attempts, overheads, queued_waits = [], [], []
        for ti in tis:
            if ti["task_id"] != "run_attempt":
                continue
            attempt_id = read_spec(plan[ti["map_index"]]).attempt_id
            task = (parse_time(ti["end_date"]) - parse_time(ti["start_date"])).total_seconds()
            own = container_seconds(runs, cycle, attempt_id)
            row = {
                "map_index": ti["map_index"],
                "label": ti.get("rendered_map_index"),
                "task_seconds": round(task, 2),
            }
            if own is not None:
                row |= {"container_seconds": round(own, 2), "overhead_seconds": round(task - own, 2)}
                overheads.append(task - own)
            if ti.get("queued_when"):
                wait = (parse_time(ti["start_date"]) - parse_time(ti["queued_when"])).total_seconds()
                row["queued_to_start_seconds"] = round(wait, 2)
                queued_waits.append(wait)
            attempts.append(row)
        return {
            "run_id": run_id,
            "triggered_at": triggered_at.isoformat(),
            "trigger_to_approval_seconds": round(ready, 1),
            "phase_ended_after_seconds": ended,
            "attempt_tasks": len(attempts),
            "overhead_seconds": summary(overheads),
            "queued_to_start_seconds": summary(queued_waits),
            "airflow_cpu_seconds": round(cpu, 1),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "attempts": sorted(attempts, key=lambda r: r["map_index"]),
        }
    finally:
        airflow.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool-size", type=int, default=8, help="projects (8: the demo's 24 attempts)")
    parser.add_argument("--workers", type=int, default=2, help="the CLI's attempts side by side")
    parser.add_argument("--cycle", default="2026-12-bench")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--work", type=Path, help="state folder (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the state folder")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="argusic-bench-cycle-"))
    env = environment(work, free_port())
    os.environ.update({k: v for k, v in env.items() if k.startswith("ARGUSIC_")})
    result: dict = {"pool_size": args.pool_size, "work": str(work)}
    try:
        if not args.skip_cli:
            result["cli"] = run_cli(env, work, f"{args.cycle}-cli", args.pool_size, args.workers)
            say(f"CLI: {result['cli']['wall_seconds']} s")
        result["airflow"] = run_airflow(env, args.cycle, args.pool_size)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    air = result["airflow"]
    print(
        f"Airflow trigger → approval-ready: {air['trigger_to_approval_seconds']} s "
        f"({air['attempt_tasks']} attempt tasks; Airflow services used {air['airflow_cpu_seconds']} CPU-s)"
    )
    print(f"  phases ended after (s): {air['phase_ended_after_seconds']}")
    over = air["overhead_seconds"]
    print(
        f"  per-attempt overhead (task start→end minus the container's own time): median "
        f"{over.get('median')} s, max {over.get('max')} s; queued→start median "
        f"{air['queued_to_start_seconds'].get('median')} s"
    )
    if "cli" in result:
        cli = result["cli"]
        result["ratio_airflow_to_cli"] = round(air["trigger_to_approval_seconds"] / cli["wall_seconds"], 2)
        print(
            f"CLI `argusic cycle run` (same cycle size, {args.workers} workers) to approval-ready: "
            f"{cli['wall_seconds']} s, {cli['cpu_seconds']} CPU-s; ratio Airflow / CLI "
            f"{result['ratio_airflow_to_cli']}"
        )
    print(MARK + json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
