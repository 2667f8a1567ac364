from __future__ import annotations

import pytest
from argusic.record import RecordError, parse_record


def test_valid_record_round_trips(record_doc):
    record = parse_record(record_doc)
    again = parse_record(record.to_json())
    assert again == record
    assert again.report.errors_fixed == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("cycle_id"), "cycle_id"),
        (lambda d: d.update(tier="huge"), "tier"),
        (lambda d: d.update(purpose="fun"), "purpose"),
        (lambda d: d.update(started_at="2026-12-02T10:00:00"), "started_at"),
        (lambda d: d.update(ended_at="2026-12-02T09:00:00Z"), "ended_at is before started_at"),
        (lambda d: d["evidence"]["log"].update(sha256="xyz"), "evidence.log.sha256"),
        (lambda d: d["report"].update(test_depth="tier0"), "report.test_depth"),
        (lambda d: d["report"].update(errors_encountered=-1), "report.errors_encountered"),
        (lambda d: d.update(schema="argusic.run_record/2"), "schema"),
        (lambda d: d.update(surprise=1), "surprise"),
        (lambda d: d.update(end_reason="crashed"), "end_reason"),
        (lambda d: d.update(usage={"cost_usd": {"value": 1.0, "status": "unavailable"}}), "usage.cost_usd"),
    ],
)
def test_bad_record_is_refused_naming_the_field(record_doc, change, field):
    change(record_doc)
    with pytest.raises(RecordError) as err:
        parse_record(record_doc, source="r.json")
    assert field in str(err.value)
    assert str(err.value).startswith("r.json: invalid run record")


def test_more_fixed_than_encountered_is_kept_for_scoring_to_reject(record_doc):
    record_doc["report"]["errors_fixed"] = 5
    assert parse_record(record_doc).report.errors_fixed == 5
