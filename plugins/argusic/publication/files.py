"""The published files: their schema ids, their modes (for everyone to read), and how they are written
(atomically). The board and the site write through these."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
