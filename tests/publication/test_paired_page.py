"""The paired patch reviews on the public site (issue #31) and the repair export written by publishing.

marts.paired_review's rows are exported with the per-run repair aggregates
(argusic.publication.repair_export: labels, masked pair and item ids, medians, bug counts) and the
site renders repair/paired.html from that file, linked from every page's footer. The export is
refused whole when a file would name an item, a project, a model or an agent; publishing a cycle
writes it before the board, and a refused export blocks the publication with nothing written.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import duckdb
import pytest
from argusic.publication import board as board_mod
from argusic.publication import repair_export
from argusic.publication.repair_export import ExportRefused, export_repair_runs, masked_item_id
from argusic.warehouse.dbt_build import PublicationBlocked
from test_repair_export import COLUMNS, KEY, _rows
from test_site import _published, link_problems, loose_digits, published_values

CRITERIA = ("correctness", "change_scope", "consistency", "simplicity", "tidiness", "overall")
PAIRED_COLUMNS = (
    "pair_id varchar, item_id varchar, revision varchar, project_id varchar, criterion varchar, "
    "criterion_order integer, p_label varchar, q_label varchar, p_patch_id varchar, q_patch_id varchar, "
    "draw_seed varchar, drawn double, judges integer, valid_judges integer, p_median double, "
    "q_median double, p_spread integer, q_spread integer, status varchar, p_bugs_reported integer, "
    "q_bugs_reported integer, p_bugs_confirmed integer, q_bugs_confirmed integer, bugs_not_a_bug integer, "
    "bugs_cannot_tell integer, bugs_awaiting_check integer"
)
NAMES = ("calc-a", "calcproj", "claude-sonnet-5-5", "agent-sonnet-x", "calc-a.0123456789abcdef")


def paired_rows(p_label: str = "model-a", q_label: str = "model-7f3a9c1e") -> list[tuple]:
    rows = []
    for n, criterion in enumerate(CRITERIA, start=1):
        rows.append((
            "calc-a.0123456789abcdef", "calc-a", "9" * 64, "calcproj", criterion, n, p_label, q_label,
            f"{p_label}-aaaaaaaaaaaa", f"{q_label}-bbbbbbbbbbbb", "c" * 64, 0.25, 3, 2,
            4.5 if criterion != "tidiness" else 2.0, 4.0, 1, 0, "judged", 2, 0, 1, 0, 0, 0, 1,
        ))  # fmt: skip
    return rows


def warehouse(path: Path | None = None, paired: list[tuple] | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(str(path) if path else ":memory:")
    con.execute("create schema marts")
    con.execute(f"create table marts.repair_runs ({COLUMNS})")
    con.executemany(f"insert into marts.repair_runs values ({', '.join('?' * 16)})", _rows())
    con.execute(f"create table marts.paired_review ({PAIRED_COLUMNS})")
    rows = paired_rows() if paired is None else paired
    if rows:
        con.executemany(f"insert into marts.paired_review values ({', '.join('?' * 26)})", rows)
    return con


@pytest.fixture
def labelled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repair_export, "load_labels", lambda: {"claude-sonnet-5-5": "model-a"})


def text_of(page: Path) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())


def test_the_paired_reviews_are_exported_masked_and_shown_on_the_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labelled
) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    folder = export_repair_runs(warehouse(), publish, key=KEY)
    doc = json.loads((folder / "paired.json").read_text())
    assert doc["schema"] == "argusic.paired_review_export/1"
    (pair,) = doc["pairs"]
    assert pair["item"] == masked_item_id(KEY, "calcproj", "calc-a") and pair["pair"].startswith("pair-")
    assert (pair["p_label"], pair["q_label"]) == ("model-a", "model-7f3a9c1e")
    assert [c["criterion"] for c in pair["criteria"]] == list(CRITERIA)
    assert pair["bugs"]["p_bugs_confirmed"] == 1 and pair["bugs"]["bugs_awaiting_check"] == 1

    site = build_site(publish)
    page = site / "repair" / "paired.html"
    shown = text_of(page)
    assert "P: model-a · Q: model-7f3a9c1e" in shown
    assert "Tidiness 2.0 4.0 1 0 3 2" in shown and "confirmed by a person: P 1 , Q 0" in shown
    html = page.read_text()
    assert loose_digits(html) == []  # every number a marked field of a published file (the site's rule)
    numbers, strings = published_values(publish)
    marked = [float(m) for m in re.findall(r'data-n="([^"]+)"', html)]
    assert marked and set(marked) <= numbers
    assert set(re.findall(r'data-v="([^"]+)"', html)) <= strings
    for page_path in site.rglob("*.html"):  # no page names an item, a project, a model or an agent
        html = page_path.read_text()
        for name in NAMES:
            assert name not in html, (page_path, name)
    footer = (site / "index.html").read_text().split('<p id="repair-export">', 1)[1].split("</p>", 1)[0]
    assert 'href="repair/paired.html"' in footer and 'href="repair/paired.json"' in footer
    assert (site / "repair" / "paired.json").read_bytes() == (folder / "paired.json").read_bytes()
    checked, problems = link_problems(site)
    assert problems == [] and checked > 10


def test_no_pair_reviewed_yet_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labelled) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    export_repair_runs(warehouse(paired=[]), publish, key=KEY)
    assert "No pair has been reviewed yet." in text_of(build_site(publish) / "repair" / "paired.html")


def test_an_export_that_would_name_a_project_is_refused_whole(tmp_path: Path, labelled) -> None:
    with pytest.raises(ExportRefused, match="calcproj"):
        export_repair_runs(warehouse(paired=paired_rows(q_label="calcproj")), tmp_path / "pub", key=KEY)
    assert not (tmp_path / "pub").exists()


def test_publishing_writes_the_export_and_a_refused_one_blocks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labelled
) -> None:
    monkeypatch.setenv(repair_export.KEY_ENV, KEY.hex())
    db = tmp_path / "w.duckdb"
    warehouse(db).close()
    board_mod._export_repair("c1", tmp_path / "pub", db, None)
    assert sorted(p.name for p in (tmp_path / "pub" / "repair").iterdir()) == [
        "export.json", "paired.json", "runs.csv", "runs.json",
    ]  # fmt: skip
    bad = tmp_path / "bad.duckdb"
    warehouse(bad, paired_rows(p_label="calc-a")).close()
    with pytest.raises(PublicationBlocked, match="repair export was refused"):
        board_mod._export_repair("c1", tmp_path / "pub2", bad, None)
    assert not (tmp_path / "pub2").exists()
    empty = tmp_path / "empty.duckdb"  # a warehouse without repair results: nothing written
    duckdb.connect(str(empty)).close()
    board_mod._export_repair("c1", tmp_path / "pub3", empty, None)
    assert not (tmp_path / "pub3").exists()
