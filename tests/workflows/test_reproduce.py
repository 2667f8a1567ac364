"""`argusic reproduce`: refusals naming the missing input, the reproduction pinned to the recorded
environment, the comparison (rubric over a scratch DuckDB, first divergence of the served logs), and
real reproductions (local executor; Docker, slow) that never reach the warehouse or the board."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import duckdb
import pytest
from argusic.attempts.environment import current_edition, instructions_identity, scaffold_sha256
from argusic.cli.main import app
from argusic.core.record import load_record_file, parse_record
from argusic.workflows.reproduce import (
    NOT_REPRODUCIBLE,
    ReproductionRefused,
    edition_commit,
    find_original,
    first_divergence,
    log_normaliser,
    plan_reproduction,
    reproduce,
    reproductions_dir,
)
from conftest import VALID_RECORD, evidence_refs, write_record
from test_executor import make_repo, needs_docker
from typer.testing import CliRunner

runner = CliRunner()
CYCLE = "2026-12"
ATTEMPT = VALID_RECORD["attempt_id"]
FAKE_DIGEST = "sha256:" + "0" * 64


def _environment(executor: str = "docker", digest: str = FAKE_DIGEST) -> dict:
    edition = current_edition()
    return {
        "harness_edition": edition.edition,
        "scaffold_sha256": scaffold_sha256(),
        "images": [{"role": "runner", "reference": "argusic-runner:bookworm", "digest": digest}]
        if executor == "docker"
        else [],
        "instructions": instructions_identity(edition).model_dump(),
        "limits": {
            "cpus": 1.0 if executor == "docker" else None,
            "memory_bytes": 2 * 1024**3 if executor == "docker" else None,
            "pids": 512 if executor == "docker" else None,
            "disk_bytes": 19 * 1024**3 if executor == "docker" else None,
            "network": "none" if executor == "docker" else "host",
            "budget_seconds": 15,
        },
        "display": None,
    }


@pytest.fixture
def source(isolated: Path) -> tuple[Path, str]:
    """A real local bare repository under the demo forge folder (an allowed root) and its commit."""
    forge = isolated / "forge"
    forge.mkdir(parents=True, exist_ok=True)
    return make_repo(forge, "ok")


def _pool(isolated: Path, repo: Path, commit: str, project: str = "wavgen", cycle: str = CYCLE) -> Path:
    doc = {
        "schema": "argusic.pool/1", "cycle_id": cycle, "cycle_starts": "2026-12-01",
        "cycle_ends": "2026-12-31", "catalogue_sha256": "0" * 64, "excluded": {},
        "entries": [{"project_id": project, "repo_url": str(repo), "commit": commit, "language": "Python",
                     "difficulty": "easy", "tier": "standard", "visibility": "public"}],
    }  # fmt: skip
    path = isolated / "runs" / "pools" / cycle / "pool.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def _original(isolated: Path, commit: str, environment: dict | None, **over) -> dict:
    from argusic.core.settings import evidence_url

    doc = copy.deepcopy(VALID_RECORD) | {"commit": commit, "environment": environment, "demo": True}
    doc |= {"evidence": evidence_refs(evidence_url()), "executor": "docker", "effective_budget_seconds": 15}
    doc |= over
    write_record(isolated / "runs" / doc["cycle_id"] / doc["attempt_id"], doc)
    return doc


def _refusal(attempt_id: str = ATTEMPT) -> str:
    with pytest.raises(ReproductionRefused) as caught:
        reproduce(attempt_id)
    return str(caught.value)


# --- the original ----------------------------------------------------------------------------------


def test_an_unknown_attempt_is_refused(isolated):
    assert "unknown attempt" in _refusal()
    assert "not an attempt id" in _refusal("2026-12.board.x")


def test_a_record_without_environment_cannot_be_reproduced(isolated, source):
    repo, commit = source
    _original(isolated, commit, None)
    assert _refusal() == f"{ATTEMPT}: {NOT_REPRODUCIBLE}"
    assert NOT_REPRODUCIBLE == "recorded before environment identity: cannot be reproduced exactly"


def test_a_reproduction_is_not_reproduced_again(isolated, source):
    repo, commit = source
    _original(isolated, commit, _environment(), reproduces="2026-11.board.readme-runner.wavgen.a1")
    assert "is itself a reproduction (of 2026-11.board.readme-runner.wavgen.a1)" in _refusal()
    # one in the reproductions folder, found by its own id
    doc = copy.deepcopy(VALID_RECORD) | {"environment": _environment(), "reproduces": ATTEMPT}
    repro_id = ATTEMPT.replace(CYCLE, "repro-20261201-1", 1)
    doc |= {"attempt_id": repro_id, "cycle_id": "repro-20261201-1", "commit": commit}
    write_record(reproductions_dir() / "repro-20261201-1" / repro_id, doc)
    assert f"is itself a reproduction (of {ATTEMPT}" in _refusal(repro_id)


# --- its inputs ------------------------------------------------------------------------------------


def test_an_image_no_longer_available_is_named(isolated, source):
    repo, commit = source
    _pool(isolated, repo, commit)
    _original(isolated, commit, _environment())
    message = _refusal()
    assert f"image: the runner image argusic-runner:bookworm the attempt ran in ({FAKE_DIGEST}" in message
    assert "argusic-runner:pinned-0000000000000000" in message and "no longer available" in message
    assert not list(reproductions_dir().glob("repro-*"))  # a refused reproduction leaves no cycle behind


def test_a_changed_harness_names_both_editions_and_the_commit_to_check_out(isolated, source, monkeypatch):
    repo, commit = source
    _pool(isolated, repo, commit)
    recorded, edition = scaffold_sha256(), current_edition().edition
    _original(isolated, commit, _environment("local"), executor="local")
    monkeypatch.setattr("argusic.attempts.environment.scaffold_sha256", lambda *a: "c" * 64)
    message = _refusal()
    assert f"harness: the attempt ran under harness edition {edition} (scaffold sha256 {recorded})" in message
    assert f"this checkout's harness is files recorded in no edition (scaffold sha256 {'c' * 64})" in message
    found = re.search(rf"check out commit ([0-9a-f]{{12}}) \(it recorded edition {edition}\)", message)
    assert found, message
    # that commit's changelog really records the edition
    full = edition_commit(recorded)
    assert full and full.startswith(found.group(1))
    shown = subprocess.run(
        ["git", "show", f"{full}:dbt_project/seeds/harness_editions.csv"], capture_output=True, text=True
    ).stdout
    assert recorded in shown


def test_changed_instructions_are_named(isolated, source):
    repo, commit = source
    _pool(isolated, repo, commit)
    env = _environment("local")
    env["instructions"] = {"version": "0", "sha256": "d" * 64}
    _original(isolated, commit, env, executor="local")
    message = _refusal()
    assert f"instructions: the attempt's standard instructions were version 0 (sha256 {'d' * 64})" in message
    assert instructions_identity(current_edition()).sha256 in message


def test_a_commit_gone_and_an_unknown_repository_are_named(isolated, source):
    repo, commit = source
    gone = "f" * 40
    _pool(isolated, repo, gone)
    _original(isolated, gone, _environment("local"), executor="local")
    message = _refusal()
    assert f"commit: {gone} of wavgen cannot be had" in message
    (isolated / "runs" / "pools" / CYCLE / "pool.json").unlink()
    message = _refusal()
    assert f"repository: the address of project wavgen at commit {gone} is not known here" in message


def test_every_missing_input_is_named_at_once(isolated, source, monkeypatch):
    repo, commit = source
    gone = "e" * 40
    _pool(isolated, repo, gone)
    env = _environment()
    env["limits"]["budget_seconds"] = 99999
    _original(isolated, gone, env)
    monkeypatch.setattr("argusic.attempts.environment.scaffold_sha256", lambda *a: "c" * 64)
    message = _refusal()
    lines = [line for line in message.splitlines() if line.startswith("- ")]
    assert [line.split(":")[0] for line in lines] == ["- commit", "- image", "- harness", "- budget"], message
    assert "the attempt was allowed 99999 s; the standard budget is now 5400 s" in message


def test_the_plan_runs_under_the_recorded_limits_image_and_budget(isolated, source, monkeypatch):
    repo, commit = source
    _pool(isolated, repo, commit)
    env = _environment()
    env["limits"] |= {"cpus": 0.5, "memory_bytes": 1024**3, "pids": 100, "disk_bytes": 10 * 1024**3}
    doc = _original(isolated, commit, env)
    monkeypatch.setattr("argusic.attempts.environment.image_digest", lambda ref: ref)  # the image is there
    made = []
    plan = plan_reproduction(find_original(ATTEMPT), "repro-20261201-1", executor_factory=made.append)
    (containment,) = made
    assert (containment.cpus, containment.memory, containment.pids_limit) == (0.5, str(1024**3), 100)
    assert containment.out_bytes + containment.work_bytes == 10 * 1024**3 and containment.network == "none"
    assert any(note.startswith("disk: the record gives the writable areas' total") for note in plan.notes)
    pin = plan.pin
    assert pin.images["runner"].digest == FAKE_DIGEST  # run_attempt runs the pinned digest
    assert pin.container.model_dump() == {"cpus": 0.5, "memory_bytes": 1024**3, "pids": 100,
                                          "disk_bytes": 10 * 1024**3, "network": "none",
                                          "package_indexes": {}}  # fmt: skip
    assert (pin.scaffold_sha256, pin.instructions.model_dump()) == (
        env["scaffold_sha256"],
        env["instructions"],
    )
    assert pin.budget_for("standard") == 15 and plan.spec.demo
    assert plan.spec.attempt_id == "repro-20261201-1.board.readme-runner.wavgen.a1"
    assert (plan.spec.repo_url, plan.spec.commit) == (str(repo), doc["commit"])
    assert plan.repo.where.endswith(f"pools/{CYCLE}/pool.json")


def test_the_repository_is_found_in_the_plan_when_the_pool_file_is_gone(isolated, source):
    from argusic.core.spec import AttemptSpec

    repo, commit = source
    _original(isolated, commit, _environment("local"), executor="local")
    spec = AttemptSpec(cycle_id=CYCLE, agent_id="readme-runner", project_id="wavgen", repo_url=str(repo),
                       commit=commit, tier="standard", attempt_no=1)  # fmt: skip
    path = isolated / "runs" / CYCLE / "plan" / f"{ATTEMPT}.json"
    path.parent.mkdir(parents=True)
    path.write_text(spec.model_dump_json())
    plan = plan_reproduction(find_original(ATTEMPT), "repro-20261201-1", executor_factory=lambda c: None)
    assert plan.repo.where == str(path) and plan.pin.executor == "local" and plan.pin.container is None


# --- the comparison --------------------------------------------------------------------------------

ORIGINAL_ID = "2026-12.board.readme-runner.wavgen.a1"
REPRO_ID = "repro-20261201-1.board.readme-runner.wavgen.a1"


def _normalise():
    return log_normaliser([ORIGINAL_ID, REPRO_ID], ["2026-12", "repro-20261201-1"])


def test_what_always_differs_is_normalised_and_nothing_else():
    normalise = _normalise()
    a = [
        "[2026-11-30T14:50:09.360Z] readme-runner 2.0.1: recovery on",
        f"container argusic-i0123456789a-{ORIGINAL_ID} started",
        '127.0.0.1 - - [30/Nov/2026 14:50:09] "GET /forecast HTTP/1.1" 200 -',
        f"evidence of {ORIGINAL_ID} in runs/2026-12/ at 14:50:09.360",
        "Ran 1 test in 0.001s",
    ]
    b = [
        "[2026-12-01T09:01:02.003Z] readme-runner 2.0.1: recovery on",
        f"container argusic-i0123456789a-{REPRO_ID} started",
        '127.0.0.1 - - [01/Dec/2026 09:01:02] "GET /forecast HTTP/1.1" 200 -',
        f"evidence of {REPRO_ID} in runs/repro-20261201-1/ at 09:01:02.003",
        "Ran 1 test in 0.001s",
    ]
    result = first_divergence(a, b, normalise)
    assert result.equal and result.lines == (5, 5) and result.changed == 8 and result.differing == 0
    assert normalise(a[1]) == "container <container> started"
    assert normalise(a[3]) == "evidence of <attempt> in runs/<cycle>/ at <time>"
    # conservative: versions, ports, durations and other numbers stay as they are
    assert normalise("readme-runner 2.0.1 on 127.0.0.1:8765, 2026-12 pool") == (
        "readme-runner 2.0.1 on 127.0.0.1:8765, <cycle> pool"
    )
    assert normalise("took 0.53 s, 2026-12-31 and 12:30") == "took 0.53 s, 2026-12-31 and 12:30"


def test_the_first_divergence_is_shown_with_line_numbers_as_logged():
    a = [
        "[2026-11-30T14:50:09Z] STEP install: pip install .",
        "ok",
        "[2026-11-30T14:50:10Z] STEP run: x",
        "same",
    ]
    b = [
        "[2026-12-01T00:00:00Z] STEP install: pip install .",
        "ok",
        "[2026-12-01T00:00:01Z] STEP run: y",
        "other",
    ]
    result = first_divergence(a, b, _normalise())
    assert not result.equal and (result.original_line, result.reproduction_line) == (3, 3)
    assert (result.original_text, result.reproduction_text) == (a[2], b[2])  # as logged, not normalised
    assert result.differing == 2
    shorter = first_divergence(a, a[:2], _normalise())
    assert (shorter.original_line, shorter.reproduction_line, shorter.reproduction_text) == (3, None, None)
    assert shorter.differing == 2
    hostile = first_divergence(["a\x1b]0;title\x07b"], ["c"], _normalise())
    assert "\x1b" not in hostile.original_text


# --- real reproductions ----------------------------------------------------------------------------


def _run_original(isolated: Path, executor) -> Path:
    from argusic.attempts.run import run_attempt
    from argusic.cycle.plan import plan_attempts
    from argusic.cycle.pools import rotate_pool
    from argusic.sources.forge import build_forge

    catalogue = build_forge(isolated / "forge")
    paths = rotate_pool("2026-12-rp", catalogue)
    (spec,) = [
        s
        for s in plan_attempts(Path(paths["pool"]), ["readme-runner"], attempts_per_pair=1, demo=True)
        if s.project_id == "weatherfetch"
    ]
    return run_attempt(spec, executor)


def test_a_local_attempt_reproduced_never_reaches_the_warehouse(isolated):
    from argusic.sandbox.executor import LocalExecutor
    from argusic.workflows.reproduce import compare

    original = load_record_file(_run_original(isolated, LocalExecutor()))
    assert original.environment is not None and original.executor == "local"
    done = reproduce(original.attempt_id)
    record = done.record
    assert record.reproduces == original.attempt_id
    assert re.fullmatch(r"repro-\d{8}-1", record.cycle_id)
    assert done.record_path == (
        reproductions_dir() / record.cycle_id / record.attempt_id / "run_record.json"
    )  # not a cycle's folder
    assert load_record_file(done.record_path).reproduces == original.attempt_id
    assert record.environment == original.environment
    result = compare(original, record)
    rows = {row.field: row for row in result.rows}
    assert rows["outcome"].original == "pass_mock" and rows["outcome"].same and result.same_outcome
    assert rows["score"].same and rows["environment.limits"].same
    assert not (isolated / "warehouse").exists()  # nothing here opens, let alone writes, the warehouse
    again = reproduce(original.attempt_id)  # a second reproduction gets its own cycle
    assert again.record.cycle_id.endswith("-2")


@pytest.mark.slow
@pytest.mark.docker
@needs_docker
def test_a_published_docker_attempt_reproduced_from_its_record_alone(isolated):
    import shutil

    from argusic.sources.forge import build_forge

    catalogue = build_forge(isolated / "forge")
    cycle = "2026-12-rp"
    ran = runner.invoke(app, [
        "cycle", "run", "--catalogue", str(catalogue), "--cycle", cycle, "--agents", "readme-runner",
        "--executor", "docker", "--budget-scale", "0.003", "--pool-size", "1", "--attempts-per-pair", "1",
        "--approve-as", "tester", "--note", "reproduce test",
    ])  # fmt: skip
    assert ran.exit_code == 0, ran.output
    db = isolated / "warehouse" / "argusic.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        (attempt_id, outcome), *_ = con.execute(
            "SELECT attempt_id, outcome FROM marts.attempt_scores WHERE cycle_id = ?", [cycle]
        ).fetchall()
        rows_before = con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]
        (original_json,) = con.execute(
            "SELECT record_json FROM raw.run_records WHERE attempt_id = ?", [attempt_id]
        ).fetchone()
    board = (isolated / "published" / cycle / "board.json").read_bytes()
    # from its record alone: the cycle's folder (records, plan, pin) is gone; the warehouse holds the
    # record, the pool file the repository's address
    shutil.rmtree(isolated / "runs" / cycle)
    done = runner.invoke(app, ["reproduce", attempt_id])
    assert done.exit_code == 0, done.output
    out = done.output
    assert re.search(rf"│ outcome\s+│ {outcome}\s+│ {outcome}\s+│ equal", out), out
    assert re.search(r"│ environment\.images\s+│.*│ equal", out), out
    assert "same outcome" in out and "(never ingested, not on the board)" in out
    assert "served logs: equal after normalisation" in out or re.search(
        r"served logs diverge .*\n\s+original line \d+: .*\n\s+reproduction line \d+: ", out
    ), out
    (record_path,) = reproductions_dir().glob("repro-*/*/run_record.json")
    record = load_record_file(record_path)
    assert record.reproduces == attempt_id and record.executor == "docker"
    original = parse_record(original_json)
    assert record.environment == original.environment  # the recorded environment, digest included
    # The container ran the pinned digest (environment.images, equal above); `image` keeps the name.
    assert record.image == original.image == original.environment.images[0].reference
    # never in the warehouse, never on the board
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0] == rows_before
        assert (
            con.execute(
                "SELECT count(*) FROM raw.run_records WHERE cycle_id LIKE 'repro-%' OR attempt_id = ?",
                [record.attempt_id],
            ).fetchone()[0]
            == 0
        )
    assert (isolated / "published" / cycle / "board.json").read_bytes() == board
    assert not (isolated / "published" / record.cycle_id).exists()
    # and as JSON
    as_json = runner.invoke(app, ["reproduce", attempt_id, "--json"])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc["schema"] == "argusic.reproduction/1" and doc["same_outcome"] and doc["original"] == attempt_id
    assert {f["field"] for f in doc["fields"]} >= {"outcome", "score", "end_reason", "environment.images"}
