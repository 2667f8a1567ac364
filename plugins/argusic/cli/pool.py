"""`argusic pool` and `argusic catalogue check`: drawing a cycle's pool from a candidate catalogue,
and checking a catalogue (argusic.catalogue/1, docs/catalogue.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from argusic.cli.common import console, fail
from argusic.cycle.pools import read_selection, rotate_pool, source_check
from argusic.sources.catalogue import CatalogueError, load_catalogue
from argusic.sources.pool import load_pool, rotation_line


def print_selection(pool_path: Path) -> None:
    """How a pool was drawn: counts, a shortfall, every exclusion with its reason."""
    report = read_selection(pool_path)
    pool = load_pool(pool_path)
    if report is None:
        console.print(
            f"pool {pool_path}: {len(pool.entries)} project(s) (drawn elsewhere: no selection report)"
        )
        return
    first, last = report["popularity_window"]
    console.print(
        f"pool of {pool.cycle_id}: {report['size']} project(s), {len(pool.public)} public and "
        f"{len(pool.private)} private, from {report['candidates']} candidate(s): "
        f"{report['public_available']} public and {report['recent_available']} recently popular "
        f"(popular_since {first}..{last}, the month before the cycle) usable"
    )
    if "rotation_excluded" in report:  # reports written before the rotation rule have none
        console.print(rotation_line(report["rotation_excluded"], report.get("history", [])))
    if report.get("shortfall"):
        console.print(f"[yellow]{report['shortfall']}[/]")
    for pid, reason in report["excluded"].items():
        console.print(f"  [red]excluded[/] {pid}: {reason}")
    if report["not_drawn"]:
        console.print("  eligible, not drawn this cycle: " + ", ".join(report["not_drawn"]))
    for notice in report["notices"]:
        console.print(f"  note: {notice}")


RepoRoots = Annotated[
    list[Path] | None,
    typer.Option(
        "--repo-root",
        help="A folder whose local bare repositories a catalogue may name (repeatable; also "
        "ARGUSIC_REPO_ROOTS). Remote URLs need none.",
    ),
]


def pool(
    cycle: Annotated[str, typer.Option(help="Cycle id, YYYY-MM")],
    catalogue: Annotated[Path, typer.Option(exists=True, dir_okay=False)],
    size: Annotated[int | None, typer.Option(help="Pool size (default: largest 80/20 pool)")] = None,
    repo_root: RepoRoots = None,
) -> None:
    """Select a cycle's pool from a candidate catalogue and publish its public list.

    Every candidate's repository is mirrored (remote) or checked (local) and its pinned commit
    verified first; a candidate that fails is left out with its reason."""
    try:
        paths = rotate_pool(cycle, catalogue, size, repo_root or ())
    except (CatalogueError, ValueError) as err:
        fail(str(err))
    print_selection(Path(paths["pool"]))
    for name, path in paths.items():
        console.print(f"{name}: {path}")


catalogue_app = typer.Typer(help="Candidate catalogues (argusic.catalogue/1, docs/catalogue.md).")


@catalogue_app.command("check")
def catalogue_check(
    path: Annotated[Path, typer.Argument(help="The catalogue JSON file")],
    mirror: Annotated[
        bool, typer.Option("--mirror/--no-mirror", help="Also mirror every repository and verify its commit")
    ] = False,
    repo_root: RepoRoots = None,
) -> None:
    """Check a catalogue: every problem at once (exit 2), how licences were read, and with --mirror
    whether each candidate's repository and pinned commit can be had (exit 1 if any cannot)."""
    try:
        loaded = load_catalogue(path)
    except CatalogueError as err:
        fail(str(err))
    for notice in loaded.notices:
        console.print(f"note: {notice}")
    console.print(f"{path}: {len(loaded.candidates)} candidate(s), schema ok (sha256 {loaded.sha256[:12]}…)")
    if not mirror:
        return
    started = time.monotonic()
    reasons = source_check(repo_root or ())(loaded.candidates)
    for cand in loaded.candidates:
        if cand.project_id in reasons:
            console.print(f"  [red]unavailable[/] {cand.project_id}: {reasons[cand.project_id]}")
        else:
            console.print(f"  [green]ok[/] {cand.project_id} {cand.commit[:12]} ({cand.repo_url})")
    console.print(
        f"{len(loaded.candidates) - len(reasons)} of {len(loaded.candidates)} repositories usable "
        f"({time.monotonic() - started:.1f} s)"
    )
    if reasons:
        raise typer.Exit(code=1)
