"""Pick lists for the trigger forms: the cycles and attempts an operator can choose from, instead of
typing ids (issue #29, "fewer keystrokes").

DAG files are parsed every few minutes and must not open the warehouse (DuckDB's lock, and seconds of
imports), so the lists come from two files that builds and publications already write and replace
atomically: the analyst copy's ``manifest.json`` (every cycle in the warehouse with its publication
state) and each published cycle's ``attempts.json`` (the attempts a maintainer can dispute, by the id
their page shows). Both are read as untrusted input: size-capped, ids checked against a strict
grammar, anything odd dropped. A missing or broken file gives an empty list, and the form field stays
a free text field (a list is a suggestion: Airflow renders JSON-schema ``examples`` of a string as a
text field with a drop-down, and the tasks check whatever is typed as before). No heavy import:
files are read by the project's capped reader, ``core.safe_io.read_capped``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.layout import publish_dir
from argusic.core.safe_io import Unreadable, read_capped
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
    """The file's bytes by the project's one capped reader (a regular file, no link, at most
    ``limit`` bytes); None for anything it refuses: a pick list is only a suggestion."""
    try:
        return read_capped(path, limit)
    except Unreadable:
        return None


def _manifest_cycles(analyst: Path | None) -> dict[str, str | None]:
    """The analyst copy's cycles (the stable link to the copy published now is followed), each id
    checked, with its publication state as written (None when it is not a plain word); {} without a
    usable manifest."""
    folder = analyst or analyst_dir()
    try:
        current = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return {}
    data = _read_capped(current / "manifest.json", MANIFEST_MAX_BYTES)
    try:
        manifest = json.loads(data) if data is not None else None
    except ValueError:
        return {}
    cycles = manifest.get("cycles") if isinstance(manifest, dict) else None
    found: dict[str, str | None] = {}
    for entry in cycles if isinstance(cycles, list) else []:
        cycle_id = entry.get("cycle_id") if isinstance(entry, dict) else None
        if isinstance(cycle_id, str) and _CYCLE_ID.fullmatch(cycle_id) and cycle_id not in found:
            state = entry.get("publication_state")
            found[cycle_id] = state if isinstance(state, str) and _STATE_WORD.fullmatch(state) else None
    return found


def cycle_choices(analyst: Path | None = None) -> Choices:
    """The warehouse's cycles, newest first, shown with their publication state
    ("2026-12 (published)"), from the analyst copy's manifest."""
    cycles = _manifest_cycles(analyst)
    values = sorted(cycles, reverse=True)[:MAX_CYCLES]
    return Choices(values, {v: f"{v} ({cycles[v] or 'state unknown'})" for v in values})


def attempt_choices(published: Path | None = None, analyst: Path | None = None) -> Choices:
    """Attempt ids as published (the ids on the attempts' pages, which maintainers dispute), of the
    newest published cycles first, at most ``MAX_ATTEMPTS``."""
    root = published or publish_dir()
    cycles = _manifest_cycles(analyst)
    published_cycles = sorted((c for c, state in cycles.items() if state == "published"), reverse=True)
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
