"""Benchmark stand-in attempts (argusic.orchestration.bench_standin) and scripts/bench_scheduling.py.

The switch must act only with both keys (the worker's variable and a `-bench` cycle), and be refused
otherwise: unit tests here, then the real attempt task body under `dag.test()` both ways, then a
smoke run of the benchmark at a tiny size on the cluster every cluster test shares
(tests/ops/test_cluster_cycle.py). No timing is asserted anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argusic.orchestration.bench_standin import (
    STANDIN_ENV,
    STANDIN_LABEL,
    StandinRefused,
    is_bench_cycle,
    standin_for,
    standin_requested,
)
from test_dags import _synthetic_catalogue, airflow_db, dag_test, env_for  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@RESULT@@"


# --- the switch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "0"])
def test_switch_off_runs_every_attempt_for_real(value) -> None:
    env = {} if value is None else {STANDIN_ENV: value}
    assert standin_requested(env) is False
    assert standin_for("2026-12-sched-bench", "x.a1", env) is False  # a bench cycle too: real attempts
    assert standin_for("2026-12", "x.a1", env) is False


def test_switch_on_with_a_bench_cycle_stands_in() -> None:
    env = {STANDIN_ENV: "1"}
    assert standin_requested(env) is True
    assert standin_for("2026-12-sched-bench", "2026-12-sched-bench.board.r.p.a1", env) is True


@pytest.mark.parametrize(
    "cycle_id", ["2026-12", "2026-12-demo", "2026-12-bench-real", "2026-12-benchmark", "-bench"]
)
def test_switch_on_with_any_other_cycle_is_refused(cycle_id: str) -> None:
    with pytest.raises(StandinRefused) as refused:
        standin_for(cycle_id, f"{cycle_id}.board.readme-runner.p1.a2", {STANDIN_ENV: "1"})
    message = str(refused.value)
    assert STANDIN_ENV in message and repr(cycle_id) in message and "-bench" in message
    assert f"{cycle_id}.board.readme-runner.p1.a2" in message  # names the attempt


@pytest.mark.parametrize("value", ["yes", "true", "2", " 1", "on"])
def test_switch_with_another_value_is_refused(value: str) -> None:
    with pytest.raises(StandinRefused, match=STANDIN_ENV):
        standin_requested({STANDIN_ENV: value})
    with pytest.raises(StandinRefused):
        standin_for("2026-12-sched-bench", "x.a1", {STANDIN_ENV: value})  # not even for a bench cycle


def test_switch_reads_the_process_environment(monkeypatch) -> None:
    monkeypatch.delenv(STANDIN_ENV, raising=False)
    assert standin_requested() is False
    monkeypatch.setenv(STANDIN_ENV, "1")
    assert standin_requested() is True
    with pytest.raises(StandinRefused):
        standin_for("2026-12", "x.a1")


def test_bench_cycle_ids() -> None:
    assert is_bench_cycle("2026-12-bench") and is_bench_cycle("2026-12-s1200-211500-bench")
    assert (
        not is_bench_cycle("2026-12") and not is_bench_cycle("-bench") and not is_bench_cycle("2026-12-Bench")
    )


# --- the attempt task body, under dag.test() -----------------------------------------------------------


def _records(runs: Path) -> list[Path]:
    return sorted(runs.rglob("run_record.json")) if runs.exists() else []


@pytest.mark.slow
def test_attempt_task_stands_in_only_in_a_bench_cycle(airflow_db, tmp_path) -> None:  # noqa: F811
    """Switch on: a `-bench` cycle's attempts end at once as stand-ins (no record; ingest then fails),
    any other cycle's attempt task fails on its first try naming the switch, having run nothing."""
    catalogue = _synthetic_catalogue(tmp_path / "catalogue.json", established=4, recent=1)
    base = {"catalogue": str(catalogue), "pool_size": 2, "agents": ["readme-runner"]}
    runs = []
    for cycle_id in ("2026-12-standin-bench", "2026-12-standin"):
        runs.append(
            {
                "dag_id": "argusic_cycle",
                "conf": {**base, "cycle_id": cycle_id},
                # what follows ingest needs a person or a board: not under test here
                "mark_success_pattern": "build|prepare_publication|approve_publication|publish",
            }
        )
    env = env_for(
        airflow_db,
        tmp_path,
        ARGUSIC_REPO_ROOTS=str(tmp_path),
        # were the switch ignored, the attempts would run in Docker and leave records (`local` is
        # refused for a cycle that is not a demo, so the plan pins Docker's runner image)
        ARGUSIC_EXECUTOR="docker",
        **{STANDIN_ENV: "1"},
    )
    bench, real = dag_test(env, runs)

    mapped = [t for t in bench["tis"] if t["task_id"] == "run_attempt"]
    assert len(mapped) == 6
    assert {(t["state"], t["label"], t["try"]) for t in mapped} == {("success", STANDIN_LABEL, 1)}
    assert [t["state"] for t in bench["tis"] if t["task_id"] == "ingest"] == ["failed"]  # nothing to load
    # the tally counts, it never fails: stand-ins leave no record, and it says so
    tally = [(t["state"], t["label"]) for t in bench["tis"] if t["task_id"] == "tally"]
    assert tally == [("success", "6 attempts: 0 pass · 0 fail · 0 timeout · 0 invalid · 6 without a record")]
    assert bench["state"] == "failed"

    mapped = [t for t in real["tis"] if t["task_id"] == "run_attempt"]
    assert len(mapped) == 6
    assert {(t["state"], t["try"]) for t in mapped} == {("failed", 1)}  # refused at once, never retried
    # failed attempt tasks do not stop the tally: they are counted as without a record
    tally = [(t["state"], t["label"]) for t in real["tis"] if t["task_id"] == "tally"]
    assert tally == [("success", "6 attempts: 0 pass · 0 fail · 0 timeout · 0 invalid · 6 without a record")]
    assert real["state"] == "failed"
    assert _records(tmp_path / "runs") == []  # neither cycle measured or recorded anything


# --- the benchmark script --------------------------------------------------------------------------------


def check_smoke_result(stdout: str) -> None:
    """What a smoke run of the benchmark (12 mapped stand-ins, 4 projects x 3, two baseline `docker
    run`s) must report: all measured, on the attempt workers only. The run itself is in
    tests/ops/test_cluster_cycle.py, on the cluster every cluster test shares (`--cluster`)."""
    result = json.loads(next(x for x in stdout.splitlines() if x.startswith(MARK))[len(MARK) :])
    (size,) = result["sizes"]
    assert size["size"] == 12 and size["mapped_created"] == 12
    assert size["complete"] and size["aborted"] is None
    assert size["finished_in_window"] == 12
    assert size["queued_to_end"]["n"] == 12 and size["start_to_end"]["n"] == 12
    assert size["throughput_per_second"] > 0
    assert size["execution_api"]["by_kind"]["PATCH task-instances/state"]["n"] >= 12  # each one's end
    assert set(size["by_worker"]) <= {"attempts-1", "attempts-2"} and sum(size["by_worker"].values()) == 12
    assert result["docker_baseline"]["n"] == 2 and result["docker_baseline"]["median"] > 0
    assert result["parse"]["dagbag"]["n"] >= 1
    assert "scheduler throughput:" in stdout and "median / docker run" in stdout
