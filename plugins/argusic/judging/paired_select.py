"""Which pairs a paired patch review judges, and judging them (issue #31; ``argusic.judging.paired``):
nobody types ids.

- **Candidates** (``repair_candidates``): every repair attempt under the runs folder whose record
  (``run_record.json``, purpose repair) references a collected patch and a grade. The patch and the
  grade are read from the attempt's folder when they hold the referenced bytes, else from the
  evidence store, and checked against the record's sha256. A patch is known by its blinding label
  (the attempt's agent through ``repair/labels.toml``, ``label_for``): the agent id stays here, on
  the operator's side, and is written nowhere.
- **The choice** (``choose_pairs``): per item revision, the patches whose grade is ``resolved`` (the
  seed reviews the patches that pass the tests; ``verdicts`` widens it), one per (label, patch). Two
  patches can be paired when they differ and come from different runs (attempts): pairs of two
  models (different labels) first, pairs of two runs of one model after them. Among the possible pairs of an
  item, the order is sha256 of (the selection seed, the two patch ids sorted): the same seed and the
  same patches choose the same pairs, in any order of reading. ``per_item`` pairs per item (default
  1), counting the pairs already judged (``<pairs_dir>/<pair_id>/review.json``): a run stopped half
  way and started again judges only what is left, and a pair is never judged twice.
- **P and Q**: ``make_pair``'s draw (seeded by the item, its revision and the two patch ids),
  recorded with the pair; the selection (seed, rank, tier) is recorded beside the review, in
  ``<pairs_dir>/<pair_id>/pair.json`` (``argusic.paired_selection/1``), written before the judges run.
- **Judging** (``review_chosen``): ``judge_pair`` on each chosen pair with the given runner
  (``run_with_double`` for scripted judges, ``run_recorded`` for recorded sessions, ``run_real`` for
  the real CLIs through the routing gateway); a pair that cannot be judged is reported with its
  reason and the others go on.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.evidence import EvidenceStore
from argusic.core.layout import GRADE_FILE, RECORD_FILE
from argusic.core.record import RecordError, RecordFile
from argusic.core.settings import runs_dir
from argusic.core.tasks import canonical_json
from argusic.judging.double import judge_scripts
from argusic.judging.judges import (
    SESSION_FILE,
    JudgeError,
    _sha256_of,
    final_message,
    judge_driver,
    run_judge,
)
from argusic.judging.paired import (
    REVIEW_FILE,
    GradedPatch,
    Pair,
    PairError,
    Runner,
    _PairTask,
    graded_patch,
    judge_pair,
    make_pair,
    run_with_double,
)
from argusic.repair.items import Item, ItemError, items_dir, load_item, load_stored_item
from argusic.repair.labels import label_for, load_labels

SELECTION_SCHEMA = "argusic.paired_selection/1"
SELECTION_FILE = "pair.json"
PATCH_FILE = "patch.diff"  # argusic.attempts.repair_run.PATCH_FILE (a layer above: not imported)
DEFAULT_VERDICTS = ("resolved",)
DEFAULT_JUDGES = ("judge-claude", "judge-codex", "judge-claude-2")
MAX_PATCH_BYTES = 8 * 1024 * 1024
MAX_GRADE_BYTES = 2 * 1024 * 1024
TIERS = {0: "two models (different labels)", 1: "two runs of one model"}


@dataclass(frozen=True)
class Candidate:
    """A graded patch of a repair attempt: the item, the patch (label, text, grade) and its run (the
    attempt id: each attempt at an item is one run, as seed 001's three runs per item and model;
    operator-side, never written)."""

    item: Item
    patch: GradedPatch
    run: str


@dataclass(frozen=True)
class Chosen:
    pair: Pair
    tier: int
    rank: str

    def selection(self, seed: str) -> dict:
        return {
            "schema": SELECTION_SCHEMA,
            "pair_id": self.pair.pair_id,
            "selection_seed": seed,
            "rank": self.rank,
            "tier": TIERS[self.tier],
            "rule": "per item: the pairs of different patches of different runs, two models before two "
            "runs of one model, ordered by sha256 of [seed, sorted patch ids]; pairs already judged count",
            "pair": self.pair.to_dict(),
        }


@dataclass
class Outcome:
    judged: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def _read_referenced(local: Path, ref, cap: int, store: list) -> bytes:
    """The bytes a record references: the attempt folder's copy when it is them, else the store's."""
    if local.is_file() and not local.is_symlink() and local.stat().st_size <= cap:
        data = local.read_bytes()
        if hashlib.sha256(data).hexdigest() == ref.sha256:
            return data
    if not store:
        store.append(EvidenceStore())
    data = store[0].read(ref.uri)
    if len(data) > cap or hashlib.sha256(data).hexdigest() != ref.sha256:
        raise PairError(f"{ref.uri}: does not hold the bytes the record references")
    return data


def _item_of(project_id: str, item_id: str, revision: str, root: Path, cache: dict) -> Item:
    key = (project_id, item_id, revision)
    if key not in cache:
        kept = root / project_id / "revisions" / item_id / f"{revision}.json"
        current = root / project_id / f"{item_id}.json"
        item = None
        for path in (kept, current):
            if path.is_file() and not path.is_symlink():
                loaded = load_item(path)
                if loaded.revision == revision:
                    item = loaded
                    break
        cache[key] = item or load_stored_item(project_id, item_id, revision)
    return cache[key]


def record_paths(root: Path) -> list[Path]:
    """Every ``<root>/<cycle>/<attempt>/run_record.json`` (links not followed)."""
    found = []
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        return found
    for cycle in sorted(root.iterdir()):
        if cycle.is_symlink() or not cycle.is_dir() or cycle.name.startswith("."):
            continue
        for attempt in sorted(cycle.iterdir()):
            path = attempt / RECORD_FILE
            if not attempt.is_symlink() and path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def repair_candidates(
    paths: Iterable[Path], items_root: Path | None = None, labels: Mapping[str, str] | None = None
) -> tuple[list[Candidate], list[str]]:
    """The graded patches of the repair records among ``paths``; (candidates, problems: one line per
    record that could not be read, naming it)."""
    labels = dict(load_labels() if labels is None else labels)
    root = Path(items_root or items_dir())
    found, problems, items, store = [], [], {}, []
    for path in paths:
        try:
            record = RecordFile.load(path).record
        except (OSError, RecordError) as err:
            problems.append(f"{path}: {err}")
            continue
        repair = record.repair
        if record.purpose != "repair" or repair is None or repair.patch is None or repair.grade is None:
            continue
        folder = Path(path).parent
        try:
            patch = _read_referenced(folder / PATCH_FILE, repair.patch, MAX_PATCH_BYTES, store)
            grade = json.loads(_read_referenced(folder / GRADE_FILE, repair.grade, MAX_GRADE_BYTES, store))
            item = _item_of(record.project_id, repair.item_id, repair.item_revision, root, items)
            label = label_for(record.agent_id, labels)
            found.append(Candidate(item, graded_patch(label, patch, grade, item), record.attempt_id))
        except (OSError, ValueError, ItemError, PairError) as err:
            problems.append(f"{record.attempt_id}: {str(err)[:300]}")
    return found, problems


def rank(seed: str, a: GradedPatch, b: GradedPatch) -> str:
    return hashlib.sha256(canonical_json([seed, sorted([a.patch_id, b.patch_id])])).hexdigest()


def judged_pair_ids(pairs_dir: Path) -> set[str]:
    root = Path(pairs_dir)
    if not root.is_dir():
        return set()
    return {f.name for f in root.iterdir() if (f / REVIEW_FILE).is_file() and not f.is_symlink()}


def choose_pairs(
    candidates: Sequence[Candidate],
    seed: str,
    *,
    per_item: int = 1,
    verdicts: Sequence[str] = DEFAULT_VERDICTS,
    judged: set[str] | None = None,
) -> tuple[list[Chosen], list[str]]:
    """(the pairs to judge now, the ids of chosen pairs already judged); see the module's docs."""
    if per_item < 1:
        raise PairError("per_item: at least one pair per item")
    judged = judged or set()
    by_item: dict[tuple[str, str], dict[str, Candidate]] = defaultdict(dict)
    for c in candidates:
        if c.patch.grade.get("verdict") in verdicts and c.patch.patch.strip():
            by_item[(c.item.item_id, c.item.revision)].setdefault(c.patch.patch_id, c)
    to_judge, already = [], []
    for key in sorted(by_item):
        patches = sorted(by_item[key].values(), key=lambda c: c.patch.patch_id)
        options = []
        for i, a in enumerate(patches):
            for b in patches[i + 1 :]:
                if a.run == b.run or a.patch.patch_sha256 == b.patch.patch_sha256:
                    continue
                tier = 0 if a.patch.label != b.patch.label else 1
                options.append((tier, rank(seed, a.patch, b.patch), a, b))
        for tier, ranked, a, b in sorted(options, key=lambda o: (o[0], o[1]))[:per_item]:
            pair = make_pair(a.item, a.patch, b.patch)
            if pair.pair_id in judged:
                already.append(pair.pair_id)
            else:
                to_judge.append(Chosen(pair, tier, ranked))
    return to_judge, already


def write_selection(pairs_dir: Path, chosen: Chosen, seed: str) -> Path:
    folder = Path(pairs_dir) / chosen.pair.pair_id
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{SELECTION_FILE}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(chosen.selection(seed), indent=1, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, folder / SELECTION_FILE)
    return folder / SELECTION_FILE


def run_recorded(replay_dir: Path) -> Runner:
    """A runner replaying recorded judge sessions (no model runs): ``<dir>/<pair_id>/<judge>.jsonl``
    wins over ``<dir>/<judge>.jsonl``."""

    def run(judge_id: str, context_dir: Path, out_dir: Path) -> tuple[str | None, str, str | None]:
        pair_id = Path(context_dir).parent.name
        for candidate in (
            Path(replay_dir) / pair_id / f"{judge_id}.jsonl",
            Path(replay_dir) / f"{judge_id}.jsonl",
        ):
            if candidate.is_file() and not candidate.is_symlink():
                break
        else:
            raise PairError(f"judge {judge_id}: no recorded session for {pair_id} in {replay_dir}")
        task = _PairTask((Path(context_dir) / "task.md").read_text(encoding="utf-8"))
        run_judge(judge_id, context_dir, out_dir, task=task, replay=candidate)  # type: ignore[arg-type]
        harness = judge_driver(judge_id).harness_name
        return (
            final_message(harness, out_dir),
            f"recorded/{judge_id}",
            _sha256_of(Path(out_dir) / SESSION_FILE),
        )

    return run


def run_scripted(script_dir: Path, judge_ids: Sequence[str]) -> Runner:
    """A runner of each judge's real CLI against the model double (``run_with_double``), its script
    ``<dir>/<pair_id>/<judge>.json`` or ``<dir>/<judge>.json`` (``judge_scripts``)."""

    def run(judge_id: str, context_dir: Path, out_dir: Path) -> tuple[str | None, str, str | None]:
        scripts = judge_scripts(Path(script_dir), Path(context_dir).parent.name, list(judge_ids))
        return run_with_double(scripts)(judge_id, context_dir, out_dir)

    return run


def run_real() -> Runner:
    """A runner of each judge's real CLI on a per-run key through the routing gateway (refused
    before anything starts when none is configured: JudgeError)."""

    def run(judge_id: str, context_dir: Path, out_dir: Path) -> tuple[str | None, str, str | None]:
        task = _PairTask((Path(context_dir) / "task.md").read_text(encoding="utf-8"))
        run_judge(judge_id, context_dir, out_dir, task=task)  # type: ignore[arg-type]
        driver = judge_driver(judge_id)
        session = _sha256_of(Path(out_dir) / SESSION_FILE)
        return final_message(driver.harness_name, out_dir), driver.model, session

    return run


def review_chosen(
    chosen: Sequence[Chosen],
    judge_ids: Sequence[str],
    run: Runner,
    *,
    seed: str,
    pairs_dir: Path,
    work_dir: Path,
    base_files: Callable[[Pair], Mapping[str, str] | None] | None = None,
    report: Callable[[str], None] | None = None,
) -> Outcome:
    """Judge each chosen pair (the selection written first, the review last); the outcome."""
    outcome = Outcome()
    for c in chosen:
        pair_id = c.pair.pair_id
        try:
            write_selection(pairs_dir, c, seed)
            files = base_files(c.pair) if base_files is not None else None
            judge_pair(c.pair, judge_ids, work_dir, run, base_files=files, pairs_dir=pairs_dir)
            outcome.judged.append(pair_id)
            if report:
                report(f"judged {pair_id}: P {c.pair.p.label}, Q {c.pair.q.label} ({TIERS[c.tier]})")
        except (PairError, JudgeError, ItemError, OSError, ValueError) as err:
            outcome.failed.append((pair_id, str(err)[:500]))
            if report:
                report(f"not judged {pair_id}: {str(err)[:500]}")
    return outcome


def review_pairs(
    run: Runner,
    *,
    seed: str,
    judge_ids: Sequence[str] = DEFAULT_JUDGES,
    per_item: int = 1,
    verdicts: Sequence[str] = DEFAULT_VERDICTS,
    runs_root: Path | None = None,
    items_root: Path | None = None,
    pairs_dir: Path | None = None,
    work_dir: Path | None = None,
    limit: int | None = None,
    dry_run: bool = False,
    report: Callable[[str], None] | None = None,
    base_files: Callable[[Pair], Mapping[str, str] | None] | None = None,
) -> dict:
    """Choose and judge: the whole step (the command's and the DAG's). A summary dict (XCom-safe)."""
    runs_root = Path(runs_root or runs_dir())
    pairs_dir = Path(pairs_dir or runs_root / "paired")
    work_dir = Path(work_dir or runs_root / ".paired-work")
    candidates, problems = repair_candidates(record_paths(runs_root), items_root)
    chosen, already = choose_pairs(
        candidates, seed, per_item=per_item, verdicts=verdicts, judged=judged_pair_ids(pairs_dir)
    )
    if limit is not None:
        chosen = chosen[:limit]
    for line in problems:
        if report:
            report(f"skipped: {line}")
    outcome = Outcome(already=already)
    if not dry_run and chosen:
        outcome = review_chosen(
            chosen,
            judge_ids,
            run,
            seed=seed,
            pairs_dir=pairs_dir,
            work_dir=work_dir,
            base_files=base_files,
            report=report,
        )
        outcome.already = already
    return {
        "seed": seed,
        "candidates": len(candidates),
        "chosen": [c.pair.pair_id for c in chosen],
        "judged": outcome.judged,
        "already_judged": outcome.already,
        "failed": [{"pair_id": p, "reason": r} for p, r in outcome.failed],
        "skipped_records": problems,
        "pairs_dir": str(pairs_dir),
    }


__all__ = [
    "Candidate",
    "Chosen",
    "choose_pairs",
    "judged_pair_ids",
    "record_paths",
    "repair_candidates",
    "review_chosen",
    "review_pairs",
    "run_real",
    "run_recorded",
    "run_scripted",
]
