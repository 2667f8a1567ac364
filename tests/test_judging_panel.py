"""Model judges in the warehouse (issue #14, Layer 2): judgements into raw.judge_verdicts at ingest
(hostile-input checks like the hints'), and, slow, the whole path on recorded sessions: run_judge in
real containers -> argusic ingest -> dbt build -> marts.judge_panel. The sessions were written by
hand in the CLIs' formats (tests/fixtures/judging/judge_sessions/README.md): no model ran."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from argusic.judging import judges as J
from argusic.judging.ingest import HintsIngestError, load_judgements, migrate_judging
from argusic.warehouse import IngestError, ingest, migrate_raw
from conftest import dbt_build_copy
from test_judging_judges import SESSIONS, make_attempt, record_doc

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
        from argusic.agents import agents_image

        import docker

        docker.from_env().images.get(agents_image())
        return True
    except Exception:
        return False


@pytest.mark.slow
def test_recorded_judges_through_containers_ingest_and_dbt(
    record_doc, isolated: Path, tmp_path: Path
) -> None:
    """Three attempts judged by recorded sessions in real containers (networking off, no model):
    a1 judged by three valid judges that disagree 2 vs 0; a2 by two valid judges and one refused (a
    quote that is not in the evidence); a3 by one valid, one refused (low score, no quote) and one
    with no verdict. Then argusic ingest, dbt build, marts.judge_panel."""
    if not _docker_ready():
        pytest.skip("Docker or the agents image is not available")
    runs = isolated / "runs"
    panels = {
        "a1": {"judge-claude": "claude_agree.jsonl", "judge-codex": "codex_disagree_zero.jsonl",
               "judge-claude-2": "claude2_agree.jsonl"},
        "a2": {"judge-claude": "claude_off_rails.jsonl", "judge-codex": "codex_agree.jsonl",
               "judge-claude-2": "claude2_agree.jsonl"},
        "a3": {"judge-claude": "claude_no_verdict.jsonl", "judge-codex": "codex_agree.jsonl",
               "judge-claude-2": "claude_no_quote.jsonl"},
    }  # fmt: skip
    statuses = {}
    for attempt_no, panel in panels.items():
        doc = judged_record(record_doc)
        doc["attempt_id"] = doc["attempt_id"].replace(".a1", f".{attempt_no}")
        doc["attempt_no"] = int(attempt_no[1:])
        attempt = make_attempt(runs, doc)
        written = J.judge_attempt(attempt, list(panel), {j: SESSIONS / f for j, f in panel.items()})
        for path in written:
            judged = json.loads(path.read_text())
            statuses[(attempt_no, judged["judge_id"])] = judged["status"]
            assert (
                judged["replayed"] is True and judged["harness"] == J.JUDGES[judged["judge_id"]].harness_name
            )
        assert (attempt / "judging/sessions/judge-codex/last_message.txt").is_file()
    assert statuses == {
        ("a1", "judge-claude"): "valid", ("a1", "judge-codex"): "valid", ("a1", "judge-claude-2"): "valid",
        ("a2", "judge-claude"): "refused", ("a2", "judge-codex"): "valid", ("a2", "judge-claude-2"): "valid",
        ("a3", "judge-claude"): "no_verdict", ("a3", "judge-codex"): "valid",
        ("a3", "judge-claude-2"): "refused",
    }  # fmt: skip
    result = ingest([runs])
    assert (result.inserted, result.judgements) == (3, 9)
    db = Path(os.environ["ARGUSIC_WAREHOUSE"])
    dbt_build_copy(db, tmp_path / "dbt")
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute("SELECT * FROM marts.judge_panel ORDER BY attempt_id")
        names = [d[0] for d in cur.description]
        got = {re.sub(r".*\.", "", r[0]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}
        staged = con.execute(
            "SELECT count(*) FROM staging.stg_judge_verdicts WHERE code_structure IS NOT NULL"
        )
        assert staged.fetchone() == (8,)  # every judgement but the one with no verdict
    a1, a2, a3 = got["a1"], got["a2"], got["a3"]
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
    # a2: the off-the-rails judge (0 on a quote not in the evidence) is refused and left out: 2/2 and 2/1
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
    shutil.rmtree(tmp_path / "dbt", ignore_errors=True)
