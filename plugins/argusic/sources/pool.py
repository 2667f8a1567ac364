"""Pool rotation: pick a cycle's projects from the candidate catalogue, deterministically.

Methodology section 6: 80% public (list and pinned commits published before the cycle), 20% private
(projects that gained popularity just before the cycle, revealed after it ends, rotated monthly).
Eligible: permissive licence, a README, runnable without a paid account. Selection is seeded by the
cycle id, so a cycle's pool can be reproduced from the same catalogue and the same earlier pools.

Rotation (**decided**, docs/catalogue.md#rotation):
- The popularity window of cycle YYYY-MM is the calendar month before it (`popularity_window`): the
  windows of consecutive cycles tile the calendar, every day in exactly one, whatever the months'
  lengths (a fixed 30 days overlapped across February and left gaps after 31-day months).
- A project is private at most once. The history is the earlier cycles' recorded pools (every
  `<pools dir>/<cycle>/pool.json` of an earlier month, suffixed cycles such as `2026-11-trial`
  included; other pools of the same month are alternatives of this cycle, not history):
  * private in the previous month's cycle ("private last cycle"): left out of this cycle entirely,
    neither private (never two months running) nor public (this cycle's public list is published
    before the previous cycle ends, while that project is still sealed);
  * private in any earlier cycle ("already revealed"): never private again; once it is no longer
    recently popular it may be drawn into the public part like any other project.
- Projects the rotation leaves out are never used to fill the pool: the selection reports how many
  were left out for each reason, and a smaller pool is a reported shortfall.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
# Why the rotation leaves a project out of a cycle (PoolSelection.rotation_excluded's keys).
PRIVATE_LAST_CYCLE = "private_last_cycle"
ALREADY_REVEALED = "already_revealed"
ROTATION_REASONS = {PRIVATE_LAST_CYCLE: "private last cycle", ALREADY_REVEALED: "already revealed"}
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


def popularity_window(cycle_id: str) -> tuple[date, date]:
    """The first and last day of the calendar month before the cycle's month: a candidate whose
    `popular_since` falls in it is recently popular, eligible for the cycle's private part. Consecutive
    cycles' windows tile the calendar (`2027-03`: 2027-02-01..2027-02-28; `2028-03`: ..2028-02-29)."""
    starts, _ = cycle_window(cycle_id)
    last = starts - timedelta(days=1)
    return last.replace(day=1), last


def load_pool_history(pools_dir: Path) -> list[Pool]:
    """Every pool recorded under `pools_dir` (`<cycle>/pool.json`), in folder order: the history the
    rotation reads. A folder without a pool.json is skipped; a pool file that cannot be read, is not a
    valid pool, or names another cycle than its folder is a CatalogueError naming the file: the rotation
    cannot know which projects were private without it, so nothing is drawn."""
    pools_dir = Path(pools_dir)
    if not pools_dir.is_dir():
        return []
    history: list[Pool] = []
    for folder in sorted(pools_dir.iterdir()):
        path = folder / "pool.json"
        if not folder.is_dir() or not (path.exists() or path.is_symlink()):
            continue
        why = None
        try:
            pool = load_pool(path)
        except OSError as err:
            why = f"cannot be read ({err.strerror or err})"
        except ValidationError as err:
            first = err.errors()[0] if err.errors() else {}
            where = ".".join(str(part) for part in first.get("loc", ())) or "the file"
            why = f"is not a valid pool ({err.error_count()} problem(s); {where}: {first.get('msg', err)})"
        except ValueError as err:  # not UTF-8
            why = f"is not a valid pool ({err})"
        else:
            if pool.cycle_id != folder.name:
                why = f"is the pool of cycle {pool.cycle_id!r}, in the folder of {folder.name!r}"
            else:
                try:
                    cycle_window(pool.cycle_id)
                except ValueError as err:
                    why = f"names a bad cycle id ({err})"
        if why:
            raise CatalogueError(
                f"earlier pool {path} {why}: the rotation reads every recorded pool to know which "
                "projects were private before, so no pool is drawn until it is restored (or the folder "
                "is moved out of the pools folder, if it was never a real cycle's pool)"
            )
        history.append(pool)
    return history


def rotation_bars(cycle_id: str, history: Iterable[Pool]) -> dict[str, tuple[str, str]]:
    """{project_id: (reason key, reason)} for the projects private in a cycle of an earlier month than
    `cycle_id`'s: PRIVATE_LAST_CYCLE for the month just before (it wins over an older one),
    ALREADY_REVEALED for any month before that. Pools of the same or a later month are not history."""
    starts, _ = cycle_window(cycle_id)
    previous_starts = popularity_window(cycle_id)[0]
    pools = list(history)
    for pool in pools:
        if not isinstance(pool, Pool):
            raise TypeError(f"history holds {type(pool).__name__}, not a Pool")
    bars: dict[str, tuple[str, str]] = {}
    for pool in sorted(pools, key=lambda p: (cycle_window(p.cycle_id)[0], p.cycle_id)):
        pool_starts, pool_ends = cycle_window(pool.cycle_id)
        if pool_starts >= starts:
            continue
        for entry in pool.private:
            if pool_starts == previous_starts:
                bars[entry.project_id] = (
                    PRIVATE_LAST_CYCLE,
                    f"private in cycle {pool.cycle_id}, the last cycle: never private two cycles running, "
                    "and not public while that cycle's private part is sealed",
                )
            elif bars.get(entry.project_id, ("",))[0] != PRIVATE_LAST_CYCLE:
                bars[entry.project_id] = (
                    ALREADY_REVEALED,
                    f"private in cycle {pool.cycle_id}, revealed after it ended on {pool_ends}: never "
                    "private again",
                )
    return bars


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
    recent_available: int  # eligible, popular in the calendar month before the cycle's
    largest: int  # the largest pool an 80/20 split allows from them
    popularity_window: tuple[date, date]
    notices: list[str] = field(default_factory=list)
    not_drawn: list[str] = field(default_factory=list)  # eligible and available, not in this pool
    # how many candidates the rotation left out, by reason (ROTATION_REASONS' keys), and the earlier
    # cycles whose pools it read
    rotation_excluded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROTATION_REASONS, 0))
    history: list[str] = field(default_factory=list)

    @property
    def shortfall(self) -> str | None:
        return shortfall_message(
            self.public_available,
            self.recent_available,
            self.largest,
            self.popularity_window,
            self.rotation_excluded,
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
        out.append(rotation_line(self.rotation_excluded, self.history))
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
                "rotation_excluded": self.rotation_excluded,
                "history": self.history,
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


def rotation_line(rotation_excluded: dict[str, int], history: list[str]) -> str:
    """What the rotation left out, by reason (printed with every selection, zero counts included)."""
    counts = ", ".join(f"{rotation_excluded.get(k, 0)} {label}" for k, label in ROTATION_REASONS.items())
    read = f"earlier pools read: {', '.join(history)}" if history else "no earlier pool recorded"
    return (
        f"rotation: {sum(rotation_excluded.values())} candidate(s) left out ({counts}), never used to "
        f"fill the pool; {read}"
    )


def shortfall_message(
    public: int,
    recent: int,
    largest: int,
    window: tuple[date, date],
    rotation_excluded: dict[str, int] | None = None,
) -> str | None:
    """Say why usable candidates are left out by the 80/20 split, and how many more would use them
    (and, when the rotation left candidates out, how many for each reason: they do not fill it)."""
    if largest >= public + recent:
        return None
    message = _split_shortfall(public, recent, largest, window)
    if rotation_excluded and any(rotation_excluded.values()):
        counts = ", ".join(f"{rotation_excluded.get(k, 0)} {label}" for k, label in ROTATION_REASONS.items())
        message += (
            f" The rotation left out {sum(rotation_excluded.values())} candidate(s) ({counts}); "
            "they are not used to fill it."
        )
    return message


def _split_shortfall(public: int, recent: int, largest: int, window: tuple[date, date]) -> str:
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
    catalogue: Path,
    cycle_id: str,
    size: int | None = None,
    check_sources: SourceCheck | None = None,
    *,
    history: Iterable[Pool] = (),
) -> PoolSelection:
    """Pick the pool: `size` projects (default: as many as the 80/20 split allows).

    Recently popular (private part): `popular_since` in the calendar month before the cycle's
    (`popularity_window`); public part: popular before that month. `history` is the earlier cycles'
    pools (`load_pool_history` of the pools folder; empty: no earlier cycle): a project private in
    the previous month's cycle is left out of this one, and one private in any earlier cycle is never
    private again (it may be public once it is no longer recently popular); see the module's rotation
    rule. Those left out are counted by reason and never fill the pool.

    With `check_sources`, candidates whose repository cannot be fetched or lacks its pinned commit are
    excluded with their reason (the default size checks every eligible candidate; an explicit size
    checks them in draw order until the pool is full)."""
    starts, ends = cycle_window(cycle_id)
    window = popularity_window(cycle_id)
    history = list(history)
    bars = rotation_bars(cycle_id, history)
    earlier = sorted(p.cycle_id for p in history if cycle_window(p.cycle_id)[0] < starts)
    loaded = load_catalogue(catalogue)
    excluded: dict[str, str] = {}
    rotation_excluded = dict.fromkeys(ROTATION_REASONS, 0)
    recent, established = [], []
    for cand in loaded.candidates:
        bar = bars.get(cand.project_id)
        is_recent = window[0] <= cand.popular_since <= window[1]
        if reason := _ineligible_reason(cand):
            excluded[cand.project_id] = reason
        elif cand.popular_since >= starts:
            excluded[cand.project_id] = "gained popularity after the cycle starts"
        elif bar and (bar[0] == PRIVATE_LAST_CYCLE or is_recent):
            excluded[cand.project_id] = bar[1]
            rotation_excluded[bar[0]] += 1
        elif is_recent:
            recent.append(cand)
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
            f"candidates of {len(loaded.candidates)} allow at most {largest} at an 80/20 split\n"
            + rotation_line(rotation_excluded, earlier),
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
        rotation_excluded=rotation_excluded,
        history=earlier,
    )


def select_pool(
    catalogue: Path,
    cycle_id: str,
    size: int | None = None,
    check_sources: SourceCheck | None = None,
    *,
    history: Iterable[Pool] = (),
) -> Pool:
    """The pool alone (see draw_pool)."""
    return draw_pool(catalogue, cycle_id, size, check_sources, history=history).pool


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
