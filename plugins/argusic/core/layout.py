"""Where every file lies: runs, plans, pools, the published folder (DESIGN.md: core/layout)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from argusic.core.settings import project_root, runs_dir


class _Attempt(Protocol):
    """What a folder needs of an AttemptSpec (core.spec imports this module: no import back)."""

    @property
    def cycle_id(self) -> str: ...

    @property
    def attempt_id(self) -> str: ...


def publish_dir() -> Path:
    return Path(os.environ.get("ARGUSIC_PUBLISH_DIR", project_root() / "published"))


def pools_dir() -> Path:
    return runs_dir() / "pools"


def pool_path_for(cycle_id: str) -> Path:
    """Where `rotate_pool` writes a cycle's internal pool."""
    return pools_dir() / cycle_id / "pool.json"


def plan_dir(cycle_id: str) -> Path:
    return runs_dir() / cycle_id / "plan"


def attempt_dir(spec: _Attempt, base: Path | None = None) -> Path:
    return (base or runs_dir()) / spec.cycle_id / spec.attempt_id


RECORD_FILE = "run_record.json"
GRADE_FILE = "grade.json"  # a repair attempt's grade, beside its record (then in the evidence store)
