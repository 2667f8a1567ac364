"""Grading a patch against an item, and validating an item's grader before any model runs.

``grade_patch``: base's files, the agent's patch applied *without its test files* (paths by
`argusic.repair.paths` or listed in the item's ``test_files``; the excluded paths are recorded), then the
item's test patch, then the tests in a fresh grader container (`argusic.repair.testrun`). Failing test
files of interest (f2p and p2p) are re-run alone up to three times. Seven verdicts:

============================  =====================================================================
``resolved``                  every f2p passes and no p2p breaks, first run
``resolved_after_rerun``      the same, only after failing files were re-run alone (counted apart)
``unresolved``                some f2p fails or some p2p breaks after reruns (``failing_tests``)
``patch_apply_failed``        the agent's patch (test files dropped) does not apply to base
``test_patch_conflict``       the test patch does not apply on top of the agent's patch (it does on base)
``no_report``                 the test command gave no readable JUnit XML
``env_setup_failed``          our environment: setup command failed, image missing, base not exported,
                              the test patch not applying to base itself — never the model's fault
============================  =====================================================================

``validate_item``: the gold patch three times (each must be ``resolved``), the empty patch once
(``unresolved``), and for split items the topic's partial gold patch once (``resolved``); and every new
name its tests use is named by its spec (``argusic.repair.spec_check``); an item is usable only then.
The record is written beside the item, and on a cluster into the runs store.

The item's base comes from its repository on one machine, and on a cluster from the item's bundle in
the runs store (``argusic.repair.items.repository_of``): a grader on any host needs nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from argusic.repair import item_store, lint, spec_check, testrun
from argusic.repair import paths as test_paths
from argusic.repair.items import Item, ItemError, items_dir, repository_of, write_record

GRADE_SCHEMA = "argusic.repair_grade/1"
VALIDATION_SCHEMA = "argusic.repair_validation/1"
VERDICTS = (
    "resolved",
    "resolved_after_rerun",
    "unresolved",
    "patch_apply_failed",
    "test_patch_conflict",
    "no_report",
    "env_setup_failed",
)
MAX_PATCH_BYTES = 8 * 1024 * 1024
SUPPRESSIONS = re.compile(
    r"#\s*noqa|#\s*type:\s*ignore|eslint-disable|@ts-ignore|@ts-expect-error|pylint:\s*disable"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class GradeQuality(_Strict):
    empty_patch: bool
    changed_lines: int | None
    gold_changed_lines: int
    lint_new_errors: int | None
    suppressions_added: int | None


class RerunRecord(_Strict):
    file: str
    tries: Annotated[int, Field(ge=1, le=3)]
    passed: bool


class GradeImage(_Strict):
    reference: str
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | None


class GradeRecord(_Strict):
    """The stored shape of a grade (``argusic.repair_grade/1``; schemas/repair-grade-1.schema.json)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    schema_: Literal["argusic.repair_grade/1"] = Field(alias="schema")
    grade_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,200}$")]
    item_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
    revision: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    source: dict[str, str | int | bool | None]
    patch_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    patch_bytes: Annotated[int, Field(ge=0)]
    excluded_paths: list[str]
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]
    failing_tests: list[str]
    rerun_files: list[RerunRecord]
    results: dict[str, Literal["passed", "failed", "error", "skipped"]]
    graded_at: Annotated[str, Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")]
    grader_image: GradeImage
    quality: GradeQuality
    detail: Annotated[str, Field(max_length=2000)]


def grade_json_schema() -> dict:
    schema = GradeRecord.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://argusic.invalid/schemas/repair-grade-1.schema.json"
    return schema


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Grade:
    item_id: str
    revision: str
    source: dict
    patch_sha256: str
    patch_bytes: int
    excluded_paths: list[str]
    verdict: str
    failing_tests: list[str]
    rerun_files: list[dict]
    results: dict[str, str]
    graded_at: str
    grader_image: dict
    quality: dict
    detail: str
    grade_id: str = ""

    def to_dict(self) -> dict:
        return {
            "schema": GRADE_SCHEMA,
            "grade_id": self.grade_id,
            "item_id": self.item_id,
            "revision": self.revision,
            "source": self.source,
            "patch_sha256": self.patch_sha256,
            "patch_bytes": self.patch_bytes,
            "excluded_paths": self.excluded_paths,
            "verdict": self.verdict,
            "failing_tests": self.failing_tests,
            "rerun_files": self.rerun_files,
            "results": self.results,
            "graded_at": self.graded_at,
            "grader_image": self.grader_image,
            "quality": self.quality,
            "detail": self.detail[:2000],
        }

    def to_json(self) -> str:
        data = self.to_dict()
        GradeRecord.model_validate(data)  # the stored shape, checked on the way out
        return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass
class Validation:
    item_id: str
    revision: str
    validated_at: str
    grader_image: dict
    runs: list[dict] = field(default_factory=list)
    usable: bool = False
    problems: list[str] = field(default_factory=list)
    # The tests the item sets aside (seed 001), shown with the validation they did not take part in.
    excluded_tests: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "schema": VALIDATION_SCHEMA,
            "item_id": self.item_id,
            "revision": self.revision,
            "validated_at": self.validated_at,
            "grader_image": self.grader_image,
            "runs": self.runs,
            "usable": self.usable,
            "problems": self.problems,
        } | ({"excluded_tests": self.excluded_tests} if self.excluded_tests else {})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def safe_id(text: str) -> str:
    """An id part ([A-Za-z0-9_.-], at most 200 characters) made from any text."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:200] or "-"


def source_id(source: dict) -> str:
    if source.get("kind") == "attempt":
        return str(source.get("attempt_id", "attempt"))
    if source.get("kind") == "predictions":
        return f"{source.get('label', 'model')}-{str(source.get('file_sha256', ''))[:12]}"
    return str(source.get("kind", "grade"))


# ---------------------------------------------------------------------------------------------------
# Verdict logic (pure: unit-tested on canned results)


def failing_of(item: Item, results: dict[str, str]) -> list[str]:
    """f2p tests not passing and p2p tests no longer passing (absent counts as failing). The item's
    excluded tests are in neither list: whatever their result, it is never read."""
    tests = [*item.fail_to_pass, *item.pass_to_pass]
    return sorted(t for t in tests if results.get(t) != "passed")


def decide(item: Item, first: dict[str, str], final: dict[str, str]) -> tuple[str, list[str]]:
    """(verdict, failing tests) from the first run's results and the results after reruns."""
    if not failing_of(item, first):
        return "resolved", []
    failing = failing_of(item, final)
    if not failing:
        return "resolved_after_rerun", []
    return "unresolved", failing


# ---------------------------------------------------------------------------------------------------
# Quality figures


def _is_test(item: Item, path: str) -> bool:
    return test_paths.is_test_path(path) or path in set(item.test_files)


def changed_lines(patch: bytes, keep) -> int:
    """Added + removed lines over the files `keep(path)` accepts (binary files count 0)."""
    return sum(
        (a or 0) + (r or 0) for a, r, paths in testrun.patch_numstat(patch) if all(keep(p) for p in paths)
    )


def suppressions_added(patch: bytes, keep) -> int:
    count = 0
    for chunk in testrun.patch_chunks(patch):
        if not all(keep(p) for p in testrun.patch_paths(chunk)):
            continue
        for line in chunk.splitlines():
            if (
                line.startswith(b"+")
                and not line.startswith(b"+++")
                and SUPPRESSIONS.search(line.decode(errors="replace"))
            ):
                count += 1
    return count


def quality_of(item: Item, patch: bytes, gold: str) -> dict:
    """Quality figures of a patch read from its text (non-test files only). ``lint_new_errors`` needs
    the patched files: grade_patch fills it in once the patch applies (null until then, and for an
    empty patch)."""
    non_test = lambda p: not _is_test(item, p)  # noqa: E731
    gold_lines = changed_lines(gold.encode(errors="surrogateescape"), non_test)
    if not patch.strip():
        return {"empty_patch": True, "changed_lines": None, "gold_changed_lines": gold_lines,
                "lint_new_errors": None, "suppressions_added": None}  # fmt: skip
    try:
        lines = changed_lines(patch, non_test)
        suppressions = suppressions_added(patch, non_test)
    except testrun.StateError:
        lines = suppressions = None
    return {"empty_patch": False, "changed_lines": lines, "gold_changed_lines": gold_lines,
            "lint_new_errors": None, "suppressions_added": suppressions}  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# Grading


def _repo_cache() -> Path:
    return items_dir() / ".repos"


def grade_patch(
    item: Item, patch: bytes, *, source: dict, image: str | None = None, gold_for_quality: str | None = None
) -> Grade:
    """Grade one patch against one item in a fresh container (networking off); see the module
    docstring for the verdicts. Never raises for the patch's content; our failures become
    ``env_setup_failed``."""
    image = image or testrun.grader_image()
    grade = Grade(
        item_id=item.item_id, revision=item.revision, source=source,
        patch_sha256=hashlib.sha256(patch).hexdigest(), patch_bytes=len(patch), excluded_paths=[],
        verdict="env_setup_failed", failing_tests=[], rerun_files=[], results={}, graded_at=_now(),
        grader_image={"reference": image, "digest": None}, quality={}, detail="",
    )  # fmt: skip
    grade.grade_id = safe_id(f"{source_id(source)}.{item.item_id}")
    gold = gold_for_quality if gold_for_quality is not None else (item.partial_gold_patch or item.gold_patch)
    grade.quality = quality_of(item, patch, gold)
    if len(patch) > MAX_PATCH_BYTES:
        grade.verdict, grade.detail = (
            "patch_apply_failed",
            f"patch is {len(patch)} bytes, over {MAX_PATCH_BYTES}",
        )
        return grade
    try:
        grade.grader_image["digest"] = testrun.image_id(image)
        git_dir = repository_of(item, _repo_cache())  # on a cluster: the runs store's bundle
    except (testrun.StateError, ItemError) as err:
        grade.detail = str(err)
        return grade
    if patch.strip():
        try:
            touched = testrun.patch_paths(patch)
        except testrun.StateError as err:
            grade.verdict, grade.detail = "patch_apply_failed", f"not a patch git can read: {err}"
            return grade
        grade.excluded_paths = sorted(p for p in touched if _is_test(item, p))
    work = testrun.real_temp_dir("argusic-grade-")
    try:
        tree = work / "repo"
        try:
            testrun.export_base(git_dir, item.base, tree)
        except testrun.StateError as err:
            grade.detail = f"base {item.base} not exported: {err}"
            return grade
        try:
            testrun.apply_patch(tree, patch, exclude=grade.excluded_paths, step="agent_patch")
        except testrun.StateError as err:
            grade.verdict, grade.detail = "patch_apply_failed", str(err)
            return grade
        if patch.strip():
            grade.quality = {
                **grade.quality,
                "lint_new_errors": _lint_new_errors(item, git_dir, work, patch, gold),
            }
        try:
            testrun.apply_patch(tree, item.test_patch.encode(errors="surrogateescape"), step="test_patch")
        except testrun.StateError as err:
            grade.verdict, grade.detail = _test_patch_failure(item, git_dir, work, err)
            return grade
        try:
            run = testrun.run_state(
                tree, item.test_command, item.setup_command,
                rerun_interest=[*item.fail_to_pass, *item.pass_to_pass], image=image,
            )  # fmt: skip
        except testrun.StateError as err:  # the image went away meanwhile: ours
            grade.detail = str(err)
            return grade
    finally:
        shutil.rmtree(work, ignore_errors=True)
    grade.results = run.results
    grade.rerun_files = [{"file": r.file, "tries": r.tries, "passed": r.passed} for r in run.reruns]
    if run.problem == "setup_failed":
        grade.verdict, grade.detail = "env_setup_failed", run.detail
    elif run.problem == "no_report":
        grade.verdict, grade.detail = "no_report", run.detail
    else:
        grade.verdict, grade.failing_tests = decide(item, run.first_results, run.results)
        if grade.failing_tests:
            grade.detail = f"{len(grade.failing_tests)} of the item's tests fail"
    return grade


def _lint_new_errors(item: Item, git_dir: Path, work: Path, patch: bytes, gold: str) -> int | None:
    """pyflakes messages the agent's state has and the gold state lacks, over the non-test files either
    patch touches (``argusic.repair.lint``); None when the gold state cannot be made."""
    gold_bytes = gold.encode(errors="surrogateescape")
    gold_tree = work / "gold-state"
    try:
        testrun.export_base(git_dir, item.base, gold_tree)
        testrun.apply_patch(gold_tree, gold_bytes, step="gold_patch")
        touched = [*testrun.patch_paths(patch), *testrun.patch_paths(gold_bytes)]
    except testrun.StateError:
        return None
    return lint.new_errors(work / "repo", gold_tree, touched, lambda p: not _is_test(item, p))


def _test_patch_failure(item: Item, git_dir: Path, work: Path, err: testrun.StateError) -> tuple[str, str]:
    """test_patch_conflict when the test patch applies to base alone, else env_setup_failed."""
    pristine = work / "pristine"
    try:
        testrun.materialise(
            git_dir,
            item.base,
            [("test_patch", item.test_patch.encode(errors="surrogateescape"), ())],
            pristine,
        )
    except testrun.StateError as base_err:
        return "env_setup_failed", f"the test patch does not apply to base itself: {base_err}"
    return "test_patch_conflict", f"test patch does not apply over the agent's patch: {err}"


# ---------------------------------------------------------------------------------------------------
# Validation


def validate_item(item: Item, *, image: str | None = None, out_dir: Path | None = None) -> Validation:
    """Gold ×3, empty ×1, partial gold ×1 for split items; writes
    ``<out_dir>/<project_id>/<item_id>.validation.json`` (out_dir: the items folder)."""
    validation = Validation(
        item.item_id,
        item.revision,
        _now(),
        {"reference": image or testrun.grader_image(), "digest": None},
        excluded_tests=[e.model_dump() for e in item.excluded_tests],
    )
    plan: list[tuple[str, str, int, str]] = [("gold", item.gold_patch, n, "resolved") for n in (1, 2, 3)]
    plan.append(("empty", "", 1, "unresolved"))
    if item.split is not None:
        plan.append(("partial_gold", item.partial_gold_patch or "", 1, "resolved"))
    for kind, patch, number, wanted in plan:
        grade = grade_patch(
            item,
            patch.encode(errors="surrogateescape"),
            source={"kind": "validation", "patch": kind},
            image=image,
        )
        validation.grader_image = grade.grader_image
        validation.runs.append(
            {"patch": kind, "run_no": number, "verdict": grade.verdict, "failing_tests": grade.failing_tests}
        )
        if grade.verdict != wanted:
            why = f": {grade.detail}" if grade.detail else ""
            validation.problems.append(
                f"{kind} patch run {number}: {grade.verdict}, expected {wanted}{why}"[:1000]
            )
    # The spec track's checker (seed 001): every new name the tests use is in the spec (a basic item:
    # in its statement), else the item fails validation with the list (``argusic.repair.spec_check``).
    validation.problems += spec_check.check_item(item).problems()
    validation.usable = not validation.problems
    store_validation(validation, item, out_dir)
    return validation


def store_validation(validation: Validation, item: Item, out_dir: Path | None = None) -> Path:
    """Write the validation record beside the item; on a cluster it goes into the runs store too
    (``argusic.repair.item_store.put_validation``), where the planning and attempting hosts read it."""
    folder = Path(out_dir or items_dir()) / item.project_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{item.item_id}.validation.json"
    text = validation.to_json()
    write_record(path, text)
    item_store.put_validation(item.project_id, item.item_id, item.revision, text.encode())
    return path


def store_grade(grade: Grade, out_dir: Path) -> Path:
    """``<out_dir>/<grade_id>.json`` (checked against the record's shape on the way out)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{grade.grade_id}.json"
    write_record(path, grade.to_json())
    return path
