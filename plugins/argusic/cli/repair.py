"""`argusic items build|validate|list|spec-check|statement-view|export-runs` and `argusic grade`
(issues 13 and 31).

Exit codes: 0 done (for `grade`: every patch graded, whatever its verdict; for `validate`: every item
usable); 1 `validate` found an item not usable, `spec-check` an item whose spec misses a name its tests
use, or `build` refused some manifest entries (each named on stderr) and built the others; 2 refused
input (manifest, every entry, item, patch, predictions file: the message names file, field and
problem) or a missing grader image.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from argusic.core.layout import publish_dir
from argusic.core.settings import project_root, warehouse_path
from argusic.publication.repair_export import ExportRefused, export_repair_runs
from argusic.repair.grader import grade_patch, store_grade, validate_item
from argusic.repair.items import ItemError, build_items, items_dir, list_items, load_item
from argusic.repair.predictions import PredictionsError, file_sha256, read_predictions
from argusic.repair.spec_check import check_item
from argusic.repair.statement_view import build_view, write_view

items_app = typer.Typer(
    help="Repair items from merged pull requests (argusic.repair_item/1).", no_args_is_help=True
)
console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)
GRADES_DIR_ENV = "ARGUSIC_GRADES_DIR"


def _fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", markup=True)
    raise typer.Exit(code=2)


def grades_dir() -> Path:
    """ARGUSIC_GRADES_DIR, default <project root>/grades."""
    return Path(os.environ.get(GRADES_DIR_ENV) or project_root() / "grades")


def _find_item(item_id: str, root: Path):
    if os.sep in item_id or item_id.endswith(".json"):
        path = Path(item_id)
    else:
        matches = [p for p in list_items(root) if p.stem == item_id]
        if not matches:
            _fail(f"item {item_id!r}: not found under {root}")
        if len(matches) > 1:
            _fail(f"item {item_id!r}: in several projects: {', '.join(str(p) for p in matches)}")
        path = matches[0]
    try:
        return load_item(path)
    except ItemError as err:
        _fail(str(err))


@items_app.command("build")
def items_build(
    manifest: Annotated[Path, typer.Option(help="Items manifest (TOML)")],
    repository: Annotated[str | None, typer.Option(help="Repository (overrides the manifest's)")] = None,
    out: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
) -> None:
    """Build the manifest's items: three test states in the grader image, f2p/p2p, topic splits."""
    refusals: list[str] = []
    try:
        built = build_items(manifest, out or items_dir(), repository, refusals=refusals)
    except ItemError as err:
        _fail(str(err))
    for item in built:
        note = " (superseded by split)" if item.superseded_by_split else ""
        console.print(
            f"{item.project_id}/{item.item_id}: {item.track}, {len(item.fail_to_pass)} f2p, "
            f"{len(item.pass_to_pass)} p2p, revision {item.revision[:12]}{note}"
        )
    for refusal in refusals:
        err_console.print(f"refused: {refusal}", markup=False)
    if refusals:
        raise typer.Exit(code=1 if built else 2)


@items_app.command("validate")
def items_validate(
    item_ids: Annotated[
        list[str] | None, typer.Argument(help="Item ids or files (default: every item)")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
) -> None:
    """Validate the grader on items: gold ×3 resolved, empty unresolved, partial gold for split items."""
    root = out or items_dir()
    items = _items_of(item_ids, root)
    unusable = 0
    for item in items:
        result = validate_item(item, out_dir=root)
        runs = ", ".join(f"{r['patch']}#{r['run_no']}={r['verdict']}" for r in result.runs)
        console.print(f"{item.item_id}: {'usable' if result.usable else 'NOT usable'} ({runs})")
        for problem in result.problems:
            console.print(f"  {problem}")
        for excluded in result.excluded_tests:
            console.print(f"  set aside: {excluded['test']} ({excluded['reason']})")
        unusable += not result.usable
    if unusable:
        raise typer.Exit(code=1)


@items_app.command("list")
def items_list(
    out: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
) -> None:
    """One line per item: project/item, track, f2p and p2p counts, split, validation."""
    root = out or items_dir()
    for path in list_items(root):
        try:
            item = load_item(path)
        except ItemError as err:
            console.print(f"{path}: refused: {err}")
            continue
        state = "not validated"
        record = path.with_name(f"{item.item_id}.validation.json")
        if record.is_file():
            try:
                data = json.loads(record.read_text())
                ok = data.get("revision") == item.revision
                state = (
                    ("usable" if data.get("usable") else "not usable")
                    if ok
                    else "validated on an older revision"
                )
            except (OSError, ValueError):
                state = "validation unreadable"
        split = f" split {item.split.topic} of {item.split.original}" if item.split else ""
        superseded = " superseded_by_split" if item.superseded_by_split else ""
        console.print(
            f"{item.project_id}/{item.item_id}: {item.track}, {len(item.fail_to_pass)} f2p, "
            f"{len(item.pass_to_pass)} p2p{split}{superseded}"
            + (f", {len(item.excluded_tests)} set aside" if item.excluded_tests else "")
            + f"; {state}"
        )


def _items_of(item_ids: list[str] | None, root: Path) -> list:
    if item_ids:
        return [_find_item(i, root) for i in item_ids]
    try:
        items = [load_item(p) for p in list_items(root)]
    except ItemError as err:
        _fail(str(err))
    if not items:
        _fail(f"no items under {root}")
    return items


@items_app.command("spec-check")
def items_spec_check(
    item_ids: Annotated[
        list[str] | None, typer.Argument(help="Item ids or files (default: every item)")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per item")] = False,
) -> None:
    """Every new name, module, keyword or CLI flag the item's tests use must be in its spec (a basic
    item's: in its statement); each one missing is listed with file:line. No container is run."""
    missing = 0
    for item in _items_of(item_ids, out or items_dir()):
        report = check_item(item)
        if as_json:
            console.print_json(json.dumps(report.to_dict()))
        else:
            state = "ok" if report.ok else "MISSING NAMES" if report.missing else "not checked"
            console.print(
                f"{item.item_id} ({item.track}): {state}, {len(report.new_uses)} new name(s) in the tests",
                markup=False,
            )
            for line in report.problems():
                console.print(f"  {line}", markup=False)
        missing += not report.ok
    if missing:
        raise typer.Exit(code=1)


@items_app.command("statement-view")
def items_statement_view(
    item_id: Annotated[str, typer.Argument(help="Item id or file")],
    out: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
) -> None:
    """The failure messages of base + test patch (run in the grader image), trimmed and masked, for
    whoever writes the item's statement; printed and written beside the item."""
    root = out or items_dir()
    item = _find_item(item_id, root)
    view = build_view(item)
    path = write_view(view, item, root)
    console.print(view.to_markdown(), markup=False)
    err_console.print(f"written to {path}", markup=False)
    if view.problem:
        raise typer.Exit(code=2)


@items_app.command("export-runs")
def items_export_runs(
    out: Annotated[Path | None, typer.Option(help="Publish folder (default: the publish dir)")] = None,
    db: Annotated[Path | None, typer.Option(help="Warehouse file (default: the warehouse)")] = None,
) -> None:
    """Per-run repair aggregates (label, run 1..n, resolved counts and rates) and per-item rows with
    masked item ids, as runs.json and runs.csv under <publish dir>/repair (the site copies them)."""
    from argusic.warehouse.db import connect  # deferred: DuckDB only for this command

    try:
        with connect(Path(db or warehouse_path()), read_only=True) as con:
            folder = export_repair_runs(con, Path(out or publish_dir()))
    except ExportRefused as err:
        _fail(str(err))
    for name in ("runs.json", "runs.csv", "export.json"):
        console.print(f"written: {folder / name}", markup=False)


def grade(
    item: Annotated[str | None, typer.Option(help="Item id (or item file) for --patch")] = None,
    patch: Annotated[
        Path | None, typer.Option(help="A patch file (git diff) to grade against --item")
    ] = None,
    predictions: Annotated[Path | None, typer.Option(help="SWE-bench-style predictions JSONL")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Where grade records go (default ARGUSIC_GRADES_DIR)")
    ] = None,
    items: Annotated[Path | None, typer.Option(help="Items folder (default ARGUSIC_ITEMS_DIR)")] = None,
) -> None:
    """Grade one patch (--item, --patch) or a predictions file: one verdict line per patch."""
    root = items or items_dir()
    out = out or grades_dir()
    jobs = []
    if predictions is not None:
        if item is not None or patch is not None:
            _fail("give either --predictions, or --item with --patch")
        try:
            known = {load_item(p).item_id: p for p in list_items(root)}
            entries = read_predictions(predictions, set(known))
        except PredictionsError as err:
            where = f"items are looked up in {root} ({len(known)} found; --items or ARGUSIC_ITEMS_DIR)"
            _fail(f"{err}\n{where}" if "unknown item" in str(err) else str(err))
        except (ItemError, OSError) as err:
            _fail(str(err))
        digest = file_sha256(predictions)
        for entry in entries:
            source = {"kind": "predictions", "file_sha256": digest, "label": entry.label}
            jobs.append((load_item(known[entry.instance_id]), entry.patch, source))
    elif item is not None and patch is not None:
        loaded = _find_item(item, root)
        try:
            data = patch.read_bytes()
        except OSError as err:
            _fail(f"{patch}: cannot read: {err.strerror}")
        source = {
            "kind": "predictions",
            "file_sha256": hashlib.sha256(data).hexdigest(),
            "label": "patch-file",
        }
        jobs.append((loaded, data, source))
    else:
        _fail("give --item with --patch, or --predictions")
    out.mkdir(parents=True, exist_ok=True)
    for loaded, data, source in jobs:
        result = grade_patch(loaded, data, source=source)
        store_grade(result, out)
        failing = f" failing: {', '.join(result.failing_tests[:10])}" if result.failing_tests else ""
        excluded = f" excluded: {', '.join(result.excluded_paths)}" if result.excluded_paths else ""
        console.print(f"{loaded.item_id} {source.get('label')}: {result.verdict}{failing}{excluded}")
