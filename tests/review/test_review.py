"""argusic.review without Airflow: the approval binds the exact board, hostile text stays inert in the
forms, a form's answer is read back whole or not at all, and the disputes' rules (only the attempt
that counts, ruled once, the correction's name). The DAGs and the REST API:
tests/review/test_review_dags.py."""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import datetime
from pathlib import Path

import pytest
from argusic.publication.board import BoardChanged, compose_publication, publish_board
from argusic.review import publication
from argusic.review.text import answer_of, link, quoted
from argusic.warehouse.decisions import DecisionError
from test_expectations import good_frames, write_marts

T = datetime(2026, 12, 3, 10, 0, 0)


def test_hostile_text_is_inert_in_a_form() -> None:
    shown = quoted("done ![x](http://evil/p.png) `rm -rf` [click](javascript:1)\x1b[31m\nnext line")
    assert shown.startswith("`") and shown.endswith("`") and shown.count("`") == 2  # one code span
    assert "\n" not in shown and "\x1b" not in shown
    assert quoted("x" * 1000, 50).count("x") <= 50
    assert (
        link("https://evidence.example/served/a/log.txt", "log")
        == "[log](https://evidence.example/served/a/log.txt)"
    )
    assert link("file:///srv/evidence/served/a/log.txt", "log").startswith(
        "log: `file://"
    )  # text, not a link
    assert link("https://x/a) [y](https://evil", "log").startswith("log: `")
    assert link(None, "recording") == "recording: none"


def test_bidi_controls_are_visible_in_a_form() -> None:
    """A claim that reorders itself with bidi overrides and isolates (Trojan Source) is shown with the
    controls as escapes; Korean, accents and emoji stay as written."""
    from argusic.review.disputes import Dispute, body_of

    others = "\u200f\u200e\u061c\u202a\u202b\u202d\u2067\u2068"
    claim = f"score is wrong \u202eevil\u202c \u2066x\u2069 {others} 한국어 café 🎉"
    dispute = Dispute("d1", "2026-12.board.a.p.a1", claim, "me@example.org \u202e", "ops", T)
    body = body_of(dispute, None)
    assert not any(
        chr(c) in body for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x61C)
    )
    assert "score is wrong \\u202eevil\\u202c \\u2066x\\u2069" in body
    assert "한국어 café 🎉" in body
    assert quoted("\u202e" * 100, 30).count("\\u202e") <= 5  # the limit counts the escapes shown


def test_an_answer_is_read_whole_or_refused() -> None:
    answer = answer_of(
        {
            "chosen_options": ["Approve"],
            "params_input": {"note": " fine "},
            "responded_by_user": {"id": "7", "name": "ana"},
            "responded_at": "2026-12-03T10:00:00+01:00",
        }
    )
    assert (answer.choice, answer.note, answer.by, answer.at) == (
        "Approve",
        "fine",
        "ana",
        datetime(2026, 12, 3, 9),
    )
    with pytest.raises(DecisionError, match="exactly one option"):
        answer_of({"chosen_options": [], "responded_at": T})
    with pytest.raises(DecisionError, match="no response time"):
        answer_of({"chosen_options": ["Reject"], "responded_by_user": {"name": "bo"}})


def test_the_approval_binds_the_exact_board(isolated: Path) -> None:
    db = isolated / "warehouse" / "argusic.duckdb"
    db.parent.mkdir(parents=True)
    write_marts(db, good_frames())
    out = isolated / "published"
    composed = compose_publication("c1", db)
    assert composed.board_sha256 == compose_publication("c1", db).board_sha256  # same data, same bytes

    with pytest.raises(BoardChanged, match="changed after it was approved"):
        publish_board("c1", out, db, approved_sha256="0" * 64)
    assert not (out / "c1").exists()  # nothing written

    with pytest.raises(publication.NotApproved, match="nobody approved it yet"):
        publication.publish_approved("c1", out_dir=out, db_path=db)
    publication.record("c1", composed.board_sha256, "rejected", "bo", T, "numbers look off", db)
    with pytest.raises(publication.NotApproved, match="rejected by bo"):
        publication.publish_approved("c1", out_dir=out, db_path=db)
    assert not (out / "c1").exists()

    later = T.replace(hour=11)
    publication.record("c1", composed.board_sha256, "approved", "ana", later, "checked", db)
    with pytest.raises(publication.NotApproved, match="not 111111111111"):
        publication.publish_approved("c1", "1" * 64, out_dir=out, db_path=db)  # another board than approved
    path = publication.publish_approved("c1", composed.board_sha256, out_dir=out, db_path=db)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == composed.board_sha256

    with pytest.raises(DecisionError, match="note: missing"):
        publication.record("c1", composed.board_sha256, "approved", "ana", later.replace(hour=12), "", db)


def test_changes_say_what_publishing_would_change() -> None:
    rows = [
        {"agent_id": "a1", "board_score": 90.0, "rank": 1, "sets_under_review": 1},
        {"agent_id": "a3", "board_score": 70.0, "rank": 2, "sets_under_review": 0},
    ]
    previous = {
        "rows": [
            {"agent_id": "a1", "board_score": 85.0, "rank": 2, "sets_under_review": 2},
            {"agent_id": "a2", "board_score": 88.0, "rank": 1, "sets_under_review": 0},
        ]
    }
    agents = [
        publication.AgentChange(
            r["agent_id"],
            r["board_score"],
            previous["rows"][0]["board_score"] if r["agent_id"] == "a1" else None,
            r["rank"],
            2 if r["agent_id"] == "a1" else None,
            r["sets_under_review"],
            2 if r["agent_id"] == "a1" else None,
        )
        for r in rows
    ]
    changes = publication.Changes(
        "c1",
        False,
        added=["a3"],
        removed=["a2"],
        agents=agents,
        excluded=[
            {
                "project_id": "p9",
                "status": "environment_at_fault",
                "decided_by": "ana",
                "note": "image lacks `make`",
            }
        ],
        corrected=[
            {
                "attempt_id": "c1.board.a1.p1.a2",
                "dispute_id": "dispute-1",
                "rerun_attempt_id": "c1.board.a1.p1.a2.r1",
                "decided_by": "bo",
                "note": "stale mirror",
            }
        ],
    )
    body = publication.body_of(changes, "f" * 64)
    assert "agents added: `a3`" in body and "agents removed: `a2`" in body
    assert "Harness edition of this cycle: not recorded" in body  # a board of records before environments
    sponsored = dataclasses.replace(
        changes,
        harness_edition="2",
        sponsors=[{"agent_id": "a1", "sponsor": "Example `Cloud`", "sponsorship": "compute"}],
    )
    body_sponsored = publication.body_of(sponsored, "f" * 64)
    assert "Harness edition of this cycle: `2`." in body_sponsored
    assert "- `a1` sponsored by `Example 'Cloud'` (`compute`), shown next to its result" in body_sponsored
    assert "| `a1` | 90.00 | 85.00 | 1 | 2 | 1 | 2 |" in body
    assert "`p9`: environment at fault by `ana`: `image lacks 'make'`" in body
    assert "`c1.board.a1.p1.a2` → `c1.board.a1.p1.a2.r1`" in body and "f" * 64 in body


def test_a_correction_is_the_disputed_attempts_next_run(isolated: Path) -> None:
    from argusic.core.layout import plan_dir
    from argusic.core.spec import AttemptSpec
    from argusic.review.disputes import DisputeError, dispute_id_for
    from argusic.workflows.corrections import correction_spec

    spec = AttemptSpec(
        cycle_id="2026-12",
        agent_id="readme-runner",
        project_id="wavgen",
        repo_url="file:///r",
        commit="0" * 40,
        tier="standard",
        attempt_no=2,
    )
    plan_dir("2026-12").mkdir(parents=True)
    (plan_dir("2026-12") / f"{spec.attempt_id}.json").write_text(spec.model_dump_json())
    first = correction_spec(spec.attempt_id)
    assert (first.attempt_id, first.rerun_of) == (f"{spec.attempt_id}.r1", spec.attempt_id)
    after_invalid = correction_spec(f"{spec.attempt_id}.r1")  # the valid rerun of an invalid attempt
    assert (after_invalid.attempt_id, after_invalid.rerun_of) == (
        f"{spec.attempt_id}.r2",
        f"{spec.attempt_id}.r1",
    )
    with pytest.raises(DisputeError, match="no planned spec"):
        correction_spec("2026-12.board.readme-runner.other.a1")
    assert dispute_id_for("a", "claim", "c") == dispute_id_for(
        "a", " claim ", "c"
    )  # filed twice: one dispute


def test_marts_older_than_the_code_get_a_message_saying_to_build(tmp_path, monkeypatch):
    """A warehouse built by an earlier version (project_review without decision_note) is not a
    traceback: the command names the missing column and says to run `argusic build`."""
    import duckdb
    from argusic.cli.main import app
    from typer.testing import CliRunner

    db = tmp_path / "wh.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE SCHEMA marts")
        con.execute(
            "CREATE TABLE marts.project_review (cycle_id VARCHAR, project_id VARCHAR, under_review BOOLEAN)"
        )
    monkeypatch.setenv("ARGUSIC_WAREHOUSE", str(db))
    result = CliRunner().invoke(app, ["review", "list"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "predate this version" in said and "argusic build" in said, said


def test_the_approval_form_gives_pass_rates_reasons_for_every_dash_and_the_preview() -> None:
    """Issue 29, point 7: each agent's pass rate with its failures, timeouts and invalid attempts; the
    reason behind every score shown as "—"; a link to the preview of the pages (an http address is a
    link, a path is text to open); and, once answered, one line saying what was recorded."""
    from argusic.orchestration.forms import recorded_line
    from argusic.review.text import Answer

    rate = {"agent_id": "a1", "passes": 2, "valid_attempts": 3, "invalid_attempts": 1, "pass_rate": 2 / 3,
            "board_score": 80.0, "failures": 1, "timeouts": 0}  # fmt: skip
    none = {**rate, "agent_id": "a2", "passes": 0, "valid_attempts": 0, "pass_rate": None, "failures": 0}

    def a_set(project: str, valid: int, invalid: int, unstable: bool, at_middle: bool, spread, review: bool):
        return {"agent_id": "a1", "project_id": project, "valid_attempts": valid, "invalid_attempts": invalid,
                "is_complete": valid == 3, "is_unstable": unstable, "unstable_counts_at_middle": at_middle,
                "spread_pct": spread, "under_review": review,
                "invalid_reasons": "container_fault" if invalid else None}  # fmt: skip

    sets = [
        a_set("p1", 2, 1, False, False, None, False),
        a_set("p2", 3, 0, True, False, 45.0, False),
        a_set("p3", 3, 0, False, False, 10.0, True),
        a_set("p4", 3, 0, True, True, 45.0, False),
    ]
    reasons = [publication.missing_reason(s) for s in sets]
    assert reasons == [
        "fewer than 3 valid attempts (2 valid, 1 invalid: container_fault)",
        "unstable: spread 45% above 30%",
        "kept out by environment review",
        None,  # counted at its middle (edition 1.6 or later)
    ]
    missing = [
        {
            "agent_id": s["agent_id"],
            "project_id": s["project_id"],
            "reason": r,
            "sealed": s["project_id"] == "p2",
        }
        for s, r in zip(sets, reasons, strict=True)
        if r
    ]
    agents = [publication.AgentChange("a1", 80.0, None, 1, None, 1, None),
              publication.AgentChange("a2", None, None, None, None, 0, None)]  # fmt: skip
    changes = publication.Changes("c1", True, agents=agents, rates=[rate, none], missing=missing)
    preview = "https://ops.example/previews/c1/ffffffffffff/site/index.html"
    body = publication.body_of(changes, "f" * 64, preview)
    assert f"[open the preview]({preview})" in body
    assert "| `a1` | 67% (2 of 3 valid) | 1 | 0 | 1 |" in body
    assert "| `a2` | — (no valid attempt) | 0 | 0 | 1 |" in body
    assert "- `a1` on `p1`: fewer than 3 valid attempts (2 valid, 1 invalid: container_fault)" in body
    assert "- `a1` on `p2` (a private project: published sealed, under a label): unstable" in body
    assert "- `a1` on `p3`: kept out by environment review" in body and "`p4`" not in body
    assert "- no board score for `a2`: none of its sets counts" in body
    on_disk = publication.body_of(changes, "f" * 64, "/srv/runs/previews/c1/ffffffffffff/site/index.html")
    assert "open the preview: `/srv/runs/previews/c1/" in on_disk  # a path: text to open, not a link
    failed = publication.body_of(changes, "f" * 64, None, "SiteError: no template")
    assert "No preview of the pages: `SiteError: no template`" in failed
    many = [{**missing[0], "project_id": f"q{n}"} for n in range(publication.MISSING_LISTED + 3)]
    long = publication.body_of(dataclasses.replace(changes, missing=many), "f" * 64)
    assert long.count("fewer than 3 valid attempts") == publication.MISSING_LISTED + 1  # listed + summed
    assert "- and 3 more sets (3 fewer than 3 valid attempts): `marts.pair_sets`" in long
    counted = publication.body_of(dataclasses.replace(changes, missing=[], rates=[]), "f" * 64)
    assert 'Every set counts: no score is "—".' in counted

    answer = Answer("Reject", "numbers look off", "ana", T)
    line = recorded_line("c1", "f" * 64, answer, "rejected")
    assert line.startswith("RECORDED: Reject (rejected) of the board of cycle c1")
    assert "by ana at 2026-12-03 10:00:00 UTC, note: 'numbers look off'; publish is skipped" in line


def test_the_bulk_judging_form_offers_choices_only_and_reads_them_whole() -> None:
    """One required choice per attempt (decision and look together, or later) and an optional note;
    anything the choice list does not offer is refused by name (an answer sent past the form)."""
    from argusic.orchestration.forms import bulk_params
    from argusic.review import judging

    params = bulk_params([{"attempt_id": "a1", "project_id": "wavgen", "attempt_label": "x board #1"}])
    assert list(params) == ["item_01", "item_01_note"]
    choice = params["item_01"].serialize()
    assert choice["value"] == "" and choice["schema"]["enum"][0] == ""  # empty: the form asks for one
    assert choice["schema"]["values_display"]["promote:2"] == "Promote, look 2 (good)"
    assert params["item_01_note"].serialize()["value"] is None  # optional
    assert judging.bulk_choice("reject:0") == ("reject", 0)
    assert judging.bulk_choice("later") is None
    for bad in ("", None, "promote:7", "promote"):
        with pytest.raises(DecisionError, match="not a choice of the bulk form"):
            judging.bulk_choice(bad)
