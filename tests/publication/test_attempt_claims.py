"""The run page shows the agent's claim beside what the harness observed, and the seal (issue #25)."""

from __future__ import annotations

import copy

from argusic.core.record import RunRecord
from argusic.publication.attempt_page import observed_rows
from conftest import VALID_RECORD


def record(**parts) -> RunRecord:
    return RunRecord.model_validate(copy.deepcopy(VALID_RECORD) | {"methodology_version": "1.7"} | parts)


def test_a_claim_the_session_log_does_not_show_is_shown_beside_it() -> None:
    rows = dict(
        observed_rows(
            record(
                observed={"source": "session_log", "install_ok": True, "ran_ok": True,
                          "errors_encountered": 3, "errors_fixed": 1, "verified": False,
                          "commands_run": 9, "commands_failed": 3},
                seal={"status": "intact"},
            )
        )
    )  # fmt: skip
    assert rows["observed: from"] == "the CLI's session log"
    assert rows["observed: errors fixed"] == "1 of 3 encountered"  # the report claims 1 of 2
    assert rows["observed: verification ran and succeeded"] == "no"
    assert rows["seal"].startswith("intact")


def test_a_replaced_report_and_an_older_record_say_so() -> None:
    rows = dict(
        observed_rows(
            record(
                observed={"source": "harness", "install_ok": True, "ran_ok": False, "errors_encountered": 0,
                          "errors_fixed": 0, "verified": False},
                seal={"status": "altered", "altered": ["report.json"], "report_replaced": True},
            )
        )
    )  # fmt: skip
    assert rows["observed: from"] == "its own commands" and rows["observed: installed / ran"] == "yes / no"
    assert "report.json" in rows["seal"] and "report.landed.json" in rows["seal"]
    old = dict(observed_rows(RunRecord.model_validate(copy.deepcopy(VALID_RECORD))))
    assert "predates observations" in old["observed"] and "seal" not in old
