"""Paired patch review (issue #31, seed 001's patch review), Layer 2 of seed 004: per repair item, two
graded patches judged side by side as *P* and *Q*, by several model judges, with a person's re-check of
every bug they report (Layer 3: ``argusic.review.paired``).

- **The pair** (``make_pair``): an item and two graded patches, each known only by its *label* (the
  blinding label of ``repair/labels.toml``, never a model name) and the sha256 of its patch. Which one
  is P is drawn at random, reproducibly: the draw's seed is the sha256 of the item id, its revision and
  the two patch ids (sorted, so the order the patches are given in does not matter); the seed, the
  drawn number and the assignment are recorded with the pair (``Pair.to_dict``). Across items the
  same label lands on P or Q, as the seed asks.
- **The context** (``build_context``): a folder the judge reads, and nothing else: the problem
  statement, the interface spec (spec track), the gold patch (a split item's topic part), both
  patches as ``P.patch`` / ``Q.patch``, their grades (verdict, failing tests, quality figures: no
  grade id, no source, no label) and the base code of every non-test file any of the three patches
  touches (``base/<path>``), with a manifest (``argusic.judge-evidence/1``, so the judge container
  of ``argusic.judging.judges.run_judge`` mounts it as it mounts an attempt's evidence folder).
- **The prompt** (``judge_prompt``): the six criteria of seed 001 — correctness, change scope,
  consistency with the existing code, simplicity, tidiness, overall (정확성, 변경 범위, 기존 코드와의
  일관성, 단순성, 코드 정리 상태, 종합 평가) — scored 1..5 for each patch, a verbatim quote for
  every score of 3 or less, and the real bugs found, each with its quote.
- **The answer** (``check_answer``): parsed and checked strictly; a failing answer is *refused* with
  the reason, never repaired or filled in: exactly the six criteria for both P and Q, integers 1..5
  (no bools, no fractions, no strings), a quote for every score <= 3 whose ``file`` is a file of the
  context and whose text occurs in it verbatim (whitespace runs normalised, as for the attempt
  judges), a bug's quote in its own patch. Refused answers keep no scores.
- **The judgements** (``judge_pair``): each judge's real CLI in its container against the model
  double (``argusic.judging.double.paired_judge_script``: no model is reachable here), or any
  ``run`` given (a callable returning the judge's final message). The review document
  (``argusic.paired_review/1``, ``<pairs_dir>/<pair_id>/review.json``) holds the pair, every
  judgement, the medians per side and criterion over the valid judges (``medians``: never the mean)
  and the bugs reported (``bugs_reported``, each with a stable ``bug_id``). It is loaded into
  raw.paired_judgements by ``argusic.warehouse.load_paired``.

Advisory, like every judge: never part of a grade, a rate, a score or the board.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from argusic.core.tasks import canonical_json
from argusic.judging.double import DoubleBroker, JudgeScriptError
from argusic.judging.evidence import MANIFEST, MANIFEST_SCHEMA, EvidenceError, read_manifest
from argusic.judging.judges import (
    SESSION_FILE,
    JudgeError,
    _sha256_of,
    final_message,
    is_verbatim,
    judge_driver,
    listed_text,
    normalised,
    parse_final_message,
    run_judge,
    unquoted,
)
from argusic.repair import paths as test_paths
from argusic.repair import testrun
from argusic.repair.items import Item, items_dir, repository_of

PAIR_SCHEMA = "argusic.paired_pair/1"
ANSWER_SCHEMA = "argusic.paired_answer/1"
REVIEW_SCHEMA = "argusic.paired_review/1"
TASK_ID = "paired_review"
SIDES = ("P", "Q")
# Seed 001's six criteria, in its order.
CRITERIA = ("correctness", "change_scope", "consistency", "simplicity", "tidiness", "overall")
CRITERIA_WORDS = {
    "correctness": "Correctness: does the patch fix the problem the statement describes, breaking nothing?",
    "change_scope": "Change scope: does it change what the fix needs and no more?",
    "consistency": "Consistency with the existing code: names, structure, errors as the base code does them.",
    "simplicity": "Simplicity: is it as simple as the fix allows?",
    "tidiness": "Tidiness: no leftovers (debug output, dead code, commented-out code, stray files).",
    "overall": "Overall: your overall assessment of the patch.",
}  # fmt: skip
LOWEST, HIGHEST = 1, 5
QUOTE_AT_OR_BELOW = 3  # every score of 3 or less has a quote (seed 001)
MIN_QUOTE_CHARS = 8
MAX_QUOTE_CHARS = 500
MAX_QUOTES = 40
MAX_BUGS = 20
MAX_TEXT_CHARS = 2000
MAX_MESSAGE_BYTES = 64 * 1024
MAX_BASE_FILE_BYTES = 512 * 1024
MAX_FILE_BYTES = 4 * 1024 * 1024
LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
REVIEW_FILE = "review.json"
DRAW_RULE = "drawn < 0.5: the first patch id in sorted order is P"

Side = Literal["P", "Q"]
Criterion = Literal["correctness", "change_scope", "consistency", "simplicity", "tidiness", "overall"]


class PairError(ValueError):
    """A pair that cannot be made or judged as asked (the message says why)."""


# --- the pair and its draw ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GradedPatch:
    """One patch of a pair: its blinding label, its text and its grade (``argusic.repair_grade/1``)."""

    label: str
    patch: str
    grade: Mapping[str, Any]

    @property
    def patch_sha256(self) -> str:
        return hashlib.sha256(self.patch.encode("utf-8", errors="surrogateescape")).hexdigest()

    @property
    def patch_id(self) -> str:
        """``<label>-<sha256[:12]>``: what the draw and the warehouse know the patch by."""
        return f"{self.label}-{self.patch_sha256[:12]}"


def graded_patch(label: str, patch: str | bytes, grade: Mapping[str, Any], item: Item) -> GradedPatch:
    """A patch of a pair, checked: a label (never a model name: the caller maps names through
    ``argusic.repair.predictions.label_for``), a grade of this item revision and of this very patch."""
    if not isinstance(label, str) or not LABEL.match(label):
        raise PairError(f"label {str(label)[:80]!r}: must match {LABEL.pattern}")
    text = patch.decode("utf-8", errors="surrogateescape") if isinstance(patch, bytes) else patch
    found = GradedPatch(label, text, dict(grade))
    if grade.get("item_id") != item.item_id or grade.get("revision") != item.revision:
        raise PairError(f"{label}: its grade is of another item or revision than {item.item_id}")
    if grade.get("patch_sha256") != found.patch_sha256:
        raise PairError(f"{label}: its grade is of another patch (patch_sha256 differs)")
    return found


def draw_seed(item: Item, patch_ids: Sequence[str]) -> str:
    """The P/Q draw's seed: sha256 of the item id, revision and the sorted patch ids."""
    return hashlib.sha256(canonical_json([item.item_id, item.revision, sorted(patch_ids)])).hexdigest()


def draw(seed: str) -> float:
    """The number drawn from the seed (Python's Mersenne Twister seeded with the seed's integer):
    below one half, the first patch id in sorted order is P."""
    return random.Random(int(seed, 16)).random()


@dataclass(frozen=True)
class Pair:
    item: Item
    p: GradedPatch
    q: GradedPatch
    seed: str
    drawn: float

    @property
    def pair_id(self) -> str:
        return f"{self.item.item_id}.{self.seed[:16]}"

    def side(self, name: str) -> GradedPatch:
        return self.p if name == "P" else self.q

    def to_dict(self) -> dict:
        """The pair as recorded: the item, each side's label and patch id, the draw."""
        return {
            "schema": PAIR_SCHEMA,
            "pair_id": self.pair_id,
            "item_id": self.item.item_id,
            "revision": self.item.revision,
            "project_id": self.item.project_id,
            "track": self.item.track,
            "sides": {
                s: {"label": self.side(s).label, "patch_id": self.side(s).patch_id,
                    "patch_sha256": self.side(s).patch_sha256, "verdict": self.side(s).grade.get("verdict")}
                for s in SIDES
            },  # fmt: skip
            "draw": {"seed": self.seed, "drawn": self.drawn, "rule": DRAW_RULE},
        }  # fmt: skip


def make_pair(item: Item, a: GradedPatch, b: GradedPatch) -> Pair:
    """Two graded patches of one item as P and Q (see the module's docs for the draw)."""
    if a.patch_id == b.patch_id:
        raise PairError(f"{a.patch_id}: the same patch twice; a pair is two different patches")
    if a.label == b.label and a.patch_sha256 == b.patch_sha256:
        raise PairError("the same patch twice")
    first, second = sorted((a, b), key=lambda g: g.patch_id)
    seed = draw_seed(item, [a.patch_id, b.patch_id])
    drawn = draw(seed)
    p, q = (first, second) if drawn < 0.5 else (second, first)
    return Pair(item, p, q, seed, drawn)


# --- the context folder ------------------------------------------------------------------------------


def shown_grade(grade: Mapping[str, Any]) -> dict:
    """What a judge sees of a grade: its verdict, failing tests, test results and quality figures
    (no grade id, no source: they could name the patch's maker)."""
    return {k: grade.get(k) for k in ("verdict", "failing_tests", "results", "quality", "excluded_paths")}


def touched_base_paths(item: Item, patches: Sequence[str]) -> list[str]:
    """The non-test files any of the patches touches (the base code a judge needs to read)."""
    found: set[str] = set()
    for text in patches:
        data = text.encode("utf-8", errors="surrogateescape")
        if not data.strip():
            continue
        try:
            found.update(testrun.patch_paths(data))
        except testrun.StateError:
            continue
    tests = set(item.test_files)
    return sorted(p for p in found if not test_paths.is_test_path(p) and p not in tests)


def base_files_from_git(item: Item, paths: Sequence[str], git_dir: Path | None = None) -> dict[str, str]:
    """{path: text at the item's base} of the paths that exist there (a new file has no base)."""
    if git_dir is None:
        git_dir = repository_of(item, items_dir() / ".repos")  # the grader's cache of repositories
    found = {}
    for path in paths:
        done = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{item.base}:{path}"],
            capture_output=True, check=False, timeout=60,
        )  # fmt: skip
        if done.returncode == 0 and len(done.stdout) <= MAX_BASE_FILE_BYTES:
            found[path] = done.stdout.decode("utf-8", errors="replace")
    return found


def _safe_relative(path: str) -> str:
    parts = Path(path).parts
    if not path or Path(path).is_absolute() or ".." in parts or any(p.startswith(".") for p in parts[:1]):
        raise PairError(f"base file {path[:200]!r}: not a plain relative path")
    return Path(*parts).as_posix()


def _write(dest: Path, relative: str, text: str) -> None:
    path = dest / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogateescape")


def build_context(
    pair: Pair, dest: Path, base_files: Mapping[str, str] | None = None, *, prompt: str | None = None
) -> Path:
    """Write the pair's context folder (see the module's docs) at ``dest`` (emptied first); the
    folder. ``base_files``: {path: base text}; None reads them from the item's repository."""
    item = pair.item
    dest = Path(dest)
    if dest.is_symlink():
        raise PairError(f"{dest}: is a link")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    gold = item.partial_gold_patch or item.gold_patch
    paths = touched_base_paths(item, [gold, pair.p.patch, pair.q.patch])
    if base_files is None:
        base_files = base_files_from_git(item, paths)
    _write(dest, "statement.md", item.problem_statement)
    if item.interface_spec is not None:
        _write(dest, "spec.md", item.interface_spec)
    _write(dest, "gold.patch", gold)
    for side in SIDES:
        _write(dest, f"{side}.patch", pair.side(side).patch)
        grade = json.dumps(shown_grade(pair.side(side).grade), indent=1, sort_keys=True, ensure_ascii=False)
        _write(dest, f"{side}.grade.json", grade + "\n")
    for path in sorted(base_files):
        _write(dest, f"base/{_safe_relative(path)}", base_files[path])
    _write(dest, "task.md", prompt or judge_prompt(pair))
    files = sorted(
        (p for p in dest.rglob("*") if p.is_file() and not p.is_symlink()), key=lambda p: p.as_posix()
    )
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "task_id": TASK_ID,
        "task_revision": hashlib.sha256((prompt or judge_prompt(pair)).encode()).hexdigest(),
        "files": [
            {
                "path": p.relative_to(dest).as_posix(),
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest(),
                "bytes": p.stat().st_size,
            }
            for p in files
        ],  # fmt: skip
        "withheld": [],
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return dest


def context_sha256(context_dir: Path) -> str:
    """sha256 of the canonical JSON of the context's manifest: what the judges read."""
    return hashlib.sha256(canonical_json(_manifest(context_dir))).hexdigest()


def _manifest(context_dir: Path) -> dict:
    """The context's manifest (read as the judges' evidence folders are: capped, never through a link)."""
    try:
        data = read_manifest(context_dir)
    except (EvidenceError, ValueError) as err:
        raise PairError(f"{context_dir}: not a paired review context ({err})") from None
    if data.get("task_id") != TASK_ID:
        raise PairError(f"{context_dir}: not a paired review context (its manifest's task_id)")
    return data


# --- the prompt --------------------------------------------------------------------------------------


def judge_prompt(pair: Pair | None = None) -> str:
    """What every judge of a pair is asked (the same text for every pair: the folder differs)."""
    criteria = "\n".join(f"- `{c}` — {CRITERIA_WORDS[c]}" for c in CRITERIA)
    example = {
        "schema": ANSWER_SCHEMA,
        "scores": {"P": dict.fromkeys(CRITERIA, 4), "Q": {**dict.fromkeys(CRITERIA, 4), "tidiness": 3}},
        "quotes": [{"side": "Q", "criterion": "tidiness", "file": "Q.patch",
                    "quote": "<text copied from the file>"}],
        "bugs": [{"side": "Q", "file": "Q.patch", "quote": "<the faulty line(s), copied>",
                  "description": "<what goes wrong, when>"}],
        "summary": "<one paragraph>",
    }  # fmt: skip
    return f"""You are reviewing two patches that fix the same problem in a repository. They were
written by two different authors; they are called P and Q here (the names say nothing about who wrote
them, and change from one problem to the next). Your working directory holds everything you may read:

- `statement.md` — the problem as reported; `spec.md` — the interface the fix must provide (when present)
- `gold.patch` — the reference fix that was merged (tests excluded)
- `P.patch`, `Q.patch` — the two patches; `P.grade.json`, `Q.grade.json` — their grades (the hidden
  tests' verdict, failing tests, quality figures)
- `base/` — the repository's code before any fix, for every file one of the patches changes

Score **each** patch on these six criteria, each an integer from 1 (poor) to 5 (excellent):

{criteria}

For every score of 3 or less, give at least one quote: text copied exactly from a file of this folder
(usually the patch itself) that shows the problem, with the file's name. List as a bug only a real
defect in a patch's behaviour (not a style remark), each with the patch's faulty text quoted. Answer
with one JSON object and nothing else, in this shape:

```json
{_example_json(example)}
```
"""


def _example_json(example: dict) -> str:
    """The answer's shape, one criterion set per line (readable, and short enough to copy)."""
    lines = [f'{{"schema": "{ANSWER_SCHEMA}",', ' "scores": {']
    lines += [f'  "{s}": {json.dumps(example["scores"][s])}{"," if s == "P" else ""}' for s in SIDES]
    lines += [
        " },",
        f' "quotes": {json.dumps(example["quotes"])},',
        f' "bugs": {json.dumps(example["bugs"])},',
    ]
    lines += [f' "summary": {json.dumps(example["summary"])}}}']
    return "\n".join(lines)


# --- the answer --------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]
QuoteText = Annotated[str, StringConstraints(min_length=MIN_QUOTE_CHARS, max_length=MAX_QUOTE_CHARS)]
FileName = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Score = Annotated[int, Field(ge=LOWEST, le=HIGHEST)]


class Quote(_Strict):
    side: Side
    criterion: Criterion
    file: FileName
    quote: QuoteText


class Bug(_Strict):
    side: Side
    file: FileName
    quote: QuoteText
    description: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]


class Answer(_Strict):
    """``argusic.paired_answer/1``: a judge's answer on one pair."""

    schema_: Literal["argusic.paired_answer/1"] = Field(alias="schema")
    scores: dict[Side, dict[Criterion, Score]]
    quotes: list[Quote] = Field(max_length=MAX_QUOTES)
    bugs: list[Bug] = Field(max_length=MAX_BUGS)
    summary: Text

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


@dataclass(frozen=True)
class Checked:
    status: Literal["valid", "refused", "no_verdict"]
    reason: str | None
    scores: dict[str, dict[str, int]]
    quotes: list[dict]
    bugs: list[dict]
    summary: str


def _refused(reason: str) -> Checked:
    return Checked("refused", reason[:1000], {}, [], [], "")


def check_answer(message: str | None, context_dir: Path) -> Checked:
    """A judge's final message checked (see the module's docs); refused with the first failing
    check's reason, never repaired."""
    if message is None or not message.strip():
        return Checked("no_verdict", "the session has no final message", {}, [], [], "")
    if len(message.encode("utf-8")) > MAX_MESSAGE_BYTES:
        return _refused(f"message: over {MAX_MESSAGE_BYTES} bytes")
    try:
        doc = parse_final_message(message)
    except ValueError as err:
        return _refused(f"message: not a JSON object ({err})"[:300])
    if not isinstance(doc, dict):
        return _refused("message: not a JSON object")
    scores = doc.get("scores")
    if isinstance(scores, dict):  # the criteria checked first: the clearest reason for the commonest slip
        for side in SIDES:
            given = scores.get(side)
            if not isinstance(given, dict):
                return _refused(f"scores.{side}: missing (both P and Q are scored)")
            missing = [c for c in CRITERIA if c not in given]
            extra = sorted(str(c) for c in given if c not in CRITERIA)
            if missing or extra:
                return _refused(f"scores.{side}: not the six criteria (missing {missing}, unknown {extra})")
            for criterion in CRITERIA:
                value = given[criterion]
                if type(value) is not int:
                    return _refused(f"scores.{side}.{criterion}: {json.dumps(value)[:40]} is not an integer")
                if not LOWEST <= value <= HIGHEST:
                    return _refused(f"scores.{side}.{criterion}: {value} is not in {LOWEST}..{HIGHEST}")
    try:
        answer = Answer.model_validate(doc)
    except ValidationError as err:
        e = err.errors()[0]
        return _refused(f"schema: {'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}")
    if set(answer.scores) != set(SIDES):
        return _refused(f"scores: both P and Q are scored (given {sorted(answer.scores)})")
    for side in SIDES:
        for criterion in CRITERIA:
            score = answer.scores[side][criterion]
            if score <= QUOTE_AT_OR_BELOW and not any(
                q.side == side and q.criterion == criterion for q in answer.quotes
            ):
                return _refused(f"quotes: {side} {criterion} scored {score} without a quote")
    listed = {f["path"] for f in _manifest(context_dir)["files"]}
    if reason := unquoted(answer.quotes, context_dir, listed, "context", MAX_FILE_BYTES):
        return _refused(reason)
    for n, bug in enumerate(answer.bugs):
        if bug.file != f"{bug.side}.patch":
            return _refused(
                f"bugs.{n}.file: a bug of {bug.side} quotes {bug.side}.patch, not {bug.file[:200]}"
            )
        content = listed_text(context_dir, bug.file, listed, MAX_FILE_BYTES)
        if content is None or not is_verbatim(bug.quote, content):
            return _refused(f"bugs.{n}.quote: not found verbatim in {bug.file[:200]}")
    return Checked(
        "valid",
        None,
        {s: dict(answer.scores[s]) for s in SIDES},
        [q.model_dump() for q in answer.quotes],
        [b.model_dump() for b in answer.bugs],
        answer.summary,
    )


# --- medians, bugs, the review document --------------------------------------------------------------


def medians(judgements: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """{side: {criterion: median over the valid judgements}} (None where no judge is valid)."""
    valid = [j for j in judgements if j.get("status") == "valid"]
    return {
        side: {
            c: (statistics.median(j["scores"][side][c] for j in valid) if valid else None) for c in CRITERIA
        }
        for side in SIDES
    }


def bug_id(pair_id: str, judge_id: str, bug: Mapping[str, Any]) -> str:
    """A reported bug's stable id: sha256 of the pair, the judge, the side and the quote (16 hex)."""
    key = canonical_json([pair_id, judge_id, bug["side"], normalised(bug["quote"])])
    return hashlib.sha256(key).hexdigest()[:16]


def bugs_reported(pair_id: str, judgements: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Every bug a valid judgement reports, with its bug_id and judge (one row each; the same bug
    reported by two judges is two rows: the person re-checks each)."""
    found: dict[str, dict] = {}
    for j in judgements:
        if j.get("status") != "valid":
            continue
        for bug in j.get("bugs", []):
            found.setdefault(bug_id(pair_id, j["judge_id"], bug), {"judge_id": j["judge_id"], **bug})
    return [{"bug_id": k, **v} for k, v in found.items()]


def review_document(pair: Pair, context_dir: Path, judgements: Sequence[Mapping[str, Any]]) -> dict:
    """The ``argusic.paired_review/1`` document: the pair, every judgement, medians, bugs."""
    return {
        "schema": REVIEW_SCHEMA,
        **{k: v for k, v in pair.to_dict().items() if k != "schema"},
        "context_sha256": context_sha256(context_dir),
        "criteria": list(CRITERIA),
        "judgements": [dict(j) for j in judgements],
        "medians": medians(judgements),
        "bugs": bugs_reported(pair.pair_id, judgements),
    }


def judgement(judge_id: str, harness: str, model: str, checked: Checked, session_sha256: str | None) -> dict:
    return {
        "judge_id": judge_id,
        "harness": harness,
        "model": model,
        "session_sha256": session_sha256,
        "status": checked.status,
        "reason": checked.reason,
        "scores": checked.scores,
        "quotes": checked.quotes,
        "bugs": checked.bugs,
        "summary": checked.summary,
    }


def write_review(pairs_dir: Path, doc: dict) -> Path:
    """``<pairs_dir>/<pair_id>/review.json``, written atomically."""
    folder = Path(pairs_dir) / doc["pair_id"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REVIEW_FILE
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{REVIEW_FILE}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


@dataclass(frozen=True)
class _PairTask:
    """What ``run_judge`` asks of a task: its judge prompt."""

    prompt: str

    def judge_prompt(self) -> str:
        return self.prompt


Runner = Callable[[str, Path, Path], tuple[str | None, str, str | None]]


def run_with_double(scripts: Mapping[str, Path]) -> Runner:
    """A runner of each judge's real CLI in its container against the model double answering
    ``scripts[judge_id]`` (``argusic.judging.double``); returns (final message, model, session sha256)."""

    def run(judge_id: str, context_dir: Path, out_dir: Path) -> tuple[str | None, str, str | None]:
        if judge_id not in scripts:
            raise PairError(f"judge {judge_id}: no paired judgement script")
        try:
            broker = DoubleBroker(scripts[judge_id])
        except JudgeScriptError as err:
            raise JudgeError(f"judge {judge_id}: {err}") from None
        task = _PairTask((Path(context_dir) / "task.md").read_text(encoding="utf-8"))
        run_judge(judge_id, context_dir, out_dir, task=task, broker=broker)  # type: ignore[arg-type]
        harness = judge_driver(judge_id).harness_name
        return final_message(harness, out_dir), broker.model, _sha256_of(Path(out_dir) / SESSION_FILE)

    return run


def judge_pair(
    pair: Pair,
    judge_ids: Sequence[str],
    work_dir: Path,
    run: Runner,
    *,
    base_files: Mapping[str, str] | None = None,
    pairs_dir: Path | None = None,
) -> tuple[dict, Path | None]:
    """Build the pair's context under ``work_dir``, run every judge (``run``: e.g.
    ``run_with_double(scripts)``), check each answer; the review document, written to ``pairs_dir``
    when given (its path, else None)."""
    if len(judge_ids) < 2:
        raise PairError("a paired review needs at least two judges (their median)")
    drivers = {j: judge_driver(j) for j in judge_ids}  # unknown judges refused before anything runs
    context = build_context(pair, Path(work_dir) / pair.pair_id / "context", base_files)
    judgements = []
    for judge_id in judge_ids:
        out_dir = Path(work_dir) / pair.pair_id / "sessions" / judge_id
        message, model, session = run(judge_id, context, out_dir)
        checked = check_answer(message, context)
        judgements.append(judgement(judge_id, drivers[judge_id].harness_name, model, checked, session))
    doc = review_document(pair, context, judgements)
    path = write_review(pairs_dir, doc) if pairs_dir is not None else None
    return doc, path


__all__ = [
    "ANSWER_SCHEMA",
    "CRITERIA",
    "PAIR_SCHEMA",
    "REVIEW_SCHEMA",
    "SIDES",
    "Answer",
    "Checked",
    "GradedPatch",
    "Pair",
    "PairError",
    "build_context",
    "bug_id",
    "bugs_reported",
    "check_answer",
    "draw",
    "draw_seed",
    "graded_patch",
    "judge_pair",
    "judge_prompt",
    "make_pair",
    "medians",
    "review_document",
    "run_with_double",
    "write_review",
]
