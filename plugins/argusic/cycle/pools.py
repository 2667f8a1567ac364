"""A cycle's pool: drawn from the checked catalogue, rotated each cycle, revealed when the cycle ends."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable
from datetime import date, datetime
from pathlib import Path

from argusic.core.layout import pool_path_for, pools_dir, publish_dir
from argusic.core.runs_store import local_path, pull, pull_each, push
from argusic.core.settings import forge_dir
from argusic.sources import mirror
from argusic.sources.forge import build_forge
from argusic.sources.pool import (
    Candidate,
    CatalogueError,
    Pool,
    PoolSelection,
    cycle_window,
    draw_pool,
    load_pool,
    load_pool_history,
    reveal_private,
    write_pool,
)

log = logging.getLogger(__name__)


def default_catalogue(build: bool = False) -> Path:
    """ARGUSIC_CATALOGUE, or the demo forge's catalogue (`<ARGUSIC_FORGE_DIR>/catalogue.json`; with
    `build`, the forge is made first when it is missing: it is deterministic, so any machine makes
    the same repositories and commits)."""
    if catalogue := os.environ.get("ARGUSIC_CATALOGUE"):
        return Path(catalogue)
    path = forge_dir() / "catalogue.json"
    if build and not path.exists():
        return build_forge(forge_dir())
    return path


def reveal_if_ended(cycle_id: str, today: date) -> str | None:
    """Publish the private part of `cycle_id` if it has ended; None when there is nothing to do yet
    (no pool recorded for that cycle, or the cycle is still running)."""
    pool_path = pool_path_for(cycle_id)
    if not pool_path.exists():
        return None
    try:
        return str(reveal_private(pool_path, publish_dir(), today))
    except CatalogueError:
        return None  # still sealed: the cycle has not ended on `today`


def resolve_pool(
    cycle_id: str,
    pool: str | None = None,
    catalogue: str | None = None,
    size: int | None = None,
    repo_roots: list[str] | None = None,
) -> str:
    """The pool a cycle run uses: an explicit pool file; else the one the rotation DAG recorded for the
    cycle; else draw it now from the catalogue (same rules, idempotent: a different pool is refused).
    Drawing reads the earlier cycles' pools in the pools folder (the rotation: no project private
    twice), mirrors every candidate's repository and verifies its pinned commit first; a candidate
    that fails or that the rotation bars is left out with its reason (runs/pools/<cycle>/selection.json)."""
    if pool:
        path = local_path(pool)
        if load_pool(path).cycle_id != cycle_id:
            raise ValueError(f"{path} is the pool of cycle {load_pool(path).cycle_id}, not {cycle_id}")
        return str(pool)
    recorded = pool_path_for(cycle_id)
    pull(f"pools/{cycle_id}/pool.json")  # on a cluster: the pool another host recorded
    if recorded.exists():
        existing = load_pool(recorded)
        asked = []
        if catalogue:
            try:
                digest = hashlib.sha256(Path(catalogue).read_bytes()).hexdigest()
            except OSError as err:
                raise CatalogueError(f"catalogue {catalogue}: cannot be read ({err.strerror})") from None
            if digest != existing.catalogue_sha256:
                asked.append(f"catalogue {catalogue} (sha256 {digest[:12]}…)")
        if size is not None and size != len(existing.entries):
            asked.append(f"pool_size {size}")
        if asked:
            raise CatalogueError(recorded_pool_conflict(cycle_id, recorded, " and ".join(asked)))
        return push(recorded)
    chosen = Path(catalogue) if catalogue else default_catalogue(build=True)
    if not chosen.is_file():
        raise CatalogueError(f"catalogue {chosen}: no such file (give an absolute path on the worker)")
    written = rotate_pool(cycle_id, chosen, size, repo_roots or ())
    return push(written["pool"])  # XCom: the pool's URI on a cluster (plan may run on another host)


def recorded_pool_conflict(cycle_id: str, recorded: Path, asked: str) -> str:
    """Why a cycle with a recorded pool cannot be run with another one, and the two ways on."""
    pool = load_pool(recorded)
    ids = ", ".join(e.project_id for e in pool.entries[:8]) + (", …" if len(pool.entries) > 8 else "")
    return "\n".join(
        [
            f"cycle {cycle_id} already has a pool: {recorded}",
            f"  ({len(pool.entries)} projects: {ids}; drawn from the catalogue with sha256 "
            f"{pool.catalogue_sha256[:12]}…), and a cycle's pool never changes once drawn.",
            f"This run asks for {asked}. Either:",
            f"  - run cycle {cycle_id} with its pool: leave pool_size and catalogue empty (attempts "
            "measured before are not run twice), or",
            f"  - use a new cycle id for another pool (e.g. {cycle_id}-b).",
        ]
    )


SELECTION_FILE = "selection.json"  # beside the internal pool: how it was drawn (counts, exclusions)


def source_check(repo_roots: Iterable[Path | str] = ()) -> Callable[[list[Candidate]], dict[str, str]]:
    """The pool's source check: mirror remote repositories, check local ones against the allowed
    roots, and verify every pinned commit; {project_id: reason} for the candidates that fail."""
    roots = mirror.repo_roots(repo_roots)

    def check(candidates: list[Candidate]) -> dict[str, str]:
        return mirror.check_sources(((c.project_id, c.repo_url, c.commit) for c in candidates), roots=roots)

    return check


def pool_history() -> list[Pool]:
    """The pools recorded in the pools folder (on a cluster, the runs store's first): the history the
    rotation reads (which projects were private in earlier cycles). An unreadable one is a
    CatalogueError naming the file."""
    pull_each("pools", "pool.json")
    return load_pool_history(pools_dir())


def draw_checked_pool(
    cycle_id: str,
    catalogue: Path,
    size: int | None = None,
    repo_roots: Iterable[Path | str] = (),
    history: Iterable[Pool] | None = None,
) -> PoolSelection:
    """Draw the cycle's pool, every candidate's repository mirrored and its commit verified first.
    `history`: the earlier cycles' pools (None: those recorded in the pools folder, `pool_history`)."""
    cycle_window(cycle_id)  # a bad cycle id is refused before any fetch
    earlier = pool_history() if history is None else list(history)  # a bad pool file: before any fetch
    return draw_pool(Path(catalogue), cycle_id, size, check_sources=source_check(repo_roots), history=earlier)


def rotate_pool(
    cycle_id: str, catalogue: Path, size: int | None = None, repo_roots: Iterable[Path | str] = ()
) -> dict[str, str]:
    """Select and write the cycle's pool, the earlier cycles' pools (the pools folder) as its history;
    returns the paths written (internal pool, public list, and the selection report: counts, shortfall,
    every exclusion with its reason, what the rotation left out)."""
    selection = draw_checked_pool(cycle_id, catalogue, size, repo_roots, history=pool_history())
    for line in selection.lines():
        log.info("%s", line)
    paths = write_pool(selection.pool, pools_dir(), publish_dir())
    report = Path(paths["pool"]).with_name(SELECTION_FILE)
    tmp = report.with_name(f".{report.name}.{os.getpid()}.tmp")
    tmp.write_text(selection.to_json() + "\n")
    tmp.replace(report)
    push(report)  # on a cluster: every host plans and runs from the runs store's pool
    push(paths["pool"])
    return paths | {"selection": str(report)}


def latest_cycle_of(rows: Iterable[tuple[str, datetime | None]]) -> str:
    """The latest of (cycle_id, end of its latest attempt) rows: by the cycle's month first, then by
    that time, never by the name (`2026-12-demo` sorts after `2026-12` by name, not by date)."""

    def when(row: tuple[str, datetime | None]) -> tuple:
        try:
            start = cycle_window(row[0])[0]
        except ValueError:
            start = date.min
        moment = row[1].timestamp() if row[1] is not None else float("-inf")
        return (start, moment)

    return max(rows, key=when)[0]


def read_selection(pool_path: Path) -> dict | None:
    """The selection report written beside a pool (None for a pool drawn elsewhere)."""
    try:
        return json.loads(Path(pool_path).with_name(SELECTION_FILE).read_text())
    except (OSError, ValueError):
        return None
