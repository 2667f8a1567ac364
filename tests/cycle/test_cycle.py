"""Cycle steps shared by the DAG and `argusic cycle run`: empty plans and all-invalid runs fail loudly,
budgets scale only on request, and "the latest cycle" is decided by date, not by name."""

from __future__ import annotations

import json
import shutil
from datetime import datetime

import pytest
from argusic.attempts.environment import EnvironmentRefused
from argusic.core.spec import SpecConflict, read_spec
from argusic.cycle.plan import NothingPlanned, write_plan
from argusic.cycle.pools import latest_cycle_of
from argusic.cycle.tally import CycleFailed, tally_records
from argusic.sources.pool import Pool, PoolEntry
from argusic.warehouse.load_runs import ingest_cycle_records
from conftest import write_record


def _pool(tmp_path, n: int = 1):
    entries = [
        PoolEntry(project_id=f"p{i}", repo_url="/r.git", commit="a" * 40, language="c", difficulty="easy",
                  tier="standard", visibility="public")
        for i in range(n)
    ]  # fmt: skip
    pool = Pool(cycle_id="2026-12", cycle_starts="2026-12-01", cycle_ends="2026-12-31",
                catalogue_sha256="0" * 64, entries=entries, excluded={})  # fmt: skip
    path = tmp_path / "pool.json"
    path.write_text(pool.model_dump_json(by_alias=True))
    return path


def test_an_empty_plan_fails_loudly(isolated):
    with pytest.raises(NothingPlanned, match="nothing to plan: 1 project.*0 in shard 3 of 4"):
        write_plan(_pool(isolated), ["readme-runner"], shard_index=3, shard_count=4)


def test_budgets_are_real_unless_scaled_and_a_scaled_plan_is_recorded_as_demo(isolated):
    (real,) = [read_spec(p) for p in write_plan(_pool(isolated), ["readme-runner"], attempts_per_pair=1)]
    assert (real.demo, real.budget_scale) == (False, 1.0)
    # One cycle runs under one set of budgets: its pin refuses a re-plan under scaled ones.
    with pytest.raises(EnvironmentRefused, match="budget_scale: pinned 1.0, now 0.01; demo: pinned False"):
        write_plan(_pool(isolated), ["readme-runner"], attempts_per_pair=1, budget_scale=0.01)
    (isolated / "runs" / "2026-12" / "environment.json").unlink()
    # Without its pin the plan is still there: a spec once written is never replaced, by name.
    with pytest.raises(
        SpecConflict, match=r"1 planned attempt\(s\) already have another spec: 2026-12\.board"
    ):
        write_plan(_pool(isolated), ["readme-runner"], attempts_per_pair=1, budget_scale=0.01)
    shutil.rmtree(isolated / "runs" / "2026-12" / "plan")  # as if the cycle were planned anew
    (scaled,) = [
        read_spec(p)
        for p in write_plan(_pool(isolated), ["readme-runner"], attempts_per_pair=1, budget_scale=0.01)
    ]
    assert (scaled.demo, scaled.budget_scale) == (True, 0.01)
    with pytest.raises(ValueError, match="expected a number in"):
        write_plan(_pool(isolated), ["readme-runner"], budget_scale=1.5)


def _records(isolated, record_doc, invalid: list[str | None]):
    paths = []
    for no, reason in enumerate(invalid, start=1):
        doc = json.loads(json.dumps(record_doc))
        doc["attempt_id"] = f"2026-12.board.readme-runner.wavgen.a{no}"
        doc["attempt_no"] = no
        if reason:
            doc |= {"invalid_reason": reason, "end_reason": "harness_error", "report": None}
        paths.append(str(write_record(isolated / "recs" / str(no), doc)))
    return paths


def test_a_run_with_no_valid_attempt_is_refused_before_loading(isolated, record_doc):
    with pytest.raises(CycleFailed, match="no attempt was run"):
        ingest_cycle_records("2026-12", [])
    paths = _records(isolated, record_doc, ["harness exited with code 3"] * 3)
    with pytest.raises(CycleFailed, match=r"all 3 attempt\(s\) are invalid.*3 × harness exited with code 3"):
        ingest_cycle_records("2026-12", paths)
    assert not (isolated / "warehouse" / "argusic.duckdb").exists()  # nothing loaded
    mixed = _records(isolated, record_doc, [None, "harness exited with code 3", None])
    assert ingest_cycle_records("2026-12", mixed)["inserted"] == 3


def test_a_run_whose_every_attempt_was_cut_in_its_container_is_refused(isolated, record_doc):
    """Cut short inside the container is the container's doing, a measured failure (issue #25) -- but
    when every attempt of the run was cut, it is what they share, our harness: nothing is published
    as the agents' failure. One attempt measured as usual is enough to load the run."""

    def cut(no: int, fault: str | None) -> str:
        doc = json.loads(json.dumps(record_doc))
        doc["attempt_id"] = f"2026-12.board.readme-runner.wavgen.a{no}"
        doc["attempt_no"] = no
        if fault:
            doc |= {"container_fault": fault, "end_reason": "harness_error", "report": None}
        return str(write_record(isolated / "cut" / str(no), doc))

    every = [cut(no, "harness exited with code 137") for no in (1, 2, 3)]
    with pytest.raises(
        CycleFailed, match=r"all 3 attempt\(s\) were cut short.*3 × harness exited with code 137"
    ):
        ingest_cycle_records("2026-12", every)
    assert not (isolated / "warehouse" / "argusic.duckdb").exists()  # nothing loaded
    some = [cut(1, "harness exited with code 137"), cut(2, None), cut(3, None)]
    assert ingest_cycle_records("2026-12", some)["inserted"] == 3


def test_a_rerun_that_became_valid_counts_once_as_valid(isolated, record_doc):
    first = json.loads(json.dumps(record_doc)) | {
        "invalid_reason": "report unreadable", "end_reason": "completed", "report": None,
    }  # fmt: skip
    rerun = json.loads(json.dumps(record_doc)) | {
        "attempt_id": record_doc["attempt_id"] + ".r1", "rerun_of": record_doc["attempt_id"],
    }  # fmt: skip
    tally = tally_records([write_record(isolated / "a", first), write_record(isolated / "b", rerun)])
    assert (tally.planned, tally.valid, tally.invalid, tally.passes) == (1, 1, 0, 1)


def test_latest_cycle_is_by_date_then_last_attempt_not_by_name():
    rows = [
        ("2026-12-demo", datetime(2027, 3, 1)),  # sorts last by name, ran late, but is a December cycle
        ("2027-01", datetime(2027, 1, 20)),
        ("2027-01-trial", datetime(2027, 1, 25)),
        ("2026-11", None),
    ]
    assert latest_cycle_of(rows) == "2027-01-trial"
    assert latest_cycle_of(rows[:2]) == "2027-01"
    assert latest_cycle_of([("2027-02", None), ("2027-01", datetime(2027, 1, 2))]) == "2027-02"


def test_a_plan_names_an_agents_condition_else_the_spec_stays_as_before(isolated):
    """Seed 002 (issue #31): a plan may run an agent's attempts under a named condition (baseline |
    variant | external-<name>); an agent it does not name gets no condition in its spec (the attempt
    records its own: argusic.core.record.default_condition) and that spec's bytes do not change."""
    from argusic.cycle.ids import ConfigurationError
    from argusic.cycle.plan import plan_attempts

    pool = _pool(isolated, 2)
    plain = plan_attempts(pool, ["readme-runner", "claude-code"], attempts_per_pair=1)
    agents = ["readme-runner", "claude-code"]
    named = plan_attempts(pool, agents, 1, conditions={"readme-runner": "variant"})
    assert [(s.agent_id, s.condition) for s in named] == [
        ("readme-runner", "variant"), ("readme-runner", "variant"),
        ("claude-code", None), ("claude-code", None),
    ]  # fmt: skip
    assert [s.model_dump_json() for s in named[2:]] == [s.model_dump_json() for s in plain[2:]]
    assert '"condition":"variant"' in named[0].model_dump_json()
    with pytest.raises(ConfigurationError, match="conditions name agents this plan does not run: codex"):
        plan_attempts(pool, ["readme-runner"], 1, conditions={"codex": "baseline"})
    with pytest.raises(ConfigurationError, match="readme-runner: 'treatment'"):
        plan_attempts(pool, ["readme-runner"], 1, conditions={"readme-runner": "treatment"})
