"""`dag.test()` of argusic_verdicts end to end: real Docker attempts of the demo forge's fixture
projects, real DuckDB and dbt, in rounds until nothing is pending; then the same run again does
nothing. Airflow runs in a subprocess (tests/orchestration/test_dags.py explains why)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_dags import airflow_db, dag_test, env_for, forge, states  # noqa: F401  (fixtures)

CYCLE = "2026-12-vd"
STD, OTHER = "readme-runner", "readme-runner-norecover"


def _pool(catalogue_path: Path, folder: Path, projects: list[str]) -> Path:
    from argusic.sources.pool import Pool, PoolEntry

    catalogue = {c["project_id"]: c for c in json.loads(catalogue_path.read_text())["candidates"]}
    entries = [
        PoolEntry(project_id=p, repo_url=catalogue[p]["repo_url"], commit=catalogue[p]["commit"],
                  language=catalogue[p]["language"], difficulty=catalogue[p]["difficulty"], tier="standard",
                  visibility="public")
        for p in projects
    ]  # fmt: skip
    pool = Pool(cycle_id=CYCLE, cycle_starts="2026-12-01", cycle_ends="2026-12-31",
                catalogue_sha256="0" * 64, entries=entries, excluded={})  # fmt: skip
    path = folder / "pool.json"
    path.write_text(pool.model_dump_json(by_alias=True))
    return path


def vid(agent: str, project: str, n: int) -> str:
    return f"{CYCLE}.verdict.{agent}.{project}.a{n}"


@pytest.mark.slow
@pytest.mark.docker
def test_verdicts_dag_runs_rounds_until_settled_then_does_nothing(airflow_db, forge, tmp_path) -> None:  # noqa: F811
    from argusic.sandbox.executor import docker_available

    if not docker_available():
        pytest.skip("no Docker daemon")
    env = env_for(airflow_db, tmp_path, ARGUSIC_EXECUTOR="docker", ARGUSIC_REPO_ROOTS=str(forge.parent))
    # readme-runner: tonegen-sh passes for real, weatherfetch with mocks, csvstats fails to run.
    pool = _pool(forge, tmp_path, ["tonegen-sh", "weatherfetch", "csvstats"])
    conf = {
        "cycle_id": CYCLE,
        "pool": str(pool),
        "demo": True,
        "stronger_agent": OTHER,
        "note": "the maintainer says it runs",
    }
    first, second = dag_test(env, [{"dag_id": "argusic_verdicts", "conf": conf}] * 2, timeout=1200)

    assert first["state"] == "success", [t for t in first["tis"] if t["state"] != "success"]
    labels = {
        n: sorted(t["label"] for t in first["tis"] if t["task_id"] == f"run_attempt_{n}") for n in (1, 2, 3)
    }
    # round 1: the standard agent once on each project; round 2: once more where it failed; round 3:
    # the requested agent where the standard agent could not verify; round 4: nothing pending.
    assert [x.split(" · ")[0] for x in labels[1]] == [
        f"{STD} / csvstats / attempt 1",
        f"{STD} / tonegen-sh / attempt 1",
        f"{STD} / weatherfetch / attempt 1",
    ], labels
    assert [x.split(" · ")[0] for x in labels[2]] == [f"{STD} / csvstats / attempt 2"], labels
    assert [x.split(" · ")[0] for x in labels[3]] == [f"{OTHER} / csvstats / attempt 1"], labels
    assert all(" · ✓ " in x or " · ✗ " in x for xs in labels.values() for x in xs), labels
    assert states(first, "plan_4") == ["skipped"]
    assert states(first, "ingest_4") == ["skipped"] and states(first, "build_4") == ["skipped"]
    assert states(first, "verdicts") == ["success"]

    runs = tmp_path / "runs" / CYCLE
    measured = {p.parent.name for p in runs.rglob("run_record.json")}
    assert measured == {
        vid(STD, "tonegen-sh", 1), vid(STD, "weatherfetch", 1), vid(STD, "csvstats", 1),
        vid(STD, "csvstats", 2), vid(OTHER, "csvstats", 1),
    }  # fmt: skip
    said = next(x["value"] for x in first["xcom"] if x["task_id"] == "verdicts")
    text = "\n".join(said)
    assert "tonegen-sh @ " in text and f": runs, verified by {STD} ({vid(STD, 'tonegen-sh', 1)})" in text
    assert f": runs_with_mocks, verified by {STD} ({vid(STD, 'weatherfetch', 1)})" in text
    assert (
        "csvstats @ " in text and ": could_not_verify; 2 complete standard-agent attempt(s), 3 valid" in text
    )

    import duckdb

    with duckdb.connect(env["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        loaded = con.execute("SELECT count(*) FROM raw.run_records WHERE purpose = 'verdict'").fetchone()[0]
        asked = con.execute("SELECT project_id, agent_id, decided_by, note FROM decisions.verdict_requests "
                            "ORDER BY project_id").fetchall()  # fmt: skip
    assert loaded == 5
    # who asked: the user who triggered the run (dag.test() triggers as "dag_test"); why: the note
    assert asked == [(p, OTHER, "dag_test", "the maintainer says it runs")
                     for p in ("csvstats", "tonegen-sh", "weatherfetch")]  # fmt: skip

    # The same run again: nothing pending, so nothing planned, run or loaded.
    assert second["state"] == "success", second
    assert states(second, "plan_1") == ["skipped"]
    assert not [
        t for t in second["tis"] if t["task_id"].startswith("run_attempt_") and t["state"] == "success"
    ]
    assert {p.parent.name for p in runs.rglob("run_record.json")} == measured
    with duckdb.connect(env["ARGUSIC_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0] == 5
