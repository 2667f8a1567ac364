"""Per-run repair aggregates with masked item ids, for publication (seed 001, issue 31).

The seed publishes, per run, the label of the model, the run's number, a masked item id and the
verdict with its figures (turns, tokens, quality), never the items themselves (they carry the
repository's code) nor a model's name. This writes that from ``marts.repair_runs`` (only the grades
that count in the rates):

``<publish_dir>/repair/runs.json`` (``argusic.repair_runs_export/1``): per run (label, run 1..n) and
track (basic, spec, all) the counted items, resolved, resolved after a re-run, and the rate
(resolved / counted; after-rerun apart, as in the marts); and one row per graded item of each run;
``<publish_dir>/repair/runs.csv``: the same rows, one per item and run;
``<publish_dir>/repair/paired.json`` (``argusic.paired_review_export/1``): the paired patch reviews of
``marts.paired_review`` (issue 31): per pair a masked pair id and item id, P's and Q's labels, per
criterion their medians and spreads over the valid judges, and the bugs the judges reported and a
person re-checked; no pair id (it holds the item id), no patch id, no judge's words;
``<publish_dir>/repair/export.json`` (``argusic.repair_export_index/1``): each file with its sha256 and
size, so the site (``argusic.publication.site``) copies only what was exported.

A *run* is one set a label was graded in: a predictions file, or a cycle's repair attempts; numbered
1..n per label in the order of their first grade. Labels: a predictions file's label as graded (its
model's name went through ``repair/labels.toml``), an attempt's agent's as marts.repair_runs shows it
(the same mapping, else a keyed hash: the macro repair_label): no model or agent name is written.
Item ids become ``item-<12 hex>``, an HMAC-SHA256
of ``project_id/item_id`` under a key that is never published (``ARGUSIC_ITEM_MASK_KEY``, hex, or a
key made once and kept at ``<runs dir>/.keys/item-mask.key``, mode 0600): the same item has the same
masked id in every run and export under that key, so runs can be compared item by item; ``key_id``
(the first 12 hex of the key's sha256) says whether two exports used the same key, and reveals
nothing of it. Before anything is written, the texts are checked for every item id, project id,
model name of labels.toml and agent id they must not contain (ExportRefused otherwise).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from argusic.core.safe_io import kept_secret
from argusic.core.settings import runs_dir
from argusic.publication.files import _write_atomically
from argusic.repair.predictions import load_labels

EXPORT_SCHEMA = "argusic.repair_runs_export/1"
PAIRED_SCHEMA = "argusic.paired_review_export/1"
INDEX_SCHEMA = "argusic.repair_export_index/1"
KEY_ENV = "ARGUSIC_ITEM_MASK_KEY"
EXPORT_FOLDER = "repair"
FILES = ("runs.json", "runs.csv", "paired.json")
CSV_COLUMNS = [
    "label", "run", "source_kind", "item", "track", "verdict", "resolved", "resolved_after_rerun",
    "changed_lines", "size_vs_gold", "lint_new_errors", "suppressions_added", "input_tokens",
    "output_tokens",
]  # fmt: skip


class ExportRefused(Exception):
    """The export would name an item or a model, or the key is unusable: nothing is written."""


def mask_key(path: Path | None = None) -> bytes:
    """The masking key: ARGUSIC_ITEM_MASK_KEY (hex, at least 32 bytes), else the key file (made once,
    0600)."""
    try:
        return kept_secret(KEY_ENV, Path(path or runs_dir() / ".keys" / "item-mask.key"))
    except ValueError as err:
        raise ExportRefused(str(err)) from None


def masked_item_id(key: bytes, project_id: str, item_id: str) -> str:
    digest = hmac.new(key, f"{project_id}/{item_id}".encode(), hashlib.sha256).hexdigest()
    return f"item-{digest[:12]}"


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:12]


QUERY = """
    select item_id, project_id, track, source_kind, agent_label, source_set, verdict,
           changed_lines, size_vs_gold, lint_new_errors, suppressions_added, input_tokens,
           output_tokens, graded_at
    from marts.repair_runs
    where counts_in_rates
    order by graded_at, grade_id
"""


PAIRED_QUERY = """
    select pair_id, item_id, project_id, criterion, criterion_order, p_label, q_label, judges,
           valid_judges, p_median, q_median, p_spread, q_spread, status, p_bugs_reported,
           q_bugs_reported, p_bugs_confirmed, q_bugs_confirmed, bugs_not_a_bug, bugs_cannot_tell,
           bugs_awaiting_check
    from marts.paired_review
    order by pair_id, criterion_order
"""
PAIR_FIGURES = ("judges", "valid_judges", "p_median", "q_median", "p_spread", "q_spread")
PAIR_BUGS = (
    "p_bugs_reported", "q_bugs_reported", "p_bugs_confirmed", "q_bugs_confirmed", "bugs_not_a_bug",
    "bugs_cannot_tell", "bugs_awaiting_check",
)  # fmt: skip


def _has_mart(con, table: str) -> bool:
    found = con.execute(
        "select count(*) from information_schema.tables where table_schema = 'marts' and table_name = ?",
        [table],
    ).fetchone()
    return bool(found and found[0])


def _rows(con, query: str = QUERY, table: str = "repair_runs") -> list[dict[str, Any]]:
    """The mart's rows (none when the warehouse has no such mart: built before it existed)."""
    if not _has_mart(con, table):
        return []
    cursor = con.execute(query)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _number(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float):
        return round(value, 4)
    return int(value) if not isinstance(value, int | bool) and float(value).is_integer() else value


def compose(rows: list[dict[str, Any]], key: bytes) -> dict[str, Any]:
    """The export's document from repair_runs rows (pure: the same rows and key give the same bytes)."""
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    first_grade: dict[tuple[str, str, str], Any] = {}
    for row in rows:
        # the mart already blinds (macro repair_label: labels.toml, else a keyed hash): its label is
        # the one every page and table shows; labelling it again would publish a second name
        label = str(row["agent_label"])
        run_key = (label, row["source_kind"], row["source_set"])
        runs[run_key].append(row)
        first_grade.setdefault(run_key, str(row["graded_at"]))
    numbers: dict[tuple[str, str, str], int] = {}
    for label in sorted({k[0] for k in runs}):
        mine = sorted((k for k in runs if k[0] == label), key=lambda k: (first_grade[k], k[1], k[2]))
        numbers |= {k: n for n, k in enumerate(mine, start=1)}
    item_rows, aggregates = [], []
    for run_key in sorted(runs, key=lambda k: (k[0], numbers[k])):
        label, kind, _ = run_key
        per_item: dict[str, dict[str, Any]] = {}
        for row in runs[run_key]:  # one grade per item and run: the last one graded
            per_item[masked_item_id(key, row["project_id"] or "", row["item_id"])] = row
        for masked, row in sorted(per_item.items()):
            item_rows.append({
                "label": label, "run": numbers[run_key], "source_kind": kind, "item": masked,
                "track": row["track"], "verdict": row["verdict"],
                "resolved": row["verdict"] == "resolved",
                "resolved_after_rerun": row["verdict"] == "resolved_after_rerun",
                **{c: _number(row[c]) for c in CSV_COLUMNS[8:]},
            })  # fmt: skip
        for track in ("basic", "spec", "all"):
            counted = [r for r in per_item.values() if track == "all" or r["track"] == track]
            if not counted:
                continue
            resolved = sum(r["verdict"] == "resolved" for r in counted)
            aggregates.append({
                "label": label, "run": numbers[run_key], "source_kind": kind, "track": track,
                "items": len(counted), "resolved": resolved,
                "resolved_after_rerun": sum(r["verdict"] == "resolved_after_rerun" for r in counted),
                "rate": round(resolved / len(counted), 4),
            })  # fmt: skip
    return {
        "schema": EXPORT_SCHEMA,
        "key_id": key_id(key),
        "note": "item ids are masked with a keyed hash (the key is not published); labels only, no "
        "model names; rate = resolved / items (resolved after a re-run counted apart)",
        "runs": aggregates,
        "items": item_rows,
    }


def masked_pair_id(key: bytes, pair_id: str) -> str:
    return f"pair-{hmac.new(key, f'pair/{pair_id}'.encode(), hashlib.sha256).hexdigest()[:12]}"


def compose_paired(rows: list[dict[str, Any]], key: bytes) -> dict[str, Any]:
    """The paired reviews' document from marts.paired_review rows (pure)."""
    pairs: dict[str, dict[str, Any]] = {}
    for row in rows:
        pair = pairs.setdefault(
            row["pair_id"],
            {
                "pair": masked_pair_id(key, row["pair_id"]),
                "item": masked_item_id(key, row["project_id"] or "", row["item_id"]),
                "p_label": row["p_label"],
                "q_label": row["q_label"],
                "bugs": {c: _number(row[c]) for c in PAIR_BUGS},
                "criteria": [],
            },
        )
        pair["criteria"].append(
            {
                "criterion": row["criterion"],
                "status": row["status"],
                **{c: _number(row[c]) for c in PAIR_FIGURES},
            }
        )
    return {
        "schema": PAIRED_SCHEMA,
        "key_id": key_id(key),
        "note": "paired patch reviews (seed 001): two patches of an item as P and Q, by their labels "
        "only; medians over the valid judges (null below two); advisory, never part of a rate",
        "pairs": sorted(pairs.values(), key=lambda p: (p["item"], p["pair"])),
    }


def _csv(document: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in document["items"]:
        writer.writerow({c: "" if row[c] is None else row[c] for c in CSV_COLUMNS})
    return out.getvalue()


def forbidden_words(
    rows: list[dict[str, Any]], labels: dict[str, str], agents: Iterable[str] = ()
) -> set[str]:
    """What the export must never contain: item and project ids, the model names of labels.toml and
    ``agents`` (the agent ids of the warehouse's repair attempts: the raw layer's names)."""
    words = {str(r[c]) for r in rows for c in ("item_id", "project_id") if r.get(c)}
    words |= set(labels) | set(agents)
    return {w for w in words if len(w) >= 3}


def repair_agents(con) -> set[str]:
    """The agent ids of the warehouse's repair attempts (raw.run_records; none when it has no such
    table), which the export must never name."""
    found = con.execute(
        "select count(*) from information_schema.tables where table_schema = 'raw' "
        "and table_name = 'run_records'"
    ).fetchone()
    if not (found and found[0]):
        return set()
    return {
        str(a)
        for (a,) in con.execute(
            "select distinct agent_id from raw.run_records where purpose = 'repair' and agent_id is not null"
        ).fetchall()
    }


def check_unnamed(texts: dict[str, str], forbidden: set[str]) -> None:
    for name, text in texts.items():
        for word in sorted(forbidden):
            if re.search(rf"(?<![A-Za-z0-9_-]){re.escape(word)}(?![A-Za-z0-9_-])", text):
                raise ExportRefused(f"{name} would name {word!r}: not written")


def export_repair_runs(con, publish_dir: Path, *, key: bytes | None = None) -> Path:
    """Write runs.json, runs.csv, paired.json and export.json under ``<publish_dir>/repair``; the
    folder. Refused whole (ExportRefused, nothing written) when a file would name an item, a
    project, a model of labels.toml or an agent."""
    rows = _rows(con)
    paired = _rows(con, PAIRED_QUERY, "paired_review")
    labels = load_labels()
    key = key or mask_key()
    document = compose(rows, key)
    texts = {
        "runs.json": json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        "runs.csv": _csv(document),
        "paired.json": json.dumps(compose_paired(paired, key), indent=1, sort_keys=True, ensure_ascii=False)
        + "\n",
    }
    forbidden = forbidden_words(rows, labels, repair_agents(con)) | {
        str(r[c]) for r in paired for c in ("item_id", "project_id", "pair_id") if r.get(c)
    }
    check_unnamed(texts, {w for w in forbidden if len(w) >= 3})
    folder = Path(publish_dir) / EXPORT_FOLDER
    for name, text in texts.items():
        _write_atomically(folder / name, text)
    index = {
        "schema": INDEX_SCHEMA,
        "files": [
            {"file": name, "sha256": hashlib.sha256(text.encode()).hexdigest(), "bytes": len(text.encode())}
            for name, text in texts.items()
        ],
    }
    _write_atomically(folder / "export.json", json.dumps(index, indent=1, sort_keys=True) + "\n")
    return folder


RUNS_COLUMNS = (
    "item_id", "project_id", "track", "source_kind", "agent_label", "source_set", "verdict", "changed_lines",
    "size_vs_gold", "lint_new_errors", "suppressions_added", "input_tokens", "output_tokens", "graded_at",
    "grade_id", "counts_in_rates",
)  # fmt: skip
PAIRED_COLUMNS = ("pair_id", "item_id", "project_id", "criterion", "criterion_order", "p_label", "q_label",
                  "status", *PAIR_FIGURES, *PAIR_BUGS)  # fmt: skip


def _built(con, table: str, columns: tuple[str, ...]) -> bool:
    """The mart is there with the columns dbt builds it with (a warehouse of hand-made marts, as
    some tests write, may have a mart of that name in another shape: nothing of it is exported)."""
    found = {
        r[0]
        for r in con.execute(
            "select column_name from information_schema.columns "
            "where table_schema = 'marts' and table_name = ?",
            [table],
        ).fetchall()
    }
    return bool(found) and set(columns) <= found


def has_repair_results(con) -> bool:
    """Whether the warehouse holds anything the export would publish (grades that count, or paired
    reviews, in the marts dbt builds): publishing a cycle writes the export only then."""
    runs = _built(con, "repair_runs", RUNS_COLUMNS) and bool(_rows(con))
    paired = _built(con, "paired_review", PAIRED_COLUMNS) and bool(_rows(con, PAIRED_QUERY, "paired_review"))
    return runs or paired
