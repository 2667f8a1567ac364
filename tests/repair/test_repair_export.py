"""Per-run repair aggregates with masked item ids, exported for publication (seed 001, issue 31).

A DuckDB with the columns of marts.repair_runs that the export reads; two labels, three runs of one
(predictions files) and a cycle of repair attempts of an agent; the written files, the site's check of
them, and that no item id, project id, model name or agent id is written.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest
from argusic.publication import repair_export
from argusic.publication.repair_export import ExportRefused, export_repair_runs, masked_item_id
from argusic.publication.site.build import SiteError, repair_export_files

KEY = bytes(range(32))
COLUMNS = (
    "grade_id varchar, item_id varchar, project_id varchar, track varchar, source_kind varchar, "
    "agent_label varchar, source_set varchar, verdict varchar, changed_lines integer, "
    "size_vs_gold double, lint_new_errors integer, suppressions_added integer, input_tokens bigint, "
    "output_tokens bigint, graded_at timestamp, counts_in_rates boolean"
)


def _con(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("create schema marts")
    con.execute(f"create table marts.repair_runs ({COLUMNS})")
    con.executemany(f"insert into marts.repair_runs values ({', '.join('?' * 16)})", rows)
    # the raw layer names the repair attempt's agent (names live only there)
    con.execute("create schema raw")
    con.execute("create table raw.run_records (attempt_id varchar, purpose varchar, agent_id varchar)")
    con.execute("insert into raw.run_records values ('att-1', 'repair', 'agent-sonnet-x')")
    return con


def _rows() -> list[tuple]:
    rows = []
    verdicts = {  # (label, run): verdicts of items a (basic), b (basic), c (spec)
        1: ("resolved", "unresolved", "resolved"),
        2: ("resolved", "resolved_after_rerun", "unresolved"),
        3: ("unresolved", "unresolved", "resolved"),
    }
    for run, found in verdicts.items():
        tracks = ("basic", "basic", "spec")
        for item, track, verdict in zip(("calc-a", "calc-b", "calc-c"), tracks, found, strict=True):
            rows.append((
                f"model-a-{run}.{item}", item, "calcproj", track, "predictions", "model-a", f"sha{run}",
                verdict, 10, 1.5, 0, 0, None, None, f"2026-11-0{run} 10:00:00", True,
            ))  # fmt: skip
    # an attempt of an agent, under the label the mart shows (the macro repair_label blinds it)
    rows.append(("att-1", "calc-a", "calcproj", "basic", "attempt", "model-5e1c0a77", "cycle-1",
                 "resolved", 4, 0.8, 1, 0, 1000, 200, "2026-11-05 10:00:00", True))  # fmt: skip
    # a grade that does not count (item not usable): left out
    rows.append(("x", "calc-z", "calcproj", "basic", "predictions", "model-a", "sha1",
                 "resolved", 1, 1.0, 0, 0, None, None, "2026-11-01 11:00:00", False))  # fmt: skip
    return rows


def test_runs_are_numbered_per_label_with_rates_and_masked_items(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(repair_export, "load_labels", lambda: {"claude-sonnet-5-5": "model-a"})
    folder = export_repair_runs(_con(_rows()), tmp_path / "published", key=KEY)
    doc = json.loads((folder / "runs.json").read_text())
    assert doc["schema"] == "argusic.repair_runs_export/1"
    runs = {(r["label"], r["run"], r["track"]): r for r in doc["runs"]}
    assert runs[("model-a", 1, "all")] == {
        "label": "model-a", "run": 1, "source_kind": "predictions", "track": "all", "items": 3,
        "resolved": 2, "resolved_after_rerun": 0, "rate": 0.6667,
    }  # fmt: skip
    assert runs[("model-a", 2, "basic")]["resolved_after_rerun"] == 1
    assert runs[("model-a", 2, "basic")]["resolved"] == 1 and runs[("model-a", 2, "basic")]["items"] == 2
    assert runs[("model-a", 3, "spec")]["rate"] == 1.0
    assert sorted({k[1] for k in runs if k[0] == "model-a"}) == [1, 2, 3]
    attempt_labels = {r["label"] for r in doc["runs"] if r["source_kind"] == "attempt"}
    assert attempt_labels == {"model-5e1c0a77"}  # the mart's label, as pages show it: not labelled again
    # one masked id per item, the same in every run; never the item id
    masked_a = masked_item_id(KEY, "calcproj", "calc-a")
    assert {r["item"] for r in doc["items"] if r["run"] in (1, 2, 3) and r["label"] == "model-a"} == {
        masked_a, masked_item_id(KEY, "calcproj", "calc-b"), masked_item_id(KEY, "calcproj", "calc-c"),
    }  # fmt: skip
    with (folder / "runs.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 10 and table[0].keys() >= {"label", "run", "item", "verdict", "input_tokens"}
    for name in ("runs.json", "runs.csv", "export.json"):
        text = (folder / name).read_text()
        for word in ("calc-a", "calc-b", "calc-c", "calc-z", "calcproj", "agent-sonnet-x", "claude-sonnet"):
            assert word not in text, (name, word)
    # the site copies exactly the listed files, and refuses one changed since
    listed = [n for n, _ in repair_export_files(tmp_path / "published")]
    assert listed == ["runs.json", "runs.csv", "paired.json"]  # paired.json: the paired reviews (issue 31)
    (folder / "runs.csv").write_text((folder / "runs.csv").read_text() + "x\n")
    with pytest.raises(SiteError, match="sha256"):
        repair_export_files(tmp_path / "published")


def test_another_key_gives_other_masked_ids_and_the_same_key_the_same_bytes(tmp_path: Path) -> None:
    one = export_repair_runs(_con(_rows()), tmp_path / "a", key=KEY)
    two = export_repair_runs(_con(_rows()), tmp_path / "b", key=KEY)
    three = export_repair_runs(_con(_rows()), tmp_path / "c", key=bytes(32))
    assert (one / "runs.json").read_bytes() == (two / "runs.json").read_bytes()
    assert (one / "runs.csv").read_bytes() != (three / "runs.csv").read_bytes()


def test_a_label_that_is_a_model_name_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(repair_export, "load_labels", lambda: {"model-a": "model-a"})
    with pytest.raises(ExportRefused, match="model-a"):
        export_repair_runs(_con(_rows()), tmp_path / "p", key=KEY)
    assert not (tmp_path / "p" / "repair" / "runs.json").exists()


def test_a_mart_that_names_a_repair_agent_is_refused(tmp_path: Path) -> None:
    """Should the mart ever carry a raw agent id (blinding broken upstream), the export refuses whole."""
    rows = [r if r[0] != "att-1" else (*r[:5], "agent-sonnet-x", *r[6:]) for r in _rows()]
    with pytest.raises(ExportRefused, match="agent-sonnet-x"):
        export_repair_runs(_con(rows), tmp_path / "p", key=KEY)
    assert not (tmp_path / "p" / "repair" / "runs.json").exists()


def test_the_key_is_made_once_private_and_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(repair_export.KEY_ENV, raising=False)
    path = tmp_path / "keys" / "item-mask.key"
    key = repair_export.mask_key(path)
    assert len(key) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert repair_export.mask_key(path) == key
    monkeypatch.setenv(repair_export.KEY_ENV, "ab" * 8)
    with pytest.raises(ExportRefused, match="shorter"):
        repair_export.mask_key(path)
