"""Model judges in the warehouse (issue #14, Layer 2): judgements into raw.judge_verdicts at ingest
(hostile-input checks like the hints'), and, slow, the whole path on recorded sessions: run_judge in
real containers -> argusic ingest -> dbt build -> marts.judge_panel. The sessions were written by
hand in the CLIs' formats (tests/fixtures/judging/judge_sessions/README.md): no model ran."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import duckdb
import pytest
from argusic.warehouse.load_judging import HintsIngestError, load_judgements
from argusic.warehouse.load_runs import IngestError, ingest
from argusic.warehouse.schema import migrate_judging, migrate_raw
from test_judging_judges import record_doc

REV = "5" * 64
EV = "e" * 64


def judgement_doc(attempt_id: str = "2026-12.board.claude-code.wavgen.a1", **changes) -> dict:
    doc = {
        "schema": "argusic.judgement/1", "attempt_id": attempt_id, "cycle_id": attempt_id.split(".")[0],
        "task_id": "install_and_run", "task_revision": REV, "judge_id": "judge-claude",
        "harness": "claude-code", "model": "claude-sonnet-4-5", "evidence_sha256": EV,
        "session_sha256": "f" * 64, "status": "valid", "reason": None,
        "scores": {"code_structure": 2, "logic_correctness": 1},
        "quotes": [{"criterion": "logic_correctness", "file": "artifacts/app.js", "quote": "console.warn("}],
        "summary": "fine", "replayed": True,
    }  # fmt: skip
    doc.update(changes)
    return doc


def write_judgement(folder: Path, doc: dict) -> Path:
    (folder / "judging").mkdir(parents=True, exist_ok=True)
    path = folder / "judging" / f"{doc['judge_id']}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def con(tmp_path: Path):
    with duckdb.connect(str(tmp_path / "w.duckdb")) as connection:
        migrate_raw(connection)
        yield connection


def rows(con) -> list[tuple]:
    return con.execute(
        "SELECT judge_id, status, scores_json, quotes_json, replayed FROM raw.judge_verdicts ORDER BY ALL"
    ).fetchall()


def test_judgements_load_keyed_and_idempotent(con, tmp_path: Path) -> None:
    migrate_judging(con)
    path = write_judgement(tmp_path / "a1", judgement_doc())
    assert load_judgements(con, [path]) == 1
    ((judge, status, scores, quotes, replayed),) = rows(con)
    assert (judge, status, replayed) == ("judge-claude", "valid", True)
    assert json.loads(scores) == {"code_structure": 2, "logic_correctness": 1}
    assert json.loads(quotes)[0]["file"] == "artifacts/app.js"
    assert load_judgements(con, [path, path]) == 0
    write_judgement(tmp_path / "a1", judgement_doc(summary="changed"))
    assert load_judgements(con, [path]) == 1 and len(rows(con)) == 1
    other = write_judgement(tmp_path / "b", judgement_doc(evidence_sha256="d" * 64))
    assert load_judgements(con, [other]) == 1 and len(rows(con)) == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"schema": "argusic.judgement/2"}, "schema"),
        ({"extra": 1}, "extra"),
        ({"scores": {"code_structure": 3}}, "scores.code_structure"),
        ({"scores": {"code_structure": "2"}}, "scores.code_structure"),
        ({"status": "maybe"}, "status"),
        ({"status": "refused"}, "reason: a refused judgement has a reason"),
        ({"reason": "x"}, "reason: a valid judgement has no reason"),
        ({"cycle_id": "2027-01"}, "cycle_id"),
        ({"quotes": [{"criterion": "x", "file": "f", "quote": "q" * 501}]}, "quotes.0.quote"),
        ({"summary": "s" * 2001}, "summary"),
        ({"evidence_sha256": "nope"}, "evidence_sha256"),
    ],
)
def test_a_bad_judgement_is_refused_naming_file_and_field(
    con, tmp_path: Path, change: dict, words: str
) -> None:
    path = write_judgement(tmp_path / "bad", judgement_doc(**change))
    with pytest.raises(HintsIngestError) as err:
        load_judgements(con, [path])
    assert str(path) in str(err.value) and words in str(err.value), str(err.value)
    assert rows(con) == []


def test_hostile_judgement_files(con, tmp_path: Path) -> None:
    big = write_judgement(tmp_path / "big", judgement_doc())
    big.write_bytes(b" " * ((1 << 20) + 1))
    with pytest.raises(HintsIngestError, match="refused unread"):
        load_judgements(con, [big])
    renamed = tmp_path / "r" / "judging" / "judge-codex.json"
    renamed.parent.mkdir(parents=True)
    renamed.write_text(json.dumps(judgement_doc()))
    with pytest.raises(HintsIngestError, match="judge_id: 'judge-claude' is not the file's name"):
        load_judgements(con, [renamed])
    (tmp_path / "nan" / "judging").mkdir(parents=True)
    (tmp_path / "nan" / "judging" / "judge-claude.json").write_text('{"schema": NaN}')
    with pytest.raises(HintsIngestError, match="not strict JSON"):
        load_judgements(con, [tmp_path / "nan" / "judging" / "judge-claude.json"])


def judged_record(base: dict, purpose: str = "board") -> dict:
    """The conftest record (evidence in the test's store) as made by the claude-code agent."""
    doc = copy.deepcopy(base)
    ours = record_doc(purpose)
    for key in ("attempt_id", "agent_id", "project_id", "harness", "model", "purpose"):
        doc[key] = ours[key]
    return doc


def test_ingest_loads_judgements_beside_records_only(record_doc, isolated: Path) -> None:
    doc = judged_record(record_doc)
    folder = isolated / "runs" / doc["cycle_id"] / doc["attempt_id"]
    folder.mkdir(parents=True)
    (folder / "run_record.json").write_text(json.dumps(doc))
    write_judgement(folder, judgement_doc(doc["attempt_id"]))
    write_judgement(folder, judgement_doc(doc["attempt_id"], judge_id="judge-codex", harness="codex"))
    write_judgement(folder / "out", judgement_doc(doc["attempt_id"], judge_id="judge-claude-2"))  # agent's
    result = ingest([isolated / "runs"])
    assert (result.inserted, result.judgements) == (1, 2)
    assert ingest([isolated / "runs"]).judgements == 0
    write_judgement(folder, judgement_doc("2026-12.board.other.wavgen.a1", judge_id="judge-claude-2"))
    with pytest.raises(IngestError, match=r"judge-claude-2.json: invalid judgement: attempt_id: .*beside"):
        ingest([isolated / "runs"])
    (folder / "judging" / "judge-claude-2.json").unlink()
    (folder / "judging" / "judge-claude-2.json").symlink_to(folder / "judging" / "judge-claude.json")
    with pytest.raises(IngestError, match="symbolic link"):
        ingest([isolated / "runs"])


# --- the whole path, slow: real containers, ingest, dbt build ------------------------------------------


def _docker_ready() -> bool:
    try:
        from argusic.core.settings import agents_image

        import docker

        docker.from_env().images.get(agents_image())
        return True
    except Exception:
        return False


# The whole path through real containers, ingest and dbt is tests/review/test_judging_story.py (the same
# three recorded panels, with the hints and a person's review beside them).
