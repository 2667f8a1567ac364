"""`argusic render ATTEMPT`: an attempt's served recording rendered, linked to its published run page.

The recording is the served (masked) copy, fetched and checked against its record exactly as
`argusic play` does (``argusic.publication.replay``); raw evidence is never read. The link back comes
from the cycle's published ``attempts.json``: the attempt's published id (its agent part the neutral
identity code) and its run page. An attempt whose project is sealed in the publication is refused (its
run page shows no served copies until the reveal); an attempt not published yet is rendered with "not
published" in place of the link (for looking at, not for sharing).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from argusic.attempts.story import _result_words as result_words  # the story's end words, one source
from argusic.core.evidence import served_segment
from argusic.core.layout import publish_dir
from argusic.core.record import parse_attempt_id
from argusic.core.runs_store import RunsStoreError, pull
from argusic.core.safe_io import Unreadable, read_capped
from argusic.publication.files import operator_attempt_id
from argusic.publication.render.output import Link, Rendering, RenderRefused, render_recording
from argusic.publication.replay import ReplayRefused, fetch_served, find_attempt
from argusic.publication.sealing import read_revealed
from argusic.sources.pool import load_pool
from argusic.warehouse.dbt_build import PublicationBlocked

SITE_URL_ENV = "ARGUSIC_PUBLIC_SITE_URL"
MAX_PUBLISHED_BYTES = 64 * 1024**2


SEALED_WORDS = (
    "its project is private and sealed until the cycle's private projects are revealed; its run page "
    "shows no recording, and no rendering is made"
)


def is_sealed(cycle_id: str, project_id: str) -> bool:
    """Whether `project_id` is a private project of the cycle's pool (the runs store's
    ``pools/<cycle>/pool.json``) that ``private_pool.json`` has not revealed. RenderRefused when the
    pool or the reveal cannot be read: a seal that cannot be known is kept."""
    try:
        path = pull(f"pools/{cycle_id}/pool.json")
        private: set[str] = set()
        if path is not None and path.is_file():
            pool = load_pool(path)
            if pool.cycle_id == cycle_id:
                private = {entry.project_id for entry in pool.private}
        return project_id in private - read_revealed(publish_dir(), cycle_id)
    except (RunsStoreError, OSError, ValueError, PublicationBlocked) as err:
        raise RenderRefused(
            f"cycle {cycle_id}: whether its project is sealed cannot be read: {err}"
        ) from None


def site_url() -> str:
    """ARGUSIC_PUBLIC_SITE_URL (the public site's address), else '' (links relative to the site)."""
    value = os.environ.get(SITE_URL_ENV, "").strip()
    if value and not value.startswith(("https://", "http://")):
        raise RenderRefused(f"{SITE_URL_ENV}={value!r}: expected a public http(s):// address")
    return value.rstrip("/") + "/" if value else ""


def run_page_url(cycle_id: str, published_id: str) -> str:
    """The run page as the site writes it (``cycles/<cycle>/runs/<attempt>.html``)."""
    return f"{site_url()}cycles/{cycle_id}/runs/{served_segment(published_id)}.html"


def published_attempts(cycle_id: str, folder: Path | None = None) -> list[dict[str, Any]]:
    """The cycle's attempts.json rows as published ([] when the cycle is not published)."""
    path = (folder or publish_dir()) / cycle_id / "attempts.json"
    try:
        doc = json.loads(read_capped(path, MAX_PUBLISHED_BYTES))
    except (Unreadable, FileNotFoundError, ValueError):
        return []
    rows = doc.get("attempts") if isinstance(doc, dict) else None
    return [row for row in rows or [] if isinstance(row, dict) and isinstance(row.get("attempt_id"), str)]


def published_row(cycle_id: str, attempt_id: str, folder: Path | None = None) -> dict[str, Any] | None:
    for row in published_attempts(cycle_id, folder):
        if attempt_id in (row["attempt_id"], operator_attempt_id(row)):
            return row
    return None


def render_attempt(
    attempt_id: str,
    out_dir: Path,
    *,
    fmt: str = "mp4",
    fps: int | None = None,
    idle_limit: float = 2.0,
    max_seconds: float = 120.0,
) -> Rendering:
    """Render `attempt_id`'s served recording into `out_dir`; RenderRefused with the reason. The id is
    the operator's or the published one (its agent part the identity code)."""
    try:
        cycle_id = str(parse_attempt_id(attempt_id)["cycle_id"])
    except ValueError as err:
        raise RenderRefused(f"not an attempt id: {err}") from None
    row = published_row(cycle_id, attempt_id)
    if row is not None and row.get("sealed"):
        raise RenderRefused(f"{row['attempt_id']}: {SEALED_WORDS}")
    try:
        facts = find_attempt(operator_attempt_id(row) if row is not None else attempt_id)
    except ReplayRefused as err:
        raise RenderRefused(str(err)) from None
    record = facts.record
    if is_sealed(record.cycle_id, record.project_id):  # by the operator's id: the same seal
        raise RenderRefused(f"{record.attempt_id}: {SEALED_WORDS}")
    row = published_row(record.cycle_id, record.attempt_id)
    if row is not None:
        link = Link(row["attempt_id"], run_page_url(record.cycle_id, row["attempt_id"]), None)
        name = served_segment(row["attempt_id"])
    else:
        link = Link("an attempt not published yet (not for sharing)", None, None)
        name = served_segment(record.attempt_id)
    evidence = record.evidence.recording
    link = Link(link.attempt, link.run_page, evidence.sha256 if evidence else None)
    with tempfile.TemporaryDirectory(prefix="argusic-render-") as tmp:
        try:
            path = fetch_served(facts, "recording", Path(tmp) / "recording.cast")
        except ReplayRefused as err:
            raise RenderRefused(str(err)) from None
        data = path.read_bytes()
    return render_recording(
        data,
        out_dir,
        name,
        link,
        fmt=fmt,
        fps=fps,
        idle_limit=idle_limit,
        max_seconds=max_seconds,
        ending=result_words(record),
    )
