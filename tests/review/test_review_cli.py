"""The same decisions from a shell, for ops without the UI: a real cycle on the demo forge (local
executor, scaled budgets) that stops before publishing; `argusic publish` shows the changes, a
rejection publishes nothing, an approval publishes exactly the approved board; `argusic review`
lists and decides; `argusic dispute` files, rules and corrects (a real rerun)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import duckdb
import pytest
from argusic.cli.main import app
from argusic.publication.files import operator_attempt_id
from typer.testing import CliRunner

pytestmark = pytest.mark.slow

runner = CliRunner()
CYCLE = "2026-12-cli"


def _q(isolated: Path, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(isolated / "warehouse" / "argusic.duckdb"), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_review_publish_and_dispute_from_the_cli(isolated: Path, monkeypatch) -> None:
    from argusic.sources.forge import build_forge

    monkeypatch.setenv("COLUMNS", "200")
    catalogue = build_forge(isolated / "forge")
    board = isolated / "published" / CYCLE / "board.json"
    ran = runner.invoke(
        app,
        [
            "cycle",
            "run",
            "--catalogue",
            str(catalogue),
            "--cycle",
            CYCLE,
            "--agents",
            "readme-runner",
            "--executor",
            "local",
            "--budget-scale",
            "0.003",
            "--attempts-per-pair",
            "1",
        ],
    )
    assert ran.exit_code == 0, ran.output
    assert "nothing published until a person approves this board" in ran.output
    assert "First publication of this cycle" in ran.output
    assert not board.exists()

    # the board's sha256 as shown, rejected: recorded, nothing published
    shown = runner.invoke(app, ["publish", "--cycle", CYCLE])
    assert shown.exit_code == 0, shown.output
    sha = re.search(r"sha256 `([0-9a-f]{64})`", shown.output)[1]
    no = runner.invoke(app, ["publish", "--cycle", CYCLE, "--reject", "--by", "bo", "--note", "reviews open"])
    assert no.exit_code == 0 and "nothing published" in no.output and not board.exists()
    missing = runner.invoke(app, ["publish", "--cycle", CYCLE, "--approve", "--by", "ana"])
    assert missing.exit_code == 2 and "note: missing" in missing.output and not board.exists()

    # environment review: every project readme-runner failed is awaiting a decision
    listed = runner.invoke(app, ["review", "list", "--cycle", CYCLE])
    assert listed.exit_code == 0 and "awaiting_decision" in listed.output, listed.output
    (project,) = _q(
        isolated,
        "SELECT project_id FROM marts.project_review WHERE cycle_id = ? AND review_status = "
        "'awaiting_decision' ORDER BY project_id LIMIT 1",
        CYCLE,
    )[0]
    wrong = runner.invoke(
        app,
        [
            "review",
            "decide",
            "--cycle",
            CYCLE,
            "--project",
            "nope",
            "--decision",
            "project_at_fault",
            "--by",
            "bo",
            "--note",
            "x",
        ],
    )
    assert wrong.exit_code == 2 and "not under review" in wrong.output
    decided = runner.invoke(
        app,
        [
            "review",
            "decide",
            "--cycle",
            CYCLE,
            "--project",
            project,
            "--decision",
            "project_at_fault",
            "--by",
            "bo",
            "--note",
            "its README is wrong",
        ],
    )
    assert decided.exit_code == 0, decided.output
    assert _q(
        isolated,
        "SELECT review_status, decided_by, decision_note, excluded_from_board FROM "
        "marts.project_review WHERE cycle_id = ? AND project_id = ?",
        CYCLE,
        project,
    ) == [("project_at_fault", "bo", "its README is wrong", False)]

    # the rejected board is not the board now (a project counts again): approving it is refused
    from argusic.review.publication import NotApproved, publish_approved

    with pytest.raises(NotApproved, match="rejected by bo"):
        publish_approved(CYCLE)
    yes = runner.invoke(app, ["publish", "--cycle", CYCLE, "--approve", "--by", "ana", "--note", "checked"])
    assert yes.exit_code == 0, yes.output
    assert "Changes since the last publication" not in yes.output  # nothing was published before
    approved_sha = _q(
        isolated, "SELECT board_sha256 FROM decisions.publication_decisions WHERE decision = 'approved'"
    )[0][0]
    assert approved_sha != sha  # the decision changed the board
    assert hashlib.sha256(board.read_bytes()).hexdigest() == approved_sha

    # a dispute: filed, ruled environment at fault, rerun (local), corrected
    # filed with the id its run page shows (the agent part is the identity's code, issue 32); the
    # operator's lines name the attempt by the warehouse's id
    row = json.loads((board.parent / "attempts.json").read_text())["attempts"][0]
    shown, attempt_id = row["attempt_id"], operator_attempt_id(row)
    assert shown.split(".")[2].startswith("A-") and shown != attempt_id
    filed = runner.invoke(
        app,
        [
            "dispute",
            "file",
            "--attempt",
            shown,
            "--claim",
            "cut short",
            "--contact",
            "m@example.org",
            "--by",
            "ana",
        ],
    )
    assert filed.exit_code == 0, filed.output
    dispute_id = re.search(r"dispute (dispute-[0-9a-f]+) filed", filed.output)[1]
    ruled = runner.invoke(
        app,
        [
            "dispute",
            "rule",
            "--dispute",
            dispute_id,
            "--ruling",
            "environment_at_fault",
            "--by",
            "ana",
            "--note",
            "our disk filled up",
            "--executor",
            "local",
        ],
    )
    assert ruled.exit_code == 0, ruled.output
    assert f"corrected: {attempt_id} → {attempt_id}.r1" in ruled.output
    again = runner.invoke(
        app,
        [
            "dispute",
            "rule",
            "--dispute",
            dispute_id,
            "--ruling",
            "result_stands",
            "--by",
            "bo",
            "--note",
            "no",
        ],
    )
    assert again.exit_code == 2 and "ruled once" in again.output
    assert _q(isolated, "SELECT attempt_id, rerun_attempt_id, note FROM marts.attempt_corrections") == [
        (attempt_id, f"{attempt_id}.r1", "our disk filled up")
    ]
    stale = runner.invoke(app, ["dispute", "file", "--attempt", shown, "--claim", "again", "--contact", "m"])
    assert stale.exit_code == 2 and "run again as" in stale.output
    listing = runner.invoke(app, ["dispute", "list"])
    assert dispute_id in listing.output and "environment_at_fault" in listing.output
