"""Adaptive project verdicts (METHODOLOGY.md §7) carried out: argusic.workflows.verdicts plans what
marts.verdict_plan asks for, runs it through the one attempt path, loads and builds, round by round.

The walk runs real attempts with the local executor and a scripted harness (the attempt path's own
test double, tests/attempts/test_attempt.py): each attempt's outcome is chosen by its attempt id, so every
branch of the rule is walked on purpose, then the warehouse (real dbt build) says what it decided.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from argusic.sandbox import executor as executor_mod
from argusic.sandbox.executor import LocalExecutor
from argusic.sources.pool import Pool, PoolEntry
from scripted_seal import SEAL_PROLOGUE
from test_executor import make_repo

CYCLE = "2026-12"
STD = "readme-runner"
OTHER = "readme-runner-norecover"  # "a stronger agent": any registered agent but the standard one

# Writes log, recording and a report whose verdict-relevant facts the attempt id chooses
# (VERDICT_OUTCOMES: {attempt_id: full | mock | fail | ours}). "ours": our tooling fails that attempt
# (OurToolingFails, below: the Docker daemon lost), which makes it invalid and rerun -- a crash inside
# the container would be the container's, a measured failure (issue #25). An id it was not told about
# is "ours" too, so an attempt the plan should not have made shows up as an invalid record.
SCRIPTED = (
    SEAL_PROLOGUE
    + r"""
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
_seal_at_exit(out)
attempt = os.environ["ARGUSIC_ATTEMPT_ID"]
mode = json.load(open(os.environ["VERDICT_OUTCOMES"])).get(attempt, "ours")
def write(name, text):
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
write("log.txt", f"attempt {attempt}: {mode}\n")
write("recording.cast", json.dumps({"version": 2, "width": 80, "height": 24}) + '\n[0.1, "o", "hi"]\n')
if mode == "ours":  # OurToolingFails turns this attempt into an executor error
    sys.exit(3)
depth = {"full": "tier1_real", "mock": "tier2_mock", "fail": "tier3_none"}[mode]
write("report.json", json.dumps({
    "install_ok": True, "ran_ok": mode != "fail", "errors_encountered": 0, "errors_fixed": 0,
    "test_depth": depth, "verified_how": "not verified" if mode == "fail" else "decoded 10 frames",
    "final_state": f"{mode}."}))
"""
)


def vid(agent: str, project: str, n: int, rerun: int = 0) -> str:
    return f"{CYCLE}.verdict.{agent}.{project}.a{n}" + (f".r{rerun}" if rerun else "")


OUTCOMES = {
    vid(STD, "full", 1): "full",  # a pass at the first attempt ends it: runs
    vid(STD, "mock", 1): "mock",  # a pass with mocks ends it: runs_with_mocks
    vid(STD, "late", 1): "fail",  # fail, then pass: runs
    vid(STD, "late", 2): "full",
    vid(STD, "never", 1): "fail",  # fail, fail: could_not_verify; then a stronger agent passes
    vid(STD, "never", 2): "fail",
    vid(OTHER, "never", 1): "full",
    vid(STD, "cut", 1): "ours",  # invalid: rerun under its own number, then a fail, then a mock pass
    vid(STD, "cut", 1, 1): "fail",
    vid(STD, "cut", 2): "mock",
    # "broken": our tooling fails every record: invalid after the bounded reruns, never run again
}


@pytest.fixture
def walk(isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    harness = tmp_path / "harness"
    harness.mkdir()
    (harness / "readme_runner.py").write_text(SCRIPTED)
    monkeypatch.setattr(executor_mod, "HARNESS_DIR", harness)
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(tmp_path / "scratch"))
    outcomes = tmp_path / "outcomes.json"
    outcomes.write_text(json.dumps(OUTCOMES))
    monkeypatch.setenv("VERDICT_OUTCOMES", str(outcomes))
    entries = []
    for name in ("full", "mock", "late", "never", "cut", "broken", "other"):
        repo, commit = make_repo(tmp_path, name)
        entries.append(
            PoolEntry(project_id=name, repo_url=str(repo), commit=commit, language="python",
                      difficulty="easy", tier="standard", visibility="public")
        )  # fmt: skip
    pool = Pool(cycle_id=CYCLE, cycle_starts="2026-12-01", cycle_ends="2026-12-31",
                catalogue_sha256="0" * 64, entries=entries, excluded={})  # fmt: skip
    from argusic.core.layout import pool_path_for

    path = pool_path_for(CYCLE)
    path.parent.mkdir(parents=True)
    path.write_text(pool.model_dump_json(by_alias=True))
    return {e.project_id: e.commit for e in entries}


class OurToolingFails(LocalExecutor):
    """The local executor, failing as our tooling would (an executor error) on the attempts OUTCOMES
    marks "ours" or does not name."""

    def run(self, *, attempt_id: str, **kwargs):
        result = super().run(attempt_id=attempt_id, **kwargs)
        if OUTCOMES.get(attempt_id, "ours") == "ours":
            return dataclasses.replace(result, error="the Docker daemon stopped answering")
        return result


def _records(isolated: Path) -> set[str]:
    return {p.parent.name for p in (isolated / "runs").rglob("run_record.json")}


def _verdicts(targets) -> dict[str, tuple]:
    from argusic.workflows.verdicts import verdict_rows

    return {r["project_id"]: (r["verdict"], r["verified_by_agent"], r["verified_by_attempt_id"])
            for r in verdict_rows(targets)}  # fmt: skip


@pytest.mark.slow  # real dbt builds (five), real attempts through the local executor
def test_every_verdict_branch_walked_through_the_attempt_path(isolated, walk):
    from argusic.attempts.run import run_attempt
    from argusic.workflows.verdicts import prepare, read_plan, request_stronger_agent, run_verdicts

    commits = walk
    projects = ["full", "mock", "late", "never", "cut", "broken"]
    targets = prepare(CYCLE, projects=projects)
    assert [p for p, _ in targets.projects] == projects  # "other" is in the pool, not in this run

    # A verdict attempt cut by our tooling before its reruns ran (a worker lost mid-chain): its
    # record is loaded; the plan reruns the same number, the bounded-rerun path continues the chain.
    from argusic.warehouse.load_runs import ingest_records
    from argusic.workflows.verdicts import build

    first = read_plan_spec(targets, "cut")
    ingest_records([str(run_attempt(first, OurToolingFails()))])
    build()
    cut = next(i for i in read_plan(targets).pending if i.spec.project_id == "cut")
    assert (cut.spec.attempt_id, cut.is_rerun) == (vid(STD, "cut", 1), True)
    assert "is invalid (executor error: the Docker daemon stopped answering" in cut.reason

    said: list[str] = []
    run = run_verdicts(targets, demo=True, executor=OurToolingFails(), say=said.append)
    assert run.rounds == 2, said
    assert sorted(run.attempts) == sorted([
        vid(STD, "full", 1), vid(STD, "mock", 1), vid(STD, "late", 1), vid(STD, "never", 1),
        vid(STD, "cut", 1), vid(STD, "broken", 1),  # round 1
        vid(STD, "late", 2), vid(STD, "never", 2), vid(STD, "cut", 2),  # round 2: after a complete fail
    ])  # fmt: skip
    assert any("standard agent, second attempt: one complete attempt without a pass" in s for s in said)
    assert _records(isolated) == set(OUTCOMES) - {vid(OTHER, "never", 1)} | {
        vid(STD, "broken", 1), vid(STD, "broken", 1, 1), vid(STD, "broken", 1, 2),  # max_reruns = 2
    }  # fmt: skip
    assert _verdicts(targets) == {
        "full": ("runs", STD, vid(STD, "full", 1)),
        "mock": ("runs_with_mocks", STD, vid(STD, "mock", 1)),
        "late": ("runs", STD, vid(STD, "late", 2)),
        "never": ("could_not_verify", None, None),
        "cut": ("runs_with_mocks", STD, vid(STD, "cut", 2)),
        "broken": ("not_yet_verified", None, None),
    }
    # what is left needs a person, not another run
    assert not run.left.pending
    assert [i.spec.attempt_id for i in run.left.exhausted] == [vid(STD, "broken", 1)]

    # Nothing pending: a second run plans nothing and runs nothing.
    before = _records(isolated)
    again = run_verdicts(targets, demo=True, executor=OurToolingFails(), say=said.append)
    assert (again.rounds, again.attempts) == (0, [])
    assert _records(isolated) == before

    # A person asks for a stronger agent where the standard agent could not verify: one attempt, and
    # its pass makes the project "runs", naming that agent. Asked again: nothing new.
    assert request_stronger_agent("never", commits["never"], OTHER, "ops-ana", "maintainer says it runs")
    assert not request_stronger_agent("never", commits["never"], OTHER, "ops-ana", "maintainer says it runs")
    stronger = run_verdicts(targets, demo=True, executor=OurToolingFails(), say=said.append)
    assert (stronger.rounds, stronger.attempts) == (1, [vid(OTHER, "never", 1)])
    assert _verdicts(targets)["never"] == ("runs", OTHER, vid(OTHER, "never", 1))
    assert _records(isolated) == before | {vid(OTHER, "never", 1)}


def read_plan_spec(targets, project: str):
    """The spec of a project's first standard-agent verdict attempt, as the plan will name it."""
    from argusic.core.spec import AttemptSpec

    pool = json.loads(Path(targets.pool_path).read_text())
    entry = next(e for e in pool["entries"] if e["project_id"] == project)
    return AttemptSpec(cycle_id=CYCLE, purpose="verdict", agent_id=STD, project_id=project,
                       repo_url=entry["repo_url"], commit=entry["commit"], tier="standard", attempt_no=1,
                       demo=True, budget_scale=1 / 360)  # fmt: skip


# --- fast: targets, requests, the plan read from a warehouse -----------------------------------------


def test_targets_are_the_cycles_pool_and_unknown_projects_are_refused(isolated, walk):
    from argusic.workflows.verdicts import VerdictConfigurationError, prepare, select_targets

    with pytest.raises(VerdictConfigurationError, match="cycle 2027-01 has no pool yet"):
        prepare("2027-01")
    from argusic.core.layout import pool_path_for

    targets = select_targets(CYCLE, pool_path_for(CYCLE), [])
    assert len(targets.projects) == 7 and targets.projects[0] == ("full", walk["full"])
    with pytest.raises(VerdictConfigurationError, match="not in the pool of cycle 2026-12.*: nope"):
        select_targets(CYCLE, pool_path_for(CYCLE), ["full", "nope"])
    with pytest.raises(VerdictConfigurationError, match="is the pool of cycle 2026-12, not 2026-11"):
        prepare("2026-11", pool=str(pool_path_for(CYCLE)))


def test_loading_a_pool_is_idempotent_and_a_changed_pool_is_refused(isolated, walk):
    import duckdb
    from argusic.core.layout import pool_path_for
    from argusic.warehouse.load_runs import PoolEntriesError, load_pool_entries

    path = pool_path_for(CYCLE)
    assert load_pool_entries(path) == 7
    assert load_pool_entries(path) == 0
    doc = json.loads(path.read_text())
    doc["entries"][0]["commit"] = "f" * 40
    changed = isolated / "changed.json"
    changed.write_text(json.dumps(doc))
    with pytest.raises(PoolEntriesError, match="'full' of cycle 2026-12 is already loaded"):
        load_pool_entries(changed)
    doc["entries"][0]["commit"] = "HEAD"
    changed.write_text(json.dumps(doc))
    with pytest.raises(PoolEntriesError, match="commit 'HEAD' is not a 40-hex SHA-1"):
        load_pool_entries(changed)
    with duckdb.connect(str(isolated / "warehouse" / "argusic.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.pool_entries").fetchone()[0] == 7


def test_a_stronger_agent_request_is_a_checked_decision(isolated, walk):
    from argusic.warehouse.decisions import DecisionError, journal_path
    from argusic.workflows.verdicts import VerdictConfigurationError, prepare, request_stronger_agent

    commit = walk["never"]
    with pytest.raises(VerdictConfigurationError, match="'readme-runner' is the standard agent"):
        request_stronger_agent("never", commit, STD, "ops", "why")
    with pytest.raises(VerdictConfigurationError, match="not in the agent registry"):
        request_stronger_agent("never", commit, "gpt-9", "ops", "why")
    with pytest.raises(VerdictConfigurationError, match="full 40-hex SHA-1"):
        request_stronger_agent("never", "abc", OTHER, "ops", "why")
    with pytest.raises(VerdictConfigurationError, match="expected a project id"):
        request_stronger_agent("../x", commit, OTHER, "ops", "why")
    with pytest.raises(DecisionError, match="note: missing"):
        request_stronger_agent("never", commit, OTHER, "ops", "")
    # The DAG's param: a request on every listed project, and who and why are required.
    with pytest.raises(VerdictConfigurationError, match="say who asks and why"):
        prepare(CYCLE, projects=["never"], stronger_agent=OTHER)
    prepare(CYCLE, projects=["never", "late"], stronger_agent=OTHER, requested_by="ops", note="asked")
    lines = journal_path("verdict_requests").read_text().splitlines()
    assert sorted(json.loads(x)["project_id"] for x in lines) == ["late", "never"]
    prepare(CYCLE, projects=["never", "late"], stronger_agent=OTHER, requested_by="ops", note="asked")
    assert len(journal_path("verdict_requests").read_text().splitlines()) == 2  # idempotent


def _fake_plan(db: Path, rows: list[dict]) -> None:
    import duckdb

    db.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(db)) as con:
        con.execute(
            "CREATE SCHEMA IF NOT EXISTS marts; CREATE OR REPLACE TABLE marts.verdict_plan ("
            "project_id VARCHAR, commit_sha VARCHAR, verdict VARCHAR, agent_id VARCHAR, "
            "by_stronger_agent BOOLEAN, attempt_no INT, is_rerun BOOLEAN, rerun_cycle_id VARCHAR, "
            "reason VARCHAR, repo_url VARCHAR, tier VARCHAR)"
        )
        for r in rows:
            con.execute(
                "INSERT INTO marts.verdict_plan VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", list(r.values())
            )


def _row(project: str, commit: str, **over) -> dict:
    row = {"project_id": project, "commit_sha": commit, "verdict": "not_yet_verified", "agent_id": STD,
           "by_stronger_agent": False, "attempt_no": 1, "is_rerun": False, "rerun_cycle_id": None,
           "reason": "standard agent, first attempt: no complete attempt yet", "repo_url": "/r.git",
           "tier": "standard"}  # fmt: skip
    return row | over


def test_plan_rows_become_verdict_specs_for_the_targets_only(isolated, walk):
    from argusic.core.layout import pool_path_for
    from argusic.core.spec import read_spec
    from argusic.workflows.verdicts import plan_lines, read_plan, select_targets, write_plan

    c = walk
    _fake_plan(
        isolated / "warehouse" / "argusic.duckdb",
        [
            _row("full", c["full"]),
            _row("late", c["late"], attempt_no=2, reason="standard agent, second attempt: x"),
            _row("cut", c["cut"], is_rerun=True, rerun_cycle_id="2026-11", reason="rerun: y"),
            _row("never", c["never"], verdict="could_not_verify", agent_id=OTHER, by_stronger_agent=True),
            _row("full", "e" * 40),  # the same project at a commit this pool did not pin
            _row("other", c["other"]),  # not a target of this run
        ],
    )
    targets = select_targets(CYCLE, pool_path_for(CYCLE), ["full", "late", "cut", "never"])
    plan = read_plan(targets, budget_scale=0.01)
    ids = [i.spec.attempt_id for i in plan.pending]
    assert ids == [
        "2026-11.verdict.readme-runner.cut.a1",  # a rerun keeps the cycle of the invalid attempt
        "2026-12.verdict.readme-runner.full.a1",
        "2026-12.verdict.readme-runner.late.a2",
        f"2026-12.verdict.{OTHER}.never.a1",
    ]
    assert all(
        i.spec.purpose == "verdict" and i.spec.demo and i.spec.budget_scale == 0.01 for i in plan.pending
    )
    paths = write_plan(plan)
    assert [Path(p).name for p in paths] == [f"{i}.json" for i in ids]
    assert [read_spec(p) for p in paths] == [i.spec for i in plan.pending]
    assert write_plan(plan) == paths  # the same plan again: the same files, unchanged
    text = "\n".join(plan_lines(plan))
    assert "4 verdict attempt(s) pending" in text and "rerun: y" in text
    assert plan_lines(read_plan(select_targets(CYCLE, pool_path_for(CYCLE), ["mock"]))) == [
        "nothing pending: every target's verdict is settled or waits for nothing the rules run"
    ]


def test_verdicts_cli_request_and_plan(isolated, walk):
    from argusic.cli.main import app
    from typer.testing import CliRunner

    commit = walk["never"]
    args = ["verdicts", "request", "--project", "never", "--commit", commit, "--agent", OTHER,
            "--by", "ops-ana", "--note", "maintainer says it runs"]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"recorded: {OTHER} requested for never @ {commit[:12]} by ops-ana" in first.output
    assert "already recorded" in CliRunner().invoke(app, args).output
    bad = CliRunner().invoke(app, [*args[:6], "--agent", STD, *args[8:]])
    assert bad.exit_code == 2 and "is the standard agent" in bad.output

    _fake_plan(isolated / "warehouse" / "argusic.duckdb", [_row("late", walk["late"], reason="because")])
    import duckdb

    with duckdb.connect(str(isolated / "warehouse" / "argusic.duckdb")) as con:
        con.execute(
            "CREATE TABLE marts.project_verdicts AS SELECT 'late' AS project_id, ? AS commit_sha, "
            "'not_yet_verified' AS verdict, NULL AS verified_by_agent, NULL AS verified_by_attempt_id, "
            "1 AS complete_attempts, 1 AS valid_attempts",
            [walk["late"]],
        )
    shown = CliRunner().invoke(
        app, ["verdicts", "plan", "--cycle", CYCLE, "--projects", "late,full", "--no-build"]
    )
    assert shown.exit_code == 0, shown.output
    assert "1 verdict attempt(s) pending" in shown.output
    assert "2026-12.verdict.readme-runner.late.a1: because" in shown.output
    assert "full @ " in shown.output and "not_yet_verified" in shown.output
    assert not (isolated / "runs" / CYCLE / "plan").exists()  # `plan` writes no spec
    missing = CliRunner().invoke(
        app, ["verdicts", "plan", "--cycle", CYCLE, "--projects", "nope", "--no-build"]
    )
    assert missing.exit_code == 2 and "not in the pool" in missing.output


def test_waiting_verdict_attempts_are_labelled_from_their_rounds_plan(tmp_path):
    """The cluster policy labels a waiting attempt of either DAG from the plan task of its round.
    (Airflow is imported in a subprocess with its own settings, as in tests/orchestration/test_dags.py.)"""
    from test_dags import airflow_env, run_python

    code = """
from argusic.orchestration.policy import plan_task_of as p
print([p("argusic_cycle", "run_attempt"), p("argusic_verdicts", "run_attempt_3"),
       p("argusic_verdicts", "run_attempt"), p("argusic_verdicts", "run_attempt_x"),
       p("argusic_cycle", "run_attempt_1"), p("other", "run_attempt")])
"""
    out = run_python(airflow_env(tmp_path), code).strip().splitlines()[-1]
    assert out == "['plan', 'plan_3', None, None, None, None]"
