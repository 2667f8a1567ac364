"""Pick lists for the trigger forms: the cycles and attempts an operator can choose from, instead of
typing ids (issue #29, "fewer keystrokes").

DAG files are parsed every few minutes and must not open the warehouse (DuckDB's lock, and seconds of
imports), so the lists come from two files that builds and publications already write and replace
atomically: the analyst copy's ``manifest.json`` (every cycle in the warehouse with its publication
state) and each published cycle's ``attempts.json`` (the attempts a maintainer can dispute, by the id
their page shows). Both are read as untrusted input: size-capped, ids checked against a strict
grammar, anything odd dropped. A missing or broken file gives an empty list, and the form field stays
a free text field (a list is a suggestion: Airflow renders JSON-schema ``examples`` of a string as a
text field with a drop-down, and the tasks check whatever is typed as before). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.layout import publish_dir
from argusic.core.settings import analyst_dir

MANIFEST_MAX_BYTES = 4 << 20  # the analyst copy's manifest: ~35 KB for a demo warehouse
ATTEMPTS_MAX_BYTES = 64 << 20  # a published cycle's attempts.json: ~3 KB an attempt
MAX_CYCLES = 36
MAX_ATTEMPTS = 500
_CYCLE_ID = re.compile(r"\d{4}-\d{2}(?:-[a-z0-9][a-z0-9-]{0,40})?")
_ATTEMPT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_ATTEMPT_ID_FIELD = re.compile(rb'"attempt_id"\s*:\s*"([A-Za-z0-9][A-Za-z0-9._-]{0,199})"')
_STATE_WORD = re.compile(r"[a-z_ ]{1,40}")


@dataclass(frozen=True)
class Choices:
    """Values to offer (most recent first) and how each is shown."""

    values: list[str] = field(default_factory=list)
    display: dict[str, str] = field(default_factory=dict)

    def param_schema(self) -> dict:
        """Keyword arguments for ``Param``: nothing when there is nothing to offer."""
        if not self.values:
            return {}
        return {"examples": list(self.values), "values_display": dict(self.display)}


def _read_capped(path: Path, limit: int) -> bytes | None:
    """The file's bytes when it is a regular file (not a link: only the analyst copy's stable folder
    link is followed, by the caller) of at most ``limit`` bytes; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def _analyst_manifest(analyst: Path | None) -> dict | None:
    folder = analyst or analyst_dir()
    try:
        current = folder.resolve(strict=True)  # the stable link to the copy published now
    except (OSError, RuntimeError):
        return None
    data = _read_capped(current / "manifest.json", MANIFEST_MAX_BYTES)
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError:
        return None
    return manifest if isinstance(manifest, dict) else None


def cycle_choices(analyst: Path | None = None) -> Choices:
    """The warehouse's cycles, newest first, shown with their publication state
    ("2026-12 (published)"), from the analyst copy's manifest."""
    manifest = _analyst_manifest(analyst)
    cycles = manifest.get("cycles") if manifest else None
    if not isinstance(cycles, list):
        return Choices()
    seen: dict[str, str] = {}
    for entry in cycles:
        if not isinstance(entry, dict):
            continue
        cycle_id, state = entry.get("cycle_id"), entry.get("publication_state")
        if not isinstance(cycle_id, str) or not _CYCLE_ID.fullmatch(cycle_id) or cycle_id in seen:
            continue
        shown = state if isinstance(state, str) and _STATE_WORD.fullmatch(state) else "state unknown"
        seen[cycle_id] = f"{cycle_id} ({shown})"
    values = sorted(seen, reverse=True)[:MAX_CYCLES]
    return Choices(values, {v: seen[v] for v in values})


def attempt_choices(published: Path | None = None, analyst: Path | None = None) -> Choices:
    """Attempt ids as published (the ids on the attempts' pages, which maintainers dispute), of the
    newest published cycles first, at most ``MAX_ATTEMPTS``."""
    root = published or publish_dir()
    manifest = _analyst_manifest(analyst)
    cycles = manifest.get("cycles") if manifest else None
    published_cycles = sorted(
        (
            c["cycle_id"]
            for c in (cycles if isinstance(cycles, list) else [])
            if isinstance(c, dict)
            and c.get("publication_state") == "published"
            and isinstance(c.get("cycle_id"), str)
            and _CYCLE_ID.fullmatch(c["cycle_id"])
        ),
        reverse=True,
    )
    values: list[str] = []
    display: dict[str, str] = {}
    for cycle_id in published_cycles:
        data = _read_capped(root / cycle_id / "attempts.json", ATTEMPTS_MAX_BYTES)
        if data is None:
            continue
        # The ids only, by pattern: parsing a month's 30 MB file as JSON at every DAG parse would
        # cost a second; a value that is not a whole id is not matched at all.
        for raw in _ATTEMPT_ID_FIELD.findall(data):
            attempt_id = raw.decode("ascii")
            if attempt_id in display or not _ATTEMPT_ID.fullmatch(attempt_id):
                continue
            values.append(attempt_id)
            display[attempt_id] = f"{attempt_id} (cycle {cycle_id})"
            if len(values) >= MAX_ATTEMPTS:
                return Choices(values, display)
    return Choices(values, display)
