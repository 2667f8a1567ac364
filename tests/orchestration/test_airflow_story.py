"""What the Airflow side tells people (no Airflow import): run ids that carry the cycle, labels of
attempts that have not started, configuration errors that say how to go on, the records a run's
ingest loads, and the cause of the `leaked semaphore` lines at the end of a build task."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from argusic.core.layout import attempt_dir
from argusic.core.spec import AttemptSpec, label_of_attempt_id
from argusic.cycle.ids import ConfigurationError, cycle_id_of_run, cycle_of_run_id, run_id_for
from argusic.cycle.plan import require_scaled_budgets_on_the_forge, write_plan
from argusic.cycle.pools import resolve_pool
from argusic.cycle.run import measured_records, records_of_plan
from argusic.sources.pool import CatalogueError
from conftest import write_record
from test_dags import _synthetic_catalogue


def test_run_ids_carry_the_cycle_and_name_it_when_the_param_is_empty() -> None:
    run_id = run_id_for("2026-12-ui", datetime(2026, 12, 1, 12, 0, 5, tzinfo=UTC))
    assert run_id == "cycle__2026-12-ui__20261201T120005Z"
    assert cycle_of_run_id(run_id) == "2026-12-ui"
    assert cycle_of_run_id("manual__2026-12-01T12:00:00+00:00") is None
    day = date(2027, 3, 9)
    assert cycle_id_of_run(None, run_id, day) == "2026-12-ui"
    assert cycle_id_of_run("2026-12-ui", run_id, day) == "2026-12-ui"
    assert cycle_id_of_run(None, "manual__2027-03-09", day) == "2027-03"
    with pytest.raises(ConfigurationError, match="names cycle 2026-12-ui but the param cycle_id is '2027-0"):
        cycle_id_of_run("2027-01", run_id, day)
    with pytest.raises(ConfigurationError, match="YYYY-MM"):
        cycle_id_of_run(None, "cycle__december__x", day)


def test_labels_from_attempt_ids_match_the_specs() -> None:
    spec = AttemptSpec(
        cycle_id="2026-12-demo", agent_id="readme-runner", project_id="banner-sh", repo_url="/r",
        commit="0" * 40, tier="standard", attempt_no=3,
    )  # fmt: skip
    assert label_of_attempt_id(spec.attempt_id) == spec.label == "readme-runner / banner-sh / attempt 3"
    assert label_of_attempt_id(spec.rerun().attempt_id) == spec.rerun().label
    assert label_of_attempt_id("not-an-attempt-id") == "not-an-attempt-id"


def test_a_different_pool_for_a_recorded_cycle_says_which_pool_and_how_on(isolated, monkeypatch) -> None:
    monkeypatch.setenv("ARGUSIC_REPO_ROOTS", str(isolated))
    catalogue = _synthetic_catalogue(isolated / "catalogue.json", established=8, recent=2)
    recorded = resolve_pool("2026-12", catalogue=str(catalogue), size=10)
    assert resolve_pool("2026-12", catalogue=str(catalogue), size=10) == recorded  # the same ask: fine
    assert resolve_pool("2026-12") == recorded  # nothing asked: the recorded pool
    with pytest.raises(CatalogueError) as refused:
        resolve_pool("2026-12", catalogue=str(catalogue), size=5)
    message = str(refused.value)
    assert f"cycle 2026-12 already has a pool: {recorded}" in message
    assert "10 projects: p00000" in message and "pool_size 5" in message
    assert "leave pool_size and catalogue empty" in message
    assert "new cycle id for another pool (e.g. 2026-12-b)" in message
    other = isolated / "other.json"
    other.write_text(catalogue.read_text().replace('"python"', '"rust"'))
    with pytest.raises(CatalogueError, match="asks for catalogue .*other.json"):
        resolve_pool("2026-12", catalogue=str(other))
    with pytest.raises(CatalogueError, match="no such file"):
        resolve_pool("2027-01", catalogue=str(isolated / "missing.json"))


def test_real_budgets_on_the_demo_forge_are_refused_with_the_fix(isolated) -> None:
    from argusic.core.settings import forge_dir
    from argusic.sources.forge import build_forge

    forge = build_forge(forge_dir())
    pool = resolve_pool("2026-12-f", catalogue=str(forge), size=3)
    with pytest.raises(ConfigurationError, match="set demo: true"):
        require_scaled_budgets_on_the_forge(pool, demo=False, budget_scale=None)
    require_scaled_budgets_on_the_forge(pool, demo=True, budget_scale=None)
    require_scaled_budgets_on_the_forge(pool, demo=False, budget_scale=0.01)


def test_the_default_catalogue_is_the_forge_made_on_first_use(isolated, monkeypatch) -> None:
    monkeypatch.delenv("ARGUSIC_CATALOGUE", raising=False)
    pool = resolve_pool("2026-12-g", size=3)
    assert Path(pool).exists() and (isolated / "forge" / "catalogue.json").exists()


def test_ingest_reads_every_record_of_the_plan_reruns_included(isolated, record_doc, monkeypatch) -> None:
    monkeypatch.setenv("ARGUSIC_REPO_ROOTS", str(isolated))
    catalogue = _synthetic_catalogue(isolated / "catalogue.json", established=4, recent=1)
    pool = resolve_pool("2026-12", catalogue=str(catalogue), size=2)
    specs = write_plan(pool, ["readme-runner"], attempts_per_pair=1)
    from argusic.core.spec import read_spec

    first, second = (read_spec(p) for p in specs)
    write_record(attempt_dir(first), record_doc)
    invalid = dict(record_doc, invalid_reason="harness exited with code 2")
    write_record(attempt_dir(second), invalid)
    assert measured_records(first) == [str(attempt_dir(first) / "run_record.json")]
    assert measured_records(second) is None  # invalid, reruns still due: to resume
    write_record(attempt_dir(second.rerun()), invalid)
    write_record(attempt_dir(second.rerun().rerun()), invalid)
    assert len(measured_records(second)) == 3  # invalid after the bounded reruns: done
    found, missing = records_of_plan(specs)
    assert len(found) == 4 and missing == []
    (attempt_dir(first) / "run_record.json").unlink()
    found, missing = records_of_plan(specs)
    assert missing == [first.label] and len(found) == 3


LEAK = r"""
import atexit, multiprocessing, multiprocessing.util, os, sys
release = sys.argv[1] == "release"
pid = os.fork()  # as Airflow's supervisor starts a task: fork, exit hooks cleared, os._exit
if pid == 0:
    atexit._clear()
    if release:
        from argusic.warehouse.dbt_build import release_semaphores_at_exit
        release_semaphores_at_exit()
    locks = [multiprocessing.get_context("spawn").Lock() for _ in range(2)]  # what dbt makes
    atexit._run_exitfuncs()
    os._exit(0)
os.waitpid(pid, 0)
"""


@pytest.mark.parametrize("mode", ["as-before", "release"])
def test_dbt_style_semaphores_leak_from_a_forked_task_unless_released(mode) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LEAK), mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    leaked = "leaked semaphore" in done.stderr
    assert leaked == (mode == "as-before"), done.stderr


def test_the_retry_delay_is_the_dags_own_unless_set_for_every_dag(monkeypatch) -> None:
    from datetime import timedelta

    from argusic.orchestration.dag_support import RETRY_DELAY_ENV, retry_delay

    monkeypatch.delenv(RETRY_DELAY_ENV, raising=False)
    assert retry_delay(timedelta(minutes=1)) == timedelta(minutes=1)
    monkeypatch.setenv(RETRY_DELAY_ENV, "2")
    assert retry_delay(timedelta(minutes=1)) == timedelta(seconds=2)
    for bad in ("-1", "1.5", "soon", "3601"):
        monkeypatch.setenv(RETRY_DELAY_ENV, bad)
        with pytest.raises(ValueError, match=RETRY_DELAY_ENV):
            retry_delay(timedelta(minutes=1))
