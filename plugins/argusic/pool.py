"""Pool rotation: pick a cycle's projects from the candidate catalogue, deterministically.

Methodology section 6: 80% public (list and pinned commits published before the cycle), 20% private
(projects that gained popularity in the 30 days before the cycle starts, revealed after it ends).
Eligible: permissive licence, a README, runnable without a paid account. Selection is seeded by the
cycle id, so a cycle's pool can be reproduced from the same catalogue.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from argusic.settings import orchestrator_config

PERMISSIVE_LICENCES = frozenset(
    {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "0BSD", "Unlicense", "MIT-0"}
)
PRIVATE_SHARE = 0.2
POPULARITY_WINDOW_DAYS = 30
# A cycle id is one part of an attempt id (run record contract): A-Z a-z 0-9 _ - only, no dots.
CYCLE_ID = re.compile(r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})(?:-[A-Za-z0-9_-]{1,120})?")


class Candidate(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    # One part of an attempt id (run record contract): no dots, no slashes.
    project_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")
    repo_url: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    language: str
    licence: str
    has_readme: bool
    difficulty: Literal["easy", "medium", "hard"]
    size_mb: float = Field(ge=0)
    owner_marked_heavy: bool = False
    needs_gpu: bool = False
    popular_since: date
    paid_account_required: bool = False


class PoolEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    project_id: str
    repo_url: str
    commit: str
    language: str
    difficulty: str
    tier: Literal["standard", "heavy", "gpu"]
    visibility: Literal["public", "private"]


class Pool(BaseModel):
    schema_: Literal["argusic.pool/1"] = Field("argusic.pool/1", alias="schema")
    cycle_id: str
    cycle_starts: date
    cycle_ends: date
    catalogue_sha256: str
    entries: list[PoolEntry]
    excluded: dict[str, str]

    model_config = ConfigDict(populate_by_name=True)

    @property
    def public(self) -> list[PoolEntry]:
        return [e for e in self.entries if e.visibility == "public"]

    @property
    def private(self) -> list[PoolEntry]:
        return [e for e in self.entries if e.visibility == "private"]


class CatalogueError(ValueError):
    pass


def cycle_window(cycle_id: str) -> tuple[date, date]:
    """A cycle is a calendar month: `2026-12` (optionally suffixed, e.g. `2026-12-demo`)."""
    match = CYCLE_ID.fullmatch(cycle_id)
    if not match:
        raise ValueError(
            f"cycle id {cycle_id!r} must be YYYY-MM, optionally suffixed with '-' and A-Z a-z 0-9 _ - "
            "(e.g. 2026-12 or 2026-12-demo)"
        )
    year, month = int(match["year"]), int(match["month"])
    if not 1 <= month <= 12:
        raise ValueError(f"cycle id {cycle_id!r}: month {month} is not 01..12")
    start = date(year, month, 1)
    end = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    return start, end


def tier_of(candidate: Candidate) -> Literal["standard", "heavy", "gpu"]:
    if candidate.needs_gpu:
        return "gpu"
    if candidate.owner_marked_heavy or candidate.size_mb > orchestrator_config().heavy_repo_size_mb:
        return "heavy"
    return "standard"


def load_catalogue(path: Path) -> tuple[list[Candidate], str]:
    raw = Path(path).read_bytes()
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as err:
        raise CatalogueError(f"{path}: not JSON: {err}") from None
    items = doc.get("candidates") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise CatalogueError(f"{path}: expected an object with a 'candidates' list")
    candidates = []
    for index, item in enumerate(items):
        try:
            candidates.append(Candidate.model_validate(item))
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            name = item.get("project_id", f"#{index}") if isinstance(item, dict) else f"#{index}"
            raise CatalogueError(f"{path}: candidate {name}: {field}: {first['msg']}") from None
    ids = [c.project_id for c in candidates]
    if dupes := sorted({i for i in ids if ids.count(i) > 1}):
        raise CatalogueError(f"{path}: duplicate project_id {', '.join(dupes)}")
    return candidates, hashlib.sha256(raw).hexdigest()


def _ineligible_reason(candidate: Candidate) -> str | None:
    if candidate.licence not in PERMISSIVE_LICENCES:
        return f"licence {candidate.licence} is not permissive"
    if not candidate.has_readme:
        return "no README"
    if candidate.paid_account_required:
        return "needs a paid account"
    return None


def _round_robin(groups: dict[str, list[Candidate]], order_key) -> list[Candidate]:
    queues = {name: list(items) for name, items in groups.items()}
    ordered: list[Candidate] = []
    names = sorted(queues, key=order_key)
    while any(queues.values()):
        for name in names:
            if queues[name]:
                ordered.append(queues[name].pop(0))
    return ordered


def _seeded_order(cycle_id: str, candidates: list[Candidate]) -> list[Candidate]:
    """A spread of languages, then of difficulty: round-robin over languages, each language's
    candidates round-robin over difficulties, every order seeded by the cycle id."""

    def seeded(name: str) -> str:
        return hashlib.sha256(f"{cycle_id}\0{name}".encode()).hexdigest()

    by_language: dict[str, dict[str, list[Candidate]]] = defaultdict(lambda: defaultdict(list))
    for cand in sorted(candidates, key=lambda c: seeded(c.project_id)):
        by_language[cand.language][cand.difficulty].append(cand)
    spread = {lang: _round_robin(by_diff, seeded) for lang, by_diff in by_language.items()}
    return _round_robin(spread, seeded)


def select_pool(catalogue: Path, cycle_id: str, size: int | None = None) -> Pool:
    """Pick the pool: `size` projects (default: as many as the 80/20 split allows)."""
    candidates, digest = load_catalogue(catalogue)
    starts, ends = cycle_window(cycle_id)
    window_start = starts - timedelta(days=POPULARITY_WINDOW_DAYS)
    excluded: dict[str, str] = {}
    recent, established = [], []
    for cand in candidates:
        if reason := _ineligible_reason(cand):
            excluded[cand.project_id] = reason
        elif window_start <= cand.popular_since < starts:
            recent.append(cand)
        elif cand.popular_since >= starts:
            excluded[cand.project_id] = "gained popularity after the cycle starts"
        else:
            established.append(cand)

    # Largest pool whose private share is exactly 20% (rounded) and fillable from both groups.
    largest = 0
    for n in range(1, len(recent) + len(established) + 1):
        n_private = round(n * PRIVATE_SHARE)
        if n_private <= len(recent) and n - n_private <= len(established):
            largest = n
    if size is None:
        size = largest
    if size < 1 or size > largest:
        raise CatalogueError(
            f"cannot draw a pool of {size} for {cycle_id}: {len(established)} public and {len(recent)} "
            f"recently popular eligible candidates allow at most {largest} at an 80/20 split"
        )
    n_private = round(size * PRIVATE_SHARE)
    chosen = [(c, "private") for c in _seeded_order(cycle_id, recent)[:n_private]]
    chosen += [(c, "public") for c in _seeded_order(cycle_id, established)[: size - n_private]]
    entries = [
        PoolEntry(
            project_id=c.project_id,
            repo_url=c.repo_url,
            commit=c.commit,
            language=c.language,
            difficulty=c.difficulty,
            tier=tier_of(c),
            visibility=vis,
        )
        for c, vis in sorted(chosen, key=lambda cv: cv[0].project_id)
    ]
    return Pool(
        cycle_id=cycle_id,
        cycle_starts=starts,
        cycle_ends=ends,
        catalogue_sha256=digest,
        entries=entries,
        excluded=excluded,
    )


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_pool(pool: Pool, pools_dir: Path, publish_dir: Path) -> dict[str, str]:
    """Write the full pool (internal) and publish the public list with pinned commits.

    The private part stays sealed in the internal file until `reveal_private` runs after the cycle.
    Rewriting the same pool is a no-op; a different pool for an existing cycle is refused.
    """
    internal = pools_dir / pool.cycle_id / "pool.json"
    text = pool.model_dump_json(by_alias=True, indent=2)
    if internal.exists() and internal.read_text() != text:
        raise CatalogueError(f"{internal}: a different pool is already recorded for cycle {pool.cycle_id}")
    _write_atomic(internal, text)
    public = {
        "schema": "argusic.public_pool/1",
        "cycle_id": pool.cycle_id,
        "published_before": pool.cycle_starts.isoformat(),
        "projects": [{"project_id": e.project_id, "commit": e.commit, "tier": e.tier} for e in pool.public],
        "private_count": len(pool.private),
    }
    public_path = publish_dir / pool.cycle_id / "public_pool.json"
    _write_atomic(public_path, json.dumps(public, indent=2) + "\n")
    return {"pool": str(internal), "public": str(public_path)}


def reveal_private(pool_path: Path, publish_dir: Path, today: date) -> Path:
    """Publish the private part, only once the cycle has ended."""
    pool = Pool.model_validate_json(Path(pool_path).read_text())
    if today <= pool.cycle_ends:
        raise CatalogueError(f"cycle {pool.cycle_id} ends {pool.cycle_ends}: the private pool stays sealed")
    out = publish_dir / pool.cycle_id / "private_pool.json"
    doc = {
        "schema": "argusic.private_pool/1",
        "cycle_id": pool.cycle_id,
        "revealed_after": pool.cycle_ends.isoformat(),
        "projects": [{"project_id": e.project_id, "commit": e.commit, "tier": e.tier} for e in pool.private],
    }
    _write_atomic(out, json.dumps(doc, indent=2) + "\n")
    return out


def load_pool(path: Path) -> Pool:
    return Pool.model_validate_json(Path(path).read_text())
