"""The three layers of judging on the same fixture attempts, end to end (issue #14, seed 004):
Layer 1 hints computed with real Chromium in the render container, Layer 2 judges replaying recorded
sessions in real containers (no model), `argusic ingest`, dbt, the review queue, a person's review
recorded through the CLI's own function, dbt again, and the divergence marker. `pytest -s` prints
the table the closing note of issue #14 reports."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from argusic.judging import judges as J
from argusic.judging.hints import hints_for_attempt
from argusic.review.judging import decide
from argusic.warehouse.expectations.suites import SUITES
from argusic.warehouse.expectations.validate import validate_warehouse
from argusic.warehouse.load_runs import ingest
from conftest import dbt_build_copy
from test_judging_judges import HTML, SESSIONS, make_attempt
from test_judging_panel import _docker_ready, judged_record

# attempt -> (extra pages landed beside the clean index.html, the recorded judge panel, the person's review)
FIXTURES = {
    "a1": (
        {},
        {"judge-claude": "claude_agree.jsonl", "judge-codex": "codex_disagree_zero.jsonl",
         "judge-claude-2": "claude2_agree.jsonl"},
        {"look": 2, "decision": "promote", "code_structure": 1, "logic_correctness": 2},
    ),
    "a2": (
        {"errors.html": "console_errors.html"},
        {"judge-claude": "claude_off_rails.jsonl", "judge-codex": "codex_agree.jsonl",
         "judge-claude-2": "claude2_agree.jsonl"},
        {"look": 1, "decision": "reject", "code_structure": 2, "logic_correctness": 2},
    ),
    "a3": (
        {"loop.html": "loop_forever.html"},
        {"judge-claude": "claude_no_verdict.jsonl", "judge-codex": "codex_agree.jsonl",
         "judge-claude-2": "claude_no_quote.jsonl"},
        {"look": 0, "decision": "reject"},
    ),
}  # fmt: skip


# the agent's session (Layer 1 agent logic): in order (1), README read last (0.5), none (unavailable)
AGENT_SESSIONS = {
    "a1": HTML.parent.parent / "sessions" / "claude_code" / "normal.jsonl",
    "a2": HTML.parent / "claude_code_read_last.jsonl",
}


def _render_ready() -> bool:
    try:
        from argusic.judging.render import render_image

        import docker

        docker.from_env().images.get(render_image())
        return True
    except Exception:
        return False


def _rows(db: Path, sql: str) -> dict[str, dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return {re.sub(r".*\.", "", r[0]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}


@pytest.mark.slow
def test_three_layers_on_fixture_attempts(record_doc, isolated: Path, tmp_path: Path) -> None:
    if not (_docker_ready() and _render_ready()):
        pytest.skip("Docker, the agents image or the render image is not available")
    runs = isolated / "runs"
    ids, statuses = {}, {}
    for no, (pages, panel, _) in FIXTURES.items():
        doc = judged_record(record_doc)
        doc["attempt_id"] = doc["attempt_id"].replace(".a1", f".{no}")
        doc["attempt_no"] = int(no[1:])
        ids[no] = doc["attempt_id"]
        attempt = make_attempt(runs, doc)
        for name, fixture in pages.items():
            shutil.copy(HTML / fixture, attempt / "out" / "artifacts" / name)
        if no in AGENT_SESSIONS:  # the agent's own Claude Code session: the tool-order hint
            shutil.copy(AGENT_SESSIONS[no], attempt / "out" / "session.jsonl")
        hints_for_attempt(attempt)  # Layer 1: real Chromium, networking off
        written = J.judge_attempt(
            attempt, list(panel), {j: SESSIONS / f for j, f in panel.items()}
        )  # Layer 2
        for path in written:
            judged = json.loads(path.read_text())
            statuses[(no, judged["judge_id"])] = judged["status"]
            assert judged["replayed"] is True
            assert judged["harness"] == J.JUDGES[judged["judge_id"]].harness_name
        assert (attempt / "judging/sessions/judge-codex/last_message.txt").is_file()
    # a2's judge-claude scores 0 on a quote that is not in the evidence; a3's judge-claude-2 scores low
    # without a quote; a3's judge-claude ends with no final message
    assert statuses == {
        ("a1", "judge-claude"): "valid", ("a1", "judge-codex"): "valid", ("a1", "judge-claude-2"): "valid",
        ("a2", "judge-claude"): "refused", ("a2", "judge-codex"): "valid", ("a2", "judge-claude-2"): "valid",
        ("a3", "judge-claude"): "no_verdict", ("a3", "judge-codex"): "valid",
        ("a3", "judge-claude-2"): "refused",
    }  # fmt: skip
    result = ingest([runs])
    assert (result.inserted, result.hints, result.judgements) == (3, 3, 9)
    db = Path(os.environ["ARGUSIC_WAREHOUSE"])
    dbt_build_copy(db, tmp_path / "dbt")

    panel = _rows(db, "SELECT * FROM marts.judge_panel ORDER BY attempt_id")
    # the panel as built passes its GX suite (every expectation evaluated, on its three rows)
    report = validate_warehouse(db)
    checked = report.tables["judge_panel"]
    assert report.success, report.summary()
    assert checked.rows == 3 and checked.evaluated == len(SUITES["judge_panel"]) and not checked.skipped
    a1, a2, a3 = panel["a1"], panel["a2"], panel["a3"]
    # a1: code_structure 2, 0, 2 -> 2; logic_correctness 2, 0, 1 -> 1; 2 vs 0: the judges disagree
    assert (a1["status"], a1["judges"], a1["valid_judges"], a1["refused_judges"]) == ("judged", 3, 3, 0)
    assert (a1["code_structure_median"], a1["logic_correctness_median"], a1["judges_total"]) == (
        2.0,
        1.0,
        3.0,
    )
    assert (a1["code_structure_spread"], a1["logic_correctness_spread"], a1["judges_disagree"]) == (
        2,
        2,
        True,
    )
    # a2: the off-the-rails judge is refused and left out of the median: 2/2 and 2/1
    assert (a2["status"], a2["valid_judges"], a2["refused_judges"]) == ("judged", 2, 1)
    assert (a2["code_structure_median"], a2["logic_correctness_median"], a2["judges_total"]) == (
        2.0,
        1.5,
        3.5,
    )
    assert a2["judges_disagree"] is False and a2["judges_total_max"] == 4
    # a3: one valid judge only
    assert (a3["status"], a3["judges"], a3["valid_judges"], a3["refused_judges"]) == (
        "insufficient_judges", 3, 1, 1,
    )  # fmt: skip
    assert a3["judges_total"] is None and a3["judges_disagree"] is False
    queue = _rows(db, "SELECT * FROM marts.review_queue ORDER BY attempt_id")
    hints = _rows(db, "SELECT * FROM marts.attempt_hints ORDER BY attempt_id")
    assert {no: hints[no]["rendering_score"] for no in FIXTURES} == {"a1": 1.0, "a2": 0.5, "a3": 0.0}
    assert {no: hints[no]["agent_logic_score"] for no in FIXTURES} == {"a1": 1.0, "a2": 0.5, "a3": None}
    # a1: its judges disagree 2 vs 0; a3: one valid judge only, with an artifact to judge
    assert queue["a1"]["rule_judges_disagree"] and queue["a3"]["rule_insufficient_judges"]
    assert {q["review_status"] for q in queue.values()} == {"awaiting"}
    # a2: judged (2 of 3 valid), no disagreement, no hint at 0: no rule selects it, but it is in the
    # queue all the same (issue #31: the rules order the queue, they exclude nothing)
    assert (queue["a2"]["is_selected"], queue["a2"]["reasons"]) == (False, "")

    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    for no, (_, _, review) in FIXTURES.items():
        attempt_id = ids[no]
        scores = {k: review.get(k) for k in ("code_structure", "logic_correctness")}
        assert decide(attempt_id, review["look"], review["decision"], "ana", at, "looked at it", **scores)
    dbt_build_copy(db, tmp_path / "dbt2")

    panel = _rows(db, "SELECT * FROM marts.judge_panel ORDER BY attempt_id")
    divergence = _rows(db, "SELECT * FROM marts.judging_review_divergence ORDER BY attempt_id")
    queue = _rows(db, "SELECT * FROM marts.review_queue ORDER BY attempt_id")
    assert {q["review_status"] for q in queue.values()} == {"reviewed"}
    # the divergence marker as built passes its GX suite, on the three reviews
    report = validate_warehouse(db)
    checked = report.tables["judging_review_divergence"]
    assert report.success, report.summary()
    assert checked.rows == 3 and checked.evaluated == len(SUITES["judging_review_divergence"])
    assert not checked.skipped
    # a1: person 1/2 against medians 2/1 -> gaps -1 and +1, the tie goes to code_structure: judges higher
    assert (divergence["a1"]["divergence"], divergence["a1"]["divergence_direction"]) == (
        -1.0,
        "judges_higher",
    )
    assert divergence["a1"]["total_gap"] == 0.0
    # a2: person 2/2 against 2/1.5 (the off-the-rails judge left out) -> +0.5, person higher
    assert (divergence["a2"]["divergence"], divergence["a2"]["divergence_direction"]) == (
        0.5,
        "person_higher",
    )
    # a3: the person scored no criterion (and the judges could not)
    assert divergence["a3"]["divergence_direction"] == "not_scored"

    print("\n| attempt | needles | rendering | agent logic | judges (valid/all) | medians structure/logic |"
          " judges' total | queued because | look | decision | person structure/logic | divergence |"
          " total gap |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for no in FIXTURES:
        h, p, q, d = hints[no], panel[no], queue.get(no), divergence[no]
        reasons = "not queued (reviewed from the CLI)" if q is None else q["reasons"]
        reasons = reasons if isinstance(reasons, str) else ", ".join(reasons)
        needles = h["needles_status"] if h["needles_score"] is None else h["needles_score"]
        logic = h["agent_logic_status"] if h["agent_logic_score"] is None else h["agent_logic_score"]
        print(
            f"| {no} | {needles} | {h['rendering_score']} | {logic} "
            f"| {p['valid_judges']}/{p['judges']} ({p['status']}) "
            f"| {p['code_structure_median']}/{p['logic_correctness_median']} | {p['judges_total']} "
            f"| {reasons} | {d['look']} | {d['decision']} "
            f"| {d['person_code_structure']}/{d['person_logic_correctness']} "
            f"| {d['divergence']} ({d['divergence_direction']}) | {d['total_gap']} |"
        )  # fmt: skip
