"""Pool rotation: pick a cycle's projects from the candidate catalogue, deterministically.

Methodology section 6: 80% public (list and pinned commits published before the cycle), 20% private
(projects that gained popularity in the 30 days before the cycle starts, revealed after it ends).
Eligible: permissive licence, a README, runnable without a paid account. Selection is seeded by the
cycle id, so a cycle's pool can be reproduced from the same catalogue.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from argusic.core.safe_io import write_atomic
from argusic.core.settings import orchestrator_config
from argusic.sources.catalogue import (
    Candidate,
    CatalogueError,
    licence_is_permissive,
    load_catalogue,
)

# Checks candidates' repositories; returns {project_id: reason} for those that cannot be used.
SourceCheck = Callable[[list[Candidate]], dict[str, str]]

PRIVATE_SHARE = 0.2
POPULARITY_WINDOW_DAYS = 30
# A cycle id is one part of an attempt id (run record contract): A-Z a-z 0-9 _ - only, no dots.
CYCLE_ID = re.compile(r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})(?:-[A-Za-z0-9_-]{1,120})?")


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


def _ineligible_reason(candidate: Candidate) -> str | None:
    if not licence_is_permissive(candidate.licence):
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


@dataclass(frozen=True)
class PoolSelection:
    """A drawn pool and how it was drawn: counts, every exclusion with its reason, any shortfall."""

    pool: Pool
    candidates: int
    public_available: int  # eligible, popular before the window, repository checked (when checked)
    recent_available: int  # eligible, popular within the 30 days before the cycle starts
    largest: int  # the largest pool an 80/20 split allows from them
    popularity_window: tuple[date, date]
    notices: list[str] = field(default_factory=list)
    not_drawn: list[str] = field(default_factory=list)  # eligible and available, not in this pool

    @property
    def shortfall(self) -> str | None:
        return shortfall_message(
            self.public_available, self.recent_available, self.largest, self.popularity_window
        )

    def lines(self) -> list[str]:
        """What an operator reads: counts, the shortfall, every exclusion with its reason."""
        pool = self.pool
        first, last = self.popularity_window
        out = [
            f"pool of {pool.cycle_id}: {len(pool.entries)} project(s), {len(pool.public)} public and "
            f"{len(pool.private)} private, from {self.candidates} candidate(s): {self.public_available} "
            f"public and {self.recent_available} recently popular (popular_since {first}..{last}) usable, "
            f"{len(pool.excluded)} excluded, {len(self.not_drawn)} eligible not drawn"
        ]
        if shortfall := self.shortfall:
            out.append(shortfall)
        out += [f"excluded {pid}: {reason}" for pid, reason in sorted(pool.excluded.items())]
        if self.not_drawn:
            out.append("eligible, not drawn this cycle: " + ", ".join(self.not_drawn))
        out += [f"note: {n}" for n in self.notices]
        return out

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema": "argusic.pool_selection/1",
                "cycle_id": self.pool.cycle_id,
                "catalogue_sha256": self.pool.catalogue_sha256,
                "candidates": self.candidates,
                "public_available": self.public_available,
                "recent_available": self.recent_available,
                "largest": self.largest,
                "size": len(self.pool.entries),
                "popularity_window": [d.isoformat() for d in self.popularity_window],
                "shortfall": self.shortfall,
                "excluded": dict(sorted(self.pool.excluded.items())),
                "not_drawn": self.not_drawn,
                "notices": self.notices,
            },
            indent=2,
        )


def largest_split(public: int, recent: int) -> int:
    """The largest pool whose private share is exactly 20% (rounded) and fillable from both groups."""
    largest = 0
    for n in range(1, public + recent + 1):
        n_private = round(n * PRIVATE_SHARE)
        if n_private <= recent and n - n_private <= public:
            largest = n
    return largest


def shortfall_message(public: int, recent: int, largest: int, window: tuple[date, date]) -> str | None:
    """Say why usable candidates are left out by the 80/20 split, and how many more would use them."""
    if largest >= public + recent:
        return None
    n_private = round(largest * PRIVATE_SHARE)
    n_public = largest - n_private
    first, last = window
    if n_public < public:  # too few recently popular candidates
        total = public
        while total - round(total * PRIVATE_SHARE) < public:
            total += 1
        need = round(total * PRIVATE_SHARE) - recent
        return (
            f"pool shortfall: {recent} recently popular candidate(s) (popular_since {first}..{last}) allow "
            f"{n_private} private and so only {n_public} of the {public} usable public candidates at an "
            f"80/20 split; {public - n_public} public candidate(s) are left out. Add {need} more recently "
            "popular candidate(s) to use them all."
        )
    total = recent
    while round(total * PRIVATE_SHARE) < recent:
        total += 1
    need = total - round(total * PRIVATE_SHARE) - public
    return (
        f"pool shortfall: {public} public candidate(s) allow only {n_private} of the {recent} usable "
        f"recently popular candidates at an 80/20 split; {recent - n_private} are left out. Add {need} "
        "more public candidate(s) (popular before the window) to use them all."
    )


def _refusal(head: str, excluded: dict[str, str]) -> CatalogueError:
    lines = [head]
    if excluded:
        lines.append("excluded candidates:")
        lines += [f"  - {pid}: {reason}" for pid, reason in sorted(excluded.items())]
    return CatalogueError("\n".join(lines))


def _take(
    order: list[Candidate], n: int, check: SourceCheck | None, excluded: dict[str, str]
) -> list[Candidate]:
    """The first `n` candidates of `order` whose repositories pass `check` (checked batch by batch)."""
    chosen: list[Candidate] = []
    index = 0
    while len(chosen) < n and index < len(order):
        batch = order[index : index + n - len(chosen)]
        index += len(batch)
        reasons = check(batch) if check else {}
        for cand in batch:
            if cand.project_id in reasons:
                excluded[cand.project_id] = reasons[cand.project_id]
            else:
                chosen.append(cand)
    return chosen


def draw_pool(
    catalogue: Path, cycle_id: str, size: int | None = None, check_sources: SourceCheck | None = None
) -> PoolSelection:
    """Pick the pool: `size` projects (default: as many as the 80/20 split allows).

    With `check_sources`, candidates whose repository cannot be fetched or lacks its pinned commit are
    excluded with their reason (the default size checks every eligible candidate; an explicit size
    checks them in draw order until the pool is full)."""
    starts, ends = cycle_window(cycle_id)
    loaded = load_catalogue(catalogue)
    window = (starts - timedelta(days=POPULARITY_WINDOW_DAYS), starts - timedelta(days=1))
    excluded: dict[str, str] = {}
    recent, established = [], []
    for cand in loaded.candidates:
        if reason := _ineligible_reason(cand):
            excluded[cand.project_id] = reason
        elif window[0] <= cand.popular_since < starts:
            recent.append(cand)
        elif cand.popular_since >= starts:
            excluded[cand.project_id] = "gained popularity after the cycle starts"
        else:
            established.append(cand)
    recent_order = _seeded_order(cycle_id, recent)
    public_order = _seeded_order(cycle_id, established)
    if size is None:
        if check_sources:
            reasons = check_sources(recent_order + public_order)
            excluded.update(reasons)
            recent_order = [c for c in recent_order if c.project_id not in reasons]
            public_order = [c for c in public_order if c.project_id not in reasons]
        size = largest_split(len(public_order), len(recent_order))
    largest = largest_split(len(public_order), len(recent_order))
    if size < 1 or size > largest:
        raise _refusal(
            f"cannot draw a pool of {size} for {cycle_id}: {len(public_order)} public and "
            f"{len(recent_order)} recently popular (popular_since {window[0]}..{window[1]}) eligible "
            f"candidates of {len(loaded.candidates)} allow at most {largest} at an 80/20 split",
            excluded,
        )
    n_private = round(size * PRIVATE_SHARE)
    private = _take(recent_order, n_private, check_sources, excluded)
    public = _take(public_order, size - n_private, check_sources, excluded)
    if len(private) < n_private or len(public) < size - n_private:
        raise _refusal(
            f"cannot draw a pool of {size} for {cycle_id}: only {len(public)} public and {len(private)} "
            f"recently popular candidates have a usable repository "
            f"({size - n_private} and {n_private} needed)",
            excluded,
        )
    chosen = [(c, "private") for c in private] + [(c, "public") for c in public]
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
    pool = Pool(
        cycle_id=cycle_id,
        cycle_starts=starts,
        cycle_ends=ends,
        catalogue_sha256=loaded.sha256,
        entries=entries,
        excluded=excluded,
    )
    drawn = {e.project_id for e in entries}
    not_drawn = sorted(
        c.project_id for c in recent_order + public_order if c.project_id not in drawn | set(excluded)
    )
    return PoolSelection(
        pool=pool,
        candidates=len(loaded.candidates),
        public_available=len([c for c in public_order if c.project_id not in excluded]),
        recent_available=len([c for c in recent_order if c.project_id not in excluded]),
        largest=largest,
        popularity_window=window,
        notices=loaded.notices,
        not_drawn=not_drawn,
    )


def select_pool(
    catalogue: Path, cycle_id: str, size: int | None = None, check_sources: SourceCheck | None = None
) -> Pool:
    """The pool alone (see draw_pool)."""
    return draw_pool(catalogue, cycle_id, size, check_sources).pool


def write_pool(pool: Pool, pools_dir: Path, publish_dir: Path) -> dict[str, str]:
    """Write the full pool (internal) and publish the public list with pinned commits.

    The private part stays sealed in the internal file until `reveal_private` runs after the cycle.
    Rewriting the same pool is a no-op; a different pool for an existing cycle is refused.
    """
    internal = pools_dir / pool.cycle_id / "pool.json"
    text = pool.model_dump_json(by_alias=True, indent=2)
    if internal.exists() and internal.read_text() != text:
        raise CatalogueError(
            f"{internal}: a different pool is already recorded for cycle {pool.cycle_id}, and a cycle's pool "
            "never changes once drawn: run the cycle with that pool (the same catalogue and size, or the "
            f"file itself), or use a new cycle id (e.g. {pool.cycle_id}-b)"
        )
    write_atomic(internal, text)
    public = {
        "schema": "argusic.public_pool/1",
        "cycle_id": pool.cycle_id,
        "published_before": pool.cycle_starts.isoformat(),
        "projects": [{"project_id": e.project_id, "commit": e.commit, "tier": e.tier} for e in pool.public],
        "private_count": len(pool.private),
    }
    public_path = publish_dir / pool.cycle_id / "public_pool.json"
    write_atomic(public_path, json.dumps(public, indent=2) + "\n")
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
    write_atomic(out, json.dumps(doc, indent=2) + "\n")
    return out


def load_pool(path: Path) -> Pool:
    return Pool.model_validate_json(Path(path).read_text())
