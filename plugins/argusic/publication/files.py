"""The published files: their schema ids, their modes (for everyone to read), and how they are written
(atomically). The board and the site write through these."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from argusic.core.record import ATTEMPT_ID_RE

BOARD_SCHEMA = "argusic.board/1"


ATTEMPTS_SCHEMA = "argusic.cycle_attempts/1"


PUBLISHED_FILE_MODE = 0o644  # published files are for everyone to read


PUBLISHED_DIR_MODE = 0o755


def make_published_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) world-readable; an existing folder gets 0755 too."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True)
    for folder in (*missing, path):
        os.chmod(folder, PUBLISHED_DIR_MODE)


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all, world-readable (0644, its folder 0755)."""
    make_published_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, PUBLISHED_FILE_MODE)  # mkstemp makes 0600
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def published_attempt_id(attempt_id: Any, code: str | None) -> Any:
    """An attempt id with its agent part replaced by the identity's code (unchanged when there is no
    code, or the id is not of the grammar)."""
    if not isinstance(attempt_id, str) or not code:
        return attempt_id
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    if not match:
        return attempt_id
    start, end = match.span("agent_id")
    return attempt_id[:start] + code + attempt_id[end:]


def operator_attempt_id(attempt: dict[str, Any]) -> str:
    """The attempt id the warehouse and the evidence store know a published attempt by: its agent
    part the operator's agent id (``configuration.agent_id``) again (the project part as published:
    a sealed project's label stays a label)."""
    operator = (attempt.get("configuration") or {}).get("agent_id")
    return published_attempt_id(attempt["attempt_id"], operator) if operator else attempt["attempt_id"]
