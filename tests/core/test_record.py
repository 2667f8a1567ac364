from __future__ import annotations

import json

import pytest
from argusic.core.record import RecordError, parse_record


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


# -- hostile ids: the attempt id grammar and its agreement with the fields ---------------------------
BASE_ID = "2026-12.board.readme-runner.wavgen.a1"


@pytest.mark.parametrize(
    ("attempt_id", "why"),
    [
        ("../../etc/passwd", "does not follow"),
        ("2026-12.board.readme-runner.wav/gen.a1", "does not follow"),
        ("2026-12.board.readme runner.wavgen.a1", "does not follow"),
        ("2026-12.board.readme-runner.wavgen.a1\n", "does not follow"),
        ("2026-12.board.readme-runner.wavgen", "does not follow"),
        ("2026-12.board.readme-runner.wavgen.a0", "does not follow"),
        ("2026-12.board.readme-runner.wavgen.a01", "does not follow"),
        ("2026-12.board.readme-runner.wavgen.a1.r0", "does not follow"),
        ("2026-12.board.readme-runner.wavgen.a1.x", "does not follow"),
        ("x.a2", "does not follow"),
        ("", "does not follow"),
        ("2026-12.board.readme-runner.üñí.a1", "does not follow"),
    ],
)
def test_attempt_id_outside_the_grammar_is_refused(record_doc, attempt_id, why):
    record_doc["attempt_id"] = attempt_id
    with pytest.raises(RecordError) as err:
        parse_record(record_doc, source="r.json")
    assert f"attempt_id: {attempt_id!r}"[:40] in str(err.value) and why in str(err.value)


@pytest.mark.parametrize(
    ("attempt_id", "field"),
    [
        ("2026-11.board.readme-runner.wavgen.a1", "cycle_id"),
        ("2026-12.verdict.readme-runner.wavgen.a1", "purpose"),
        ("2026-12.board.codex.wavgen.a1", "agent_id"),
        ("2026-12.board.readme-runner.csvkit.a1", "project_id"),
        ("2026-12.board.readme-runner.wavgen.a2", "attempt_no"),
    ],
)
def test_attempt_id_must_agree_with_the_fields(record_doc, attempt_id, field):
    record_doc["attempt_id"] = attempt_id
    with pytest.raises(RecordError) as err:
        parse_record(record_doc, source="r.json")
    message = str(err.value)
    assert message.startswith("r.json: invalid run record: attempt_id")
    assert f"says {field}" in message and f"the record's {field}" in message


@pytest.mark.parametrize("field", ["cycle_id", "agent_id", "project_id"])
@pytest.mark.parametrize("value", ["../x", "a/b", "a.b", "a b", "", "x" * 129, "a\x00b"])
def test_id_parts_follow_the_part_grammar(record_doc, field, value):
    record_doc[field] = value
    with pytest.raises(RecordError, match=rf"{field}: .*is not an id part"):
        parse_record(record_doc)


def test_rerun_suffix_agrees_with_rerun_of(record_doc):
    # a first attempt with a rerun_of, and a rerun pointing at another attempt, are refused
    with pytest.raises(RecordError, match="has no .r<n> suffix"):
        parse_record(dict(record_doc, rerun_of=BASE_ID))
    second = dict(record_doc, attempt_id=f"{BASE_ID}.r2")
    with pytest.raises(RecordError, match=rf"rerun 2 reruns '{BASE_ID}.r1'"):
        parse_record(dict(second, rerun_of=BASE_ID))
    with pytest.raises(RecordError, match="rerun_of: .*does not follow"):
        parse_record(dict(second, rerun_of="../../etc/passwd"))
    assert parse_record(dict(second, rerun_of=f"{BASE_ID}.r1")).rerun_of == f"{BASE_ID}.r1"
    assert parse_record(dict(record_doc, attempt_id=f"{BASE_ID}.r1", rerun_of=BASE_ID)).rerun_of == BASE_ID
    # rerun_of is optional: a rerun's id without it is accepted (the suffix still follows the grammar)
    assert parse_record(dict(record_doc, attempt_id=f"{BASE_ID}.r1")).attempt_id == f"{BASE_ID}.r1"


def test_attempt_spec_ids_make_records_that_parse():
    from argusic.core.record import parse_attempt_id
    from argusic.core.spec import AttemptSpec
    from pydantic import ValidationError

    spec = AttemptSpec(
        cycle_id="2026-12-demo", agent_id="readme-runner", project_id="wav_gen", repo_url="/r",
        commit="0" * 40, tier="standard", attempt_no=3,
    )  # fmt: skip
    again = spec.rerun().rerun()
    assert parse_attempt_id(again.attempt_id) == {
        "cycle_id": "2026-12-demo", "purpose": "board", "agent_id": "readme-runner",
        "project_id": "wav_gen", "attempt_no": 3, "rerun_no": 2,
    }  # fmt: skip
    assert again.rerun_of == f"{spec.attempt_id}.r1"
    with pytest.raises(ValidationError, match="not an id part"):
        AttemptSpec(**dict(spec.model_dump(), project_id="../../etc"))


# -- record files: size first, then a capped read, strict UTF-8, JSON; every refusal names the file --
def test_oversized_record_is_refused_unread(tmp_path, record_doc):
    from argusic.core.record import MAX_RECORD_BYTES, load_record_file

    path = tmp_path / "run_record.json"
    with open(path, "w") as handle:  # a valid record, 200 MB of it in one field
        text = json.dumps(record_doc)
        head, tail = text.split('"final_state": "', 1)
        handle.write(head + '"final_state": "')
        handle.write(("x" * (1 << 20)) * 200)
        handle.write(tail)
    assert path.stat().st_size > 200 * (1 << 20)
    with pytest.raises(RecordError) as err:
        load_record_file(path)
    assert str(err.value) == (
        f"{path}: a run record is at most {MAX_RECORD_BYTES} bytes; this file has {path.stat().st_size}: "
        "refused unread"
    )


def test_record_at_the_cap_is_read_and_one_byte_more_is_not(tmp_path, record_doc):
    from argusic.core.record import MAX_RECORD_BYTES, load_record_file

    text = json.dumps(record_doc)
    padded = text[:-1] + " " * (MAX_RECORD_BYTES - len(text.encode())) + "}"
    path = tmp_path / "run_record.json"
    path.write_text(padded)
    assert path.stat().st_size == MAX_RECORD_BYTES
    assert load_record_file(path).attempt_id == record_doc["attempt_id"]
    path.write_text(padded + " ")
    with pytest.raises(RecordError, match="refused unread"):
        load_record_file(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"schema": "argusic.run_record/1", "final_state": "caf\xe9"}', "not UTF-8 (byte 54 is 0xe9)"),
        (b"\xff\xfe{\x00}\x00", "not UTF-8 (byte 0 is 0xff)"),
        (b'{"schema": "argusic.run_record/1", "attempt_id": "2026-12.bo', "not JSON: Unterminated string"),
        (b"", "not JSON: Expecting value"),
        (b"[1, 2]", "(document): a JSON object is expected"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    ],
)
def test_unreadable_record_files_are_named_not_tracebacks(tmp_path, content, message):
    from argusic.core.record import load_record_file

    path = tmp_path / "x.record.json"
    path.write_bytes(content)
    with pytest.raises(RecordError) as err:
        load_record_file(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)


def test_links_and_fifos_are_not_read_as_records(tmp_path, record_doc):
    import os

    from argusic.core.record import load_record_file

    target = tmp_path / "real.json"
    target.write_text(json.dumps(record_doc))
    link = tmp_path / "run_record.json"
    link.symlink_to(target)
    with pytest.raises(RecordError, match="is a symbolic link"):
        load_record_file(link)
    fifo = tmp_path / "fifo.record.json"
    os.mkfifo(fifo)  # opening a FIFO for reading would block: it is refused at once
    with pytest.raises(RecordError, match="not a regular file"):
        load_record_file(fifo)


def test_agent_texts_are_cut_so_no_record_outgrows_the_cap(tmp_path, record_doc) -> None:
    """A hostile agent's 450 KB final_state must not push its record over MAX_RECORD_BYTES (that would
    refuse its whole cycle's ingest batch): the record keeps the start and says how much was cut."""
    from argusic.attempts.common import _read_report
    from argusic.core.record import LABEL_MAX, REPORT_TEXT_MAX, bound_texts

    huge = "x" * 450_000  # both fields together stay under the 1 MiB report cap
    report = dict(record_doc["report"], final_state=huge, verified_how=huge)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    read, problem = _read_report(path)
    assert problem is None
    assert len(read["final_state"]) <= REPORT_TEXT_MAX and read["final_state"].endswith("characters cut]")
    assert "442040 characters cut" in read["final_state"]  # how much was cut is said

    doc = dict(record_doc, report=report, harness={"name": "n" * 5000, "version": "1"})
    record = parse_record(bound_texts(doc))
    assert len(record.to_json()) < 40_000 and len(record.harness.name) <= LABEL_MAX
    with pytest.raises(RecordError, match="report.final_state"):
        parse_record(doc)  # uncut, the contract refuses it by name
