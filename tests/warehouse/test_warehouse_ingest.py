from __future__ import annotations

import hashlib
import json

import duckdb
import pytest
from argusic.core.settings import evidence_url
from argusic.warehouse.load_runs import IngestError, ingest
from conftest import write_record


def _count(db) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]


def test_ingest_is_idempotent_by_attempt_id(isolated, record_doc):
    db = isolated / "w.duckdb"
    write_record(isolated / "r" / "a1", record_doc)
    second = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    write_record(isolated / "r" / "a2", second)
    first = ingest([isolated / "r"], db_path=db)
    assert (first.inserted, first.already_present) == (2, 0)
    again = ingest([isolated / "r"], db_path=db)
    assert (again.inserted, again.already_present) == (0, 2)
    assert _count(db) == 2
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT errors_fixed, test_depth, log_sha256 IS NOT NULL FROM raw.run_records WHERE attempt_no=1"
        ).fetchone()
    assert row == (1, "tier1_real", True)


def test_bad_record_refuses_whole_batch(isolated, record_doc):
    db = isolated / "w.duckdb"
    write_record(isolated / "r" / "a1", record_doc)
    bad = dict(record_doc, attempt_id="x.bad", tier="enormous")
    write_record(isolated / "r" / "a2", bad)
    with pytest.raises(IngestError, match="tier"):
        ingest([isolated / "r"], db_path=db)
    assert not db.exists() or _count(db) == 0


def test_unknown_agent_is_refused(isolated, record_doc):
    write_record(isolated / "r", record_doc)
    with pytest.raises(IngestError, match="agent_id: unknown agent 'readme-runner'"):
        ingest([isolated / "r"], db_path=isolated / "w.duckdb", known_agents={"someone-else"})


def test_changed_record_under_same_attempt_id_is_refused(isolated, record_doc):
    db = isolated / "w.duckdb"
    path = write_record(isolated / "r", record_doc)
    ingest([path], db_path=db)
    record_doc["report"]["final_state"] = "rewritten"
    write_record(isolated / "r", record_doc)
    with pytest.raises(IngestError, match="write-once"):
        ingest([path], db_path=db)
    assert _count(db) == 1


def test_not_json_and_missing_path(isolated):
    bad = isolated / "x.record.json"
    bad.write_text("{nope")
    with pytest.raises(IngestError, match="not JSON"):
        ingest([bad], db_path=isolated / "w.duckdb")
    with pytest.raises(IngestError, match="no such file"):
        ingest([isolated / "missing"], db_path=isolated / "w.duckdb")


def test_duplicate_attempt_in_one_batch_is_refused(isolated, record_doc):
    a = write_record(isolated / "a", record_doc)
    b = write_record(isolated / "b", record_doc)
    with pytest.raises(IngestError, match="also in"):
        ingest([a, b], db_path=isolated / "w.duckdb")


# -- hostile records: refused naming the file and the field, nothing of the batch loaded -------------
OTHER_SHA = hashlib.sha256(b"other").hexdigest()


def _hostile_batch(isolated, record_doc, change) -> tuple:
    """A good record and a hostile one in one batch; returns (folder, hostile record's path)."""
    write_record(isolated / "batch" / "good", record_doc)
    bad = json.loads(json.dumps(record_doc))
    bad.update(attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    change(bad, evidence_url())
    return isolated / "batch", write_record(isolated / "batch" / "hostile", bad)


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (lambda d, s: d.update(attempt_id="../../etc/passwd"), "attempt_id", "does not follow"),
        (
            lambda d, s: d.update(attempt_id="2026-12.board.readme-runner.wav/../gen.a2"),
            "attempt_id",
            "follow",
        ),
        (
            lambda d, s: d.update(attempt_id="2026-12.board.readme-runner.other.a2"),
            "attempt_id",
            "says project_id",
        ),
        (lambda d, s: d.update(project_id="wav gen"), "project_id", "is not an id part"),
        (lambda d, s: d["evidence"]["log"].update(uri="file:///etc/passwd"), "evidence.log.uri", "outside"),
        (
            lambda d, s: d["evidence"]["log"].update(uri="https://evil.example/x"),
            "evidence.log.uri",
            "outside",
        ),
        (
            lambda d, s: d["evidence"]["recording"].update(uri=f"{s}/../../etc/passwd"),
            "evidence.recording.uri",
            "'..' segment",
        ),
        (
            lambda d, s: d["evidence"]["report"].update(uri=f"{s}/sha256/{OTHER_SHA[:2]}/{OTHER_SHA}"),
            "evidence.report.uri",
            "the key of its sha256",
        ),
        (
            lambda d, s: d.update(
                presentation={
                    "masking_applied": False,
                    "withheld": False,
                    "withheld_reason": None,
                    "log": dict(d["evidence"]["log"]),
                    "recording": None,
                }
            ),
            "presentation.log.uri",
            "is not 'served/2026-12.board.readme-runner.wavgen.a2/",
        ),  # fmt: skip
    ],
)
def test_hostile_record_is_refused_naming_file_and_field(isolated, record_doc, change, field, problem):
    db = isolated / "w.duckdb"
    folder, hostile = _hostile_batch(isolated, record_doc, change)
    with pytest.raises(IngestError) as err:
        ingest([folder], db_path=db)
    message = str(err.value)
    assert message.startswith(f"{hostile}: invalid run record: ") and f"{field}: " in message
    assert problem in message
    assert not db.exists() or _count(db) == 0


def test_oversized_and_undecodable_records_refuse_the_batch(isolated, record_doc):
    from argusic.core.record import MAX_RECORD_BYTES

    db = isolated / "w.duckdb"
    write_record(isolated / "batch" / "good", record_doc)
    big = isolated / "batch" / "big" / "run_record.json"
    big.parent.mkdir(parents=True)
    with open(big, "wb") as handle:
        handle.truncate(MAX_RECORD_BYTES + 1)  # sparse: never read
    with pytest.raises(IngestError, match=rf"^{big}: a run record is at most {MAX_RECORD_BYTES} bytes"):
        ingest([isolated / "batch"], db_path=db)
    big.write_bytes(b'{"attempt_id": "\xff"}')
    with pytest.raises(IngestError, match=rf"^{big}: not UTF-8"):
        ingest([isolated / "batch"], db_path=db)
    big.write_bytes(json.dumps(record_doc).encode()[:-40])  # truncated
    with pytest.raises(IngestError, match=rf"^{big}: not JSON"):
        ingest([isolated / "batch"], db_path=db)
    assert not db.exists() or _count(db) == 0


def test_folder_without_records_and_misnamed_files_say_so(isolated, record_doc):
    empty = isolated / "nothing"
    empty.mkdir()
    (empty / "record.json").write_text(json.dumps(record_doc))  # misnamed: not looked at
    with pytest.raises(IngestError, match=rf"^{empty}: no run records found \(looked for run_record.json"):
        ingest([empty], db_path=isolated / "w.duckdb")
    with pytest.raises(IngestError, match=rf"^{empty / 'record.json'}: not a run record file name"):
        ingest([empty / "record.json"], db_path=isolated / "w.duckdb")
    assert not (isolated / "w.duckdb").exists()


def test_records_inside_harness_output_are_never_ingested(isolated, record_doc):
    """`out/` holds what the project and the agent wrote: a run record there would be forged."""
    attempt = isolated / "runs" / "2026-12" / record_doc["attempt_id"]
    write_record(attempt, record_doc)
    forged = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a3", attempt_no=3)
    write_record(attempt / "out", forged)
    write_record(attempt / "out" / "deeper", forged, name="x.record.json")
    write_record(isolated / "runs" / ".scratch" / "tmp", forged)
    result = ingest([isolated / "runs"], db_path=isolated / "w.duckdb")
    assert (result.files, result.inserted) == (1, 1)
    with duckdb.connect(str(isolated / "w.duckdb"), read_only=True) as con:
        ids = con.execute("SELECT attempt_id FROM raw.run_records").fetchall()
    assert ids == [(record_doc["attempt_id"],)]


def test_same_file_given_twice_is_read_once(isolated, record_doc):
    path = write_record(isolated / "r", record_doc)
    assert ingest([isolated / "r", path], db_path=isolated / "w.duckdb").inserted == 1


def test_cli_ingest_on_a_folder_without_records_says_so(isolated):
    from argusic.cli.main import app
    from typer.testing import CliRunner

    (isolated / "empty").mkdir()
    result = CliRunner().invoke(app, ["ingest", str(isolated / "empty")])
    output = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 2 and f"{isolated / 'empty'}: no run records found" in output
    assert "nothing of this batch was loaded" in output and "Traceback" not in output


@pytest.mark.slow
def test_a_200_mb_record_is_refused_with_bounded_memory(isolated, record_doc):
    """The issue's case: a valid 200 MB run record ingested with 2.2 GB peak. `argusic ingest` now
    refuses it before reading it: the command's peak memory stays below the record's own size."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    big = isolated / "batch" / "run_record.json"
    big.parent.mkdir()
    head, tail = json.dumps(record_doc).split('"final_state": "', 1)
    with open(big, "w") as handle:  # valid JSON and a valid record, but for its size
        handle.write(head + '"final_state": "')
        for _ in range(200):
            handle.write("x" * (1 << 20))
        handle.write(tail)
    size = big.stat().st_size
    argusic = Path(sys.executable).parent / "argusic"
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(done.returncode, peak, repr(done.stderr))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", measure, str(argusic), "ingest", str(big.parent)],
        capture_output=True, text=True, check=True, timeout=300, env=dict(os.environ, COLUMNS="500"),
    ).stdout  # fmt: skip
    code, peak, stderr = out.split(" ", 2)
    mib = 2**20
    print(f"argusic ingest on a {size / mib:.0f} MiB record: exit {code}, peak RSS {int(peak) / mib:.1f} MiB")
    assert code == "2" and "refused unread" in stderr and "nothing of this batch was loaded" in stderr
    assert int(peak) < size  # never read whole (the loader before this held ~11x the record's size)
    assert not (isolated / "warehouse" / "argusic.duckdb").exists()


def test_an_older_raw_layer_gains_the_new_columns_filled_from_its_records(isolated, record_doc):
    """A warehouse loaded before effective_budget_seconds and the served URIs were columns of their
    own gets them, for the rows already there, from each row's record_json at the next ingest."""
    from argusic.warehouse.schema import BACKFILL

    db = isolated / "w.duckdb"
    store = evidence_url().rstrip("/")
    served = f"{store}/served/{record_doc['attempt_id']}/{'a' * 64}"
    old = dict(
        record_doc,
        demo=True,
        effective_budget_seconds=15,
        presentation={
            "masking_applied": False, "withheld": False, "withheld_reason": None,
            "log": {"sha256": "a" * 64, "uri": f"{served}/log.txt", "bytes": 3},
            "recording": {"sha256": "a" * 64, "uri": f"{served}/recording.cast", "bytes": 3},
        },
    )  # fmt: skip
    ingest([write_record(isolated / "r" / "a1", old)], db_path=db)
    with duckdb.connect(str(db)) as con:  # as an older release left it: without the new columns
        for column in BACKFILL:
            con.execute(f"ALTER TABLE raw.run_records DROP COLUMN {column}")
    newer = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    ingest([write_record(isolated / "r" / "a2", newer)], db_path=db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT attempt_no, effective_budget_seconds, served_log_uri, served_recording_uri "
            "FROM raw.run_records ORDER BY attempt_no"
        ).fetchall()
    assert rows == [(1, 15, f"{served}/log.txt", f"{served}/recording.cast"), (2, None, None, None)]


ENVIRONMENT = {
    "harness_edition": "1",
    "scaffold_sha256": "e" * 64,
    "images": [{"role": "runner", "reference": "argusic-runner:bookworm", "digest": "sha256:" + "d" * 64}],
    "instructions": {"version": "1", "sha256": "f" * 64},
    "limits": {
        "cpus": 2.0, "memory_bytes": 4 * 2**30, "pids": 512, "disk_bytes": 6 * 2**30, "network": "none",
        "budget_seconds": 15,
    },
    "display": {"kind": "xvfb", "width": 1280, "height": 800, "depth": 24},
}  # fmt: skip
ENV_COLUMNS = (
    "harness_edition, scaffold_sha256, image_role, image_reference, image_digest, instructions_version, "
    "instructions_sha256, limit_cpus, limit_memory_bytes, limit_pids, limit_disk_bytes, network_mode, "
    "limit_budget_seconds, display"
)
ENV_ROW = (
    "1", "e" * 64, "runner", "argusic-runner:bookworm", "sha256:" + "d" * 64, "1", "f" * 64, 2.0,
    4 * 2**30, 512, 6 * 2**30, "none", 15, "1280x800x24",
)  # fmt: skip


def test_the_environment_is_loaded_in_columns_and_older_records_have_none(isolated, record_doc):
    db = isolated / "w.duckdb"
    newer = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    newer["environment"] = ENVIRONMENT
    headless = dict(
        record_doc,
        attempt_id="2026-12.board.readme-runner.wavgen.a3",
        attempt_no=3,
        environment={**ENVIRONMENT, "images": [], "display": None},
    )
    for name, doc in (("a1", record_doc), ("a2", newer), ("a3", headless)):
        write_record(isolated / "r" / name, doc)
    ingest([isolated / "r"], db_path=db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(f"SELECT {ENV_COLUMNS} FROM raw.run_records ORDER BY attempt_no").fetchall()
    assert rows[0] == (None,) * 14  # written before environments were: unavailable, not guessed
    assert rows[1] == ENV_ROW
    assert rows[2] == (*ENV_ROW[:2], None, None, None, *ENV_ROW[5:13], None)


def test_an_older_raw_layer_gains_the_environment_columns_as_ingest_writes_them(isolated, record_doc):
    from argusic.warehouse.schema import BACKFILL

    db = isolated / "w.duckdb"
    with_env = dict(record_doc, environment=ENVIRONMENT)
    without_display = dict(
        record_doc,
        attempt_id="2026-12.board.readme-runner.wavgen.a3",
        attempt_no=3,
        environment={**ENVIRONMENT, "display": None},
    )
    pairs = (("a1", with_env), ("a3", without_display))
    ingest([write_record(isolated / "r" / name, doc) for name, doc in pairs], db_path=db)
    with duckdb.connect(str(db)) as con:
        fresh = con.execute(f"SELECT {ENV_COLUMNS} FROM raw.run_records ORDER BY attempt_no").fetchall()
        for column in ENV_COLUMNS.split(", "):
            assert column in BACKFILL, column
            con.execute(f"ALTER TABLE raw.run_records DROP COLUMN {column}")
    newer = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    ingest([write_record(isolated / "r" / "a2", newer)], db_path=db)
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(f"SELECT {ENV_COLUMNS} FROM raw.run_records ORDER BY attempt_no").fetchall()
    assert fresh[0] == ENV_ROW and fresh[1] == (*ENV_ROW[:13], None)
    assert rows == [fresh[0], (None,) * 14, fresh[1]]


def test_a_reproduction_is_never_loaded(isolated, record_doc):
    """A record of `argusic reproduce` (reproduces set) refuses its whole batch, naming the file."""
    db = isolated / "w.duckdb"
    write_record(isolated / "r" / "a1", record_doc)
    repro = dict(
        record_doc,
        attempt_id="2026-12-repro.board.readme-runner.wavgen.a1",
        cycle_id="2026-12-repro",
        reproduces=record_doc["attempt_id"],
    )
    path = write_record(isolated / "r" / "repro", repro)
    with pytest.raises(IngestError) as refused:
        ingest([isolated / "r"], db_path=db)
    message = str(refused.value)
    assert message.startswith(f"{path}: refused: reproduces: ")
    assert record_doc["attempt_id"] in message and "never loaded into the warehouse" in message
    assert not db.exists() or _count(db) == 0


def test_ingesting_the_runs_folder_skips_its_reproductions(isolated, record_doc):
    """`argusic ingest runs/` loads the cycles and passes over runs/reproductions/ (never loaded)."""
    db = isolated / "w.duckdb"
    write_record(isolated / "runs" / "2026-12" / "a1", record_doc)
    repro = dict(
        record_doc,
        attempt_id="repro-2026-12-01-1.board.readme-runner.wavgen.a1",
        cycle_id="repro-2026-12-01-1",
        reproduces=record_doc["attempt_id"],
    )
    write_record(isolated / "runs" / "reproductions" / "repro-2026-12-01-1" / "a1", repro)
    assert ingest([isolated / "runs"], db_path=db).inserted == 1
    assert _count(db) == 1
    with pytest.raises(IngestError, match="refused: reproduces: "):
        ingest([isolated / "runs" / "reproductions"], db_path=db)
