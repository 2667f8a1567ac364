"""A run's attempts at a glance (issue 29, point 2): each ended attempt's label gives its outcome as the
rubric will class it (marts.attempt_scores.outcome: pass, fail, timeout, invalid), and the run's
tally counts them, listing what went wrong first. Read from the records alone; dbt decides scores."""

from __future__ import annotations

import copy

import pytest
from argusic.core.layout import attempt_dir
from argusic.core.record import RunRecord
from argusic.core.spec import read_spec
from argusic.cycle.plan import write_plan
from argusic.cycle.tally import (
    FAIL,
    INVALID,
    PASS,
    TIMEOUT,
    CycleTally,
    glance_label,
    outcome_of,
    tally_plan,
)
from conftest import VALID_RECORD, write_record
from test_cycle import _pool

OBSERVED_ALL = {"source": "harness", "install_ok": True, "ran_ok": True, "verified": True}


def _record(**changes) -> RunRecord:
    doc = copy.deepcopy(VALID_RECORD)
    report = changes.pop("report", None)
    if report is not None:
        doc["report"] = None if report == "none" else doc["report"] | report
    return RunRecord.model_validate(doc | changes)


CASES = [  # (what, record changes, outcome, the words the story gives, the label's end)
    ("verified for real", {}, PASS, "✓ ran, verified for real", "✓ PASS: ran, verified for real"),
    ("verified with mocks", {"report": {"test_depth": "tier2_mock"}}, PASS, "✓ ran, verified with mocks",
     "✓ PASS: ran, verified with mocks"),
    ("install failed", {"report": {"install_ok": False, "ran_ok": False}}, FAIL, "✗ install failed",
     "✗ FAIL: install failed"),
    ("did not run", {"report": {"ran_ok": False}}, FAIL, "✗ installed, did not run",
     "✗ FAIL: installed, did not run"),
    ("not verified", {"report": {"test_depth": "tier3_none"}}, FAIL, "✗ ran, not verified",
     "✗ FAIL: ran, not verified"),
    ("timeout", {"end_reason": "timeout", "report": "none"}, TIMEOUT, "✗ timeout at 5400 s",
     "✗ TIMEOUT at 5400 s"),
    ("invalid", {"invalid_reason": "executor error: no python3", "end_reason": "harness_error",
                 "report": "none"}, INVALID, "INVALID: executor error: no python3",
     "INVALID: executor error: no python3"),
    ("cut in its container (1.6)", {"methodology_version": "1.6", "end_reason": "harness_error",
                                    "container_fault": "harness exited with code 137", "report": "none"},
     FAIL, "✗ cut short in its container: harness exited with code 137",
     "✗ FAIL: cut short in its container: harness exited with code 137"),
    ("more fixed than met (1.6)", {"methodology_version": "1.6", "report": {"errors_fixed": 3}}, FAIL,
     "✓ ran, verified for real",
     "✗ FAIL: report rejected, more errors fixed than encountered (claimed: ran, verified for real)"),
    # from edition 1.7 a claim earns only what the harness observed (int_attempt_scores.sql)
    ("claim observed (1.7)", {"methodology_version": "1.7", "observed": OBSERVED_ALL}, PASS,
     "✓ ran, verified for real", "✓ PASS: ran, verified for real"),
    ("claim not observed (1.7)", {"methodology_version": "1.7",
                                  "observed": OBSERVED_ALL | {"verified": False}}, FAIL,
     "✓ ran, verified for real",
     "✗ FAIL: not shown by the harness's observation (claimed: ran, verified for real)"),
    ("no observation (1.7)", {"methodology_version": "1.7"}, FAIL, "✓ ran, verified for real",
     "✗ FAIL: not shown by the harness's observation (claimed: ran, verified for real)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "outcome", "words", "end"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_label_gives_the_outcome_the_rubric_will_give(changes, outcome, words, end) -> None:
    record = _record(**changes)
    identity = "readme-runner / wavgen / attempt 1"
    assert outcome_of(record) == outcome
    label = glance_label(identity, f"{identity} · {words}", record)
    # the identity first (ops search and sort by it; the cluster and verdict tests read it), then the
    # outcome in capitals
    assert label == f"{identity} · {end}"


def test_a_label_is_cut_to_airflows_column_and_the_identity_survives() -> None:
    record = _record(invalid_reason="x" * 400, end_reason="harness_error", report="none")
    identity = "readme-runner / wavgen / attempt 1 (rerun 2)"
    label = glance_label(identity, f"{identity} · INVALID: {'x' * 90}", record)
    assert len(label) <= 250 and label.startswith(f"{identity} · INVALID: xxx")


def test_the_summary_counts_each_outcome_once() -> None:
    tally = CycleTally()
    for changes, *_ in [c[1:] for c in CASES]:
        tally.add(_record(**changes))
    assert tally.counts() == {FAIL: 7, TIMEOUT: 1, INVALID: 1, PASS: 3}
    assert tally.summary() == "12 attempts: 3 pass · 7 fail · 1 timeout · 1 invalid"


def test_the_plans_tally_lists_failures_first_and_attempts_without_a_record(isolated, record_doc) -> None:
    paths = write_plan(_pool(isolated, 4), ["readme-runner"], attempts_per_pair=1)
    specs = [read_spec(p) for p in paths]

    def record(spec, **changes) -> None:
        doc = copy.deepcopy(record_doc) | {"attempt_id": spec.attempt_id, "project_id": spec.project_id}
        write_record(attempt_dir(spec), doc | changes)

    record(specs[0])
    record(specs[1], report=record_doc["report"] | {"install_ok": False, "ran_ok": False})
    # invalid, then valid on its rerun: counted once, by the rerun
    record(specs[2], invalid_reason="harness exited with code 3", end_reason="harness_error", report=None)
    rerun = specs[2].rerun()
    record(rerun, end_reason="timeout", report=None, rerun_of=specs[2].attempt_id)
    # specs[3]: its task failed before measuring: no record

    plan = tally_plan(paths)
    assert plan.counts() == {"planned": 4, FAIL: 1, TIMEOUT: 1, INVALID: 0, PASS: 1, "without_record": 1}
    assert plan.summary() == "4 attempts: 1 pass · 1 fail · 1 timeout · 0 invalid · 1 without a record"
    lines = plan.lines()
    assert lines[0] == plan.summary()
    assert lines[1:] == [
        "FAIL (1):",
        f"   {specs[1].label} · ✗ FAIL: install failed",
        "TIMEOUT (1):",
        f"   {specs[2].label} · ✗ TIMEOUT at 5400 s",
        "WITHOUT A RECORD (1):",
        f"   {specs[3].label} · no run record (its task did not measure it)",
        "PASS (1):",
        f"   {specs[0].label} · ✓ PASS: ran, verified for real",
    ]
