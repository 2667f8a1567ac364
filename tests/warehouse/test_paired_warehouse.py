"""Paired patch reviews in the warehouse (issue #31): the review document of three scripted judges
loaded into raw.paired_judgements and raw.paired_bugs (argusic.warehouse.load_paired), a person's
re-check of each bug recorded in decisions.paired_bug_checks (argusic.review.paired, as the form
does), and, slow, dbt's staging and marts.paired_review built on them (medians, bugs confirmed).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from argusic.judging import paired as P
from argusic.review import paired as review
from argusic.warehouse.decisions import DecisionError
from argusic.warehouse.load_judging import HintsIngestError
from argusic.warehouse.load_paired import ingest_paired, review_files
from conftest import dbt_build_copy
from test_paired_review import BASE_DIV, DEBUG, JUDGES, final_text_runner, scripts, the_pair

AT = datetime(2026, 12, 3, 11, 0, 0)


def reviewed(root: Path) -> tuple[P.Pair, dict, Path]:
    """One pair judged by the three scripted judges (two valid, one refused), its review written under
    ``<root>/runs/paired`` (the pairs folder of ``isolated``)."""
    pair = the_pair()
    made = scripts(root, pair)
    doc, path = P.judge_pair(
        pair, JUDGES, root / "runs" / "paired", final_text_runner(made),
        base_files={"calc/div.py": BASE_DIV}, pairs_dir=root / "runs" / "paired",
    )  # fmt: skip
    return pair, doc, path


def _q(db: Path, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def test_a_review_is_loaded_once_and_a_changed_one_replaces_it(isolated: Path) -> None:
    pair, doc, path = reviewed(isolated)
    db = isolated / "warehouse" / "argusic.duckdb"
    assert review_files(isolated / "runs" / "paired") == [path]
    assert ingest_paired() == 1
    assert ingest_paired() == 0  # the same document again: nothing written
    rows = _q(
        db, "SELECT judge_id, status, p_label, q_label, draw_seed FROM raw.paired_judgements ORDER BY 1"
    )
    assert [r[:2] for r in rows] == [("judge-claude", "valid"), ("judge-claude-2", "refused"),
                                     ("judge-codex", "valid")]  # fmt: skip
    assert {r[2:] for r in rows} == {(pair.p.label, pair.q.label, pair.seed)}
    bugs = _q(db, "SELECT judge_id, side, quote FROM raw.paired_bugs ORDER BY judge_id")
    debug = "P" if pair.p.patch == DEBUG else "Q"
    assert [b[:2] for b in bugs] == [("judge-claude", debug), ("judge-codex", debug)]

    changed = json.loads(path.read_text())
    changed["judgements"] = changed["judgements"][:2]
    changed["bugs"] = [b for b in changed["bugs"] if b["judge_id"] != "judge-codex"]
    path.write_text(json.dumps(changed))
    assert ingest_paired() == 1
    assert _q(db, "SELECT count(*) FROM raw.paired_judgements") == [(2,)]
    assert _q(db, "SELECT count(*) FROM raw.paired_bugs") == [(1,)]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda d: d["judgements"][0]["scores"]["P"].pop("overall"),
            "a valid judgement scores the six criteria",
        ),
        (lambda d: d["judgements"][0]["scores"]["P"].update(overall=6), "less than or equal to 5"),
        (lambda d: d["judgements"][2].update(scores={"P": {"overall": 3}}), "keeps no scores"),
        (lambda d: d["sides"]["P"].update(label="Claude Sonnet"), "sides.P.label"),
        (lambda d: d.update(pair_id="another"), "is not its folder's name"),
    ],
)
def test_a_bad_review_loads_nothing(isolated: Path, change, problem: str) -> None:
    _pair, _doc, path = reviewed(isolated)
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(HintsIngestError, match=problem.replace(".", r"\.")):
        ingest_paired()
    assert _q(isolated / "warehouse" / "argusic.duckdb", "SELECT count(*) FROM raw.paired_judgements") == [
        (0,)
    ]


def test_a_person_rechecks_each_bug_once_with_a_note(isolated: Path) -> None:
    pair, doc, _path = reviewed(isolated)
    ingest_paired()
    bugs = review.awaiting()
    assert [b.facts["judge_id"] for b in bugs] == ["judge-claude", "judge-codex"]
    body = review.body_of(bugs[0])
    side = bugs[0].facts["side"]
    assert f"patch **{side}**" in body and "if b == 0:" in body and "context folder" in body
    assert pair.p.label not in body and pair.q.label not in body  # the person sees P and Q only
    with pytest.raises(DecisionError, match="note: missing"):
        review.decide(bugs[0].bug_id, "Confirmed", "ana", AT, "")
    with pytest.raises(DecisionError, match="finding: 'maybe' is not one of"):
        review.decide(bugs[0].bug_id, "maybe", "ana", AT, "n")
    with pytest.raises(review.ReviewError, match="not in the warehouse"):
        review.decide("0" * 16, "Confirmed", "ana", AT, "n")
    assert review.decide(bugs[0].bug_id, "Confirmed", "ana", AT, "zero divisor returns 0 silently")
    assert not review.decide(bugs[0].bug_id, "Confirmed", "ana", AT, "zero divisor returns 0 silently")
    assert [b.bug_id for b in review.awaiting()] == [bugs[1].bug_id]
    assert review.decide(bugs[1].bug_id, "Not a bug", "bo", AT, "the spec allows 0 for b == 0")
    assert review.awaiting() == []
    sql = "SELECT bug_id, finding, decided_by, note FROM decisions.paired_bug_checks ORDER BY decided_by"
    rows = _q(isolated / "warehouse" / "argusic.duckdb", sql)
    assert rows == [(bugs[0].bug_id, "confirmed", "ana", "zero divisor returns 0 silently"),
                    (bugs[1].bug_id, "not_a_bug", "bo", "the spec allows 0 for b == 0")]  # fmt: skip
    journal = isolated / "runs" / "decisions" / "paired_bug_checks.jsonl"
    assert len(journal.read_text().splitlines()) == 2  # journalled first, as every decision


MODELS = ["stg_paired_judgements", "stg_paired_bugs", "paired_review"]


def dbt_build_paired(db: Path, tmp: Path) -> None:
    """`dbt build` of the paired review's models, their data tests and unit tests, on a copy."""
    res = dbt_build_copy(db, tmp, MODELS)
    kinds = [r.node.resource_type for r in res.result.results]
    assert kinds.count("unit_test") == 4 and kinds.count("model") == 3, kinds


@pytest.mark.slow
def test_the_mart_gives_medians_and_the_bugs_a_person_confirmed(isolated: Path) -> None:
    pair, doc, _path = reviewed(isolated)
    ingest_paired()
    first, second = review.awaiting()
    review.decide(first.bug_id, "Confirmed", "ana", AT, "zero divisor returns 0 silently")
    db = isolated / "warehouse" / "argusic.duckdb"
    dbt_build_paired(db, isolated / "build")
    rows = _q(
        db,
        "SELECT criterion, p_label, q_label, judges, valid_judges, p_median, q_median, status, "
        "p_bugs_reported, q_bugs_reported, p_bugs_confirmed, q_bugs_confirmed, bugs_awaiting_check "
        "FROM marts.paired_review ORDER BY criterion_order",
    )
    assert [r[0] for r in rows] == list(P.CRITERIA)
    debug = "P" if pair.p.patch == DEBUG else "Q"
    for criterion, p_label, q_label, judges, valid, p_median, q_median, status, *bugs in rows:
        assert (p_label, q_label, judges, valid, status) == (pair.p.label, pair.q.label, 3, 2, "judged")
        assert (p_median, q_median) == (doc["medians"]["P"][criterion], doc["medians"]["Q"][criterion]), (
            criterion
        )
        reported = (2, 0) if debug == "P" else (0, 2)
        confirmed = (1, 0) if debug == "P" else (0, 1)
        assert tuple(bugs) == (*reported, *confirmed, 1)
