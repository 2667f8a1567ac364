"""Paired patch review (issue #31, seed 001): the P/Q draw, the context a judge reads, the strict check
of a judge's answer, medians and bugs, and the flow with scripted judges.

- Unit tests (no Docker): the draw is reproducible, independent of argument order and recorded; the
  context holds the statement, spec, gold patch, both patches, their grades and the base code, and no
  label; an answer is refused for a quote not verbatim, a score of 6, a missing criterion, a score
  <= 3 without a quote, a bool for an integer, a bug quoting another file; medians over valid judges.
- The flow end to end with three judges whose answers are model-double scripts
  (``argusic.judging.double.paired_judge_script``): fast, the script's final message as the judge's;
  slow (Docker), each judge's real CLI in its container against the double.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from argusic.judging import paired as P
from argusic.judging.double import paired_judge_script, read_judge_script
from argusic.repair.items import make_item
from repair_fixture import STATEMENT

BASE_DIV = "def div(a, b):\n    return a // b\n"
GOLD = (
    "diff --git a/calc/div.py b/calc/div.py\n--- a/calc/div.py\n+++ b/calc/div.py\n@@ -1,2 +1,2 @@\n"
    " def div(a, b):\n-    return a // b\n+    return a / b\n"
)
CLEAN = GOLD  # one patch is the gold fix itself
DEBUG = (
    "diff --git a/calc/div.py b/calc/div.py\n--- a/calc/div.py\n+++ b/calc/div.py\n@@ -1,2 +1,4 @@\n"
    ' def div(a, b):\n-    return a // b\n+    print("dividing", a, b)\n+    if b == 0:\n+        return 0\n'
    "+    return a / b\n"
)
PRINT_LINE = 'print("dividing", a, b)'
BUG_LINE = "if b == 0:\n+        return 0"  # the debug patch hides division by zero


def item(item_id: str = "calc-1-div", revision_salt: str = ""):
    return make_item(
        {
            "item_id": item_id,
            "project_id": "calc",
            "repository": "/r",
            "base": "a" * 40,
            "source": {"kind": "merge", "ref": "b" * 40},
            "track": "spec",
            "problem_statement": STATEMENT + revision_salt,
            "interface_spec": "`div(a, b)` returns the true quotient of a and b.\n",
            "test_patch": "diff --git a/checks/test_div.py b/checks/test_div.py\n",
            "gold_patch": GOLD,
            "test_files": ["checks/test_div.py"],
            "test_command": ["python3", "-m", "pytest"],
            "setup_command": None,
            "fail_to_pass": ["checks.test_div::test_div_half"],
            "pass_to_pass": ["tests.test_basic::test_add"],
            "split": None,
            "superseded_by_split": False,
            "states": {
                "base": {"tests.test_basic::test_add": "passed"},
                "with_tests": {
                    "tests.test_basic::test_add": "passed",
                    "checks.test_div::test_div_half": "failed",
                },
                "with_gold": {
                    "tests.test_basic::test_add": "passed",
                    "checks.test_div::test_div_half": "passed",
                },
            },
            "built_at": "2026-12-01T00:00:00Z",
            "grader_image": {"reference": "argusic-grader:bookworm", "digest": "sha256:" + "c" * 64},
        }
    )


def grade_of(it, patch: str, verdict: str = "resolved", source: dict | None = None) -> dict:
    return {
        "schema": "argusic.repair_grade/1",
        "grade_id": "secret-grade-id",
        "item_id": it.item_id,
        "revision": it.revision,
        "source": source or {"kind": "attempt", "attempt_id": "2026-12.repair.claude-sonnet.calc.a1"},
        "patch_sha256": hashlib.sha256(patch.encode()).hexdigest(),
        "patch_bytes": len(patch),
        "excluded_paths": [],
        "verdict": verdict,
        "failing_tests": [],
        "rerun_files": [],
        "results": {"checks.test_div::test_div_half": "passed"},
        "graded_at": "2026-12-02T00:00:00Z",
        "grader_image": {"reference": "argusic-grader:bookworm", "digest": None},
        "quality": {"empty_patch": False, "changed_lines": 2, "gold_changed_lines": 2,
                    "lint_new_errors": 0, "suppressions_added": 0},
        "detail": "",
    }  # fmt: skip


def the_pair(it=None) -> P.Pair:
    it = it or item()
    a = P.graded_patch("model-a", CLEAN, grade_of(it, CLEAN), it)
    b = P.graded_patch("model-b", DEBUG, grade_of(it, DEBUG), it)
    return P.make_pair(it, a, b)


@pytest.fixture
def context(tmp_path: Path) -> tuple[P.Pair, Path]:
    pair = the_pair()
    return pair, P.build_context(pair, tmp_path / "context", {"calc/div.py": BASE_DIV})


def answer(pair: P.Pair, **changes) -> dict:
    """A valid answer: the debug patch (whichever side it drew) scored low with quotes and one bug."""
    debug = "P" if pair.p.patch == DEBUG else "Q"
    clean = "Q" if debug == "P" else "P"
    doc = {
        "schema": P.ANSWER_SCHEMA,
        "scores": {
            clean: dict.fromkeys(P.CRITERIA, 5),
            debug: {**dict.fromkeys(P.CRITERIA, 4), "correctness": 3, "tidiness": 2, "overall": 3},
        },
        "quotes": [
            {"side": debug, "criterion": "correctness", "file": f"{debug}.patch", "quote": BUG_LINE},
            {"side": debug, "criterion": "tidiness", "file": f"{debug}.patch", "quote": PRINT_LINE},
            {"side": debug, "criterion": "overall", "file": "spec.md", "quote": "returns the true quotient"},
        ],
        "bugs": [{"side": debug, "file": f"{debug}.patch", "quote": BUG_LINE,
                  "description": "Division by zero answers 0 instead of raising."}],
        "summary": "One patch is the reference fix; the other prints and hides division by zero.",
    }  # fmt: skip
    doc.update(changes)
    return doc


# --- the draw ------------------------------------------------------------------------------------------


def test_the_draw_is_reproducible_independent_of_order_and_recorded() -> None:
    it = item()
    a = P.graded_patch("model-a", CLEAN, grade_of(it, CLEAN), it)
    b = P.graded_patch("model-b", DEBUG, grade_of(it, DEBUG), it)
    one, two = P.make_pair(it, a, b), P.make_pair(it, b, a)
    assert (one.p.label, one.q.label, one.seed, one.drawn) == (two.p.label, two.q.label, two.seed, two.drawn)
    assert (
        one.seed
        == hashlib.sha256(
            json.dumps(
                [it.item_id, it.revision, sorted([a.patch_id, b.patch_id])], separators=(",", ":")
            ).encode()
        ).hexdigest()
    )
    recorded = one.to_dict()
    assert recorded["draw"]["seed"] == one.seed and recorded["draw"]["drawn"] == one.drawn
    assert (
        recorded["sides"]["P"]["label"] == one.p.label
        and recorded["sides"]["Q"]["patch_id"] == one.q.patch_id
    )
    first = min(a.patch_id, b.patch_id)
    assert (one.p.patch_id == first) == (one.drawn < 0.5)  # the rule as recorded


def test_across_items_the_same_label_lands_on_p_and_on_q() -> None:
    sides = set()
    for n in range(16):
        pair = the_pair(item(f"calc-{n}"))
        sides.add(pair.p.label)
    assert sides == {"model-a", "model-b"}


def test_a_pair_needs_labels_and_grades_of_its_own_patch_and_item() -> None:
    it = item()
    with pytest.raises(P.PairError, match="label"):
        P.graded_patch("claude sonnet 4.5", CLEAN, grade_of(it, CLEAN), it)
    with pytest.raises(P.PairError, match="another patch"):
        P.graded_patch("model-a", CLEAN, grade_of(it, DEBUG), it)
    with pytest.raises(P.PairError, match="another item"):
        P.graded_patch("model-a", CLEAN, grade_of(item(revision_salt="x"), CLEAN), it)
    a = P.graded_patch("model-a", CLEAN, grade_of(it, CLEAN), it)
    with pytest.raises(P.PairError, match="same patch"):
        P.make_pair(it, a, a)


# --- the context ----------------------------------------------------------------------------------------


def test_the_context_holds_everything_the_seed_names_and_no_label(context) -> None:
    pair, folder = context
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert names == ["P.grade.json", "P.patch", "Q.grade.json", "Q.patch", "base/calc/div.py", "gold.patch",
                     "manifest.json", "spec.md", "statement.md", "task.md"]  # fmt: skip
    assert (folder / "P.patch").read_text() == pair.p.patch and (
        folder / "Q.patch"
    ).read_text() == pair.q.patch
    assert (folder / "base/calc/div.py").read_text() == BASE_DIV
    grade = json.loads((folder / "P.grade.json").read_text())
    assert grade["verdict"] == "resolved" and "source" not in grade and "grade_id" not in grade
    everything = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    for secret in (b"model-a", b"model-b", b"claude-sonnet", b"secret-grade-id"):
        assert secret not in everything
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["task_id"] == "paired_review" and len(manifest["files"]) == 9
    assert "correctness" in (folder / "task.md").read_text()


def test_the_base_paths_are_the_non_test_files_the_patches_touch() -> None:
    with_test = DEBUG + GOLD.replace("calc/div.py", "checks/test_div.py")
    assert P.touched_base_paths(item(), [GOLD, with_test]) == ["calc/div.py"]


# --- the answer -----------------------------------------------------------------------------------------


def test_a_valid_answer_is_kept_as_given(context) -> None:
    pair, folder = context
    checked = P.check_answer(json.dumps(answer(pair)), folder)
    assert checked.status == "valid", checked.reason
    assert checked.scores == answer(pair)["scores"] and len(checked.bugs) == 1
    fenced = P.check_answer("```json\n" + json.dumps(answer(pair)) + "\n```", folder)
    assert fenced.status == "valid"


def _refusal(pair: P.Pair, folder: Path, doc: dict | str) -> str:
    checked = P.check_answer(doc if isinstance(doc, str) else json.dumps(doc), folder)
    assert checked.status == "refused", checked
    assert checked.scores == {} and checked.bugs == []  # never filled in, nothing half-kept
    return checked.reason or ""


def test_a_quote_that_is_not_verbatim_is_refused(context) -> None:
    pair, folder = context
    doc = answer(pair)
    doc["quotes"][1] = {**doc["quotes"][1], "quote": 'print("dividing", b, a)'}
    assert "quotes.1.quote: not found verbatim in" in _refusal(pair, folder, doc)
    doc = answer(pair)
    doc["quotes"][0] = {**doc["quotes"][0], "file": "../etc/passwd"}
    assert "is not a file of the context" in _refusal(pair, folder, doc)


def test_a_score_of_6_or_0_or_a_bool_is_refused(context) -> None:
    pair, folder = context
    for value, words in ((6, "6 is not in 1..5"), (0, "0 is not in 1..5"), (True, "is not an integer"),
                         (4.0, "is not an integer"), ("4", "is not an integer")):  # fmt: skip
        doc = answer(pair)
        doc["scores"]["P"]["simplicity"] = value
        assert "scores.P.simplicity: " in (reason := _refusal(pair, folder, doc)) and words in reason, reason


def test_a_missing_criterion_or_side_is_refused(context) -> None:
    pair, folder = context
    doc = answer(pair)
    del doc["scores"]["Q"]["consistency"]
    assert "scores.Q: not the six criteria (missing ['consistency']" in _refusal(pair, folder, doc)
    doc = answer(pair)
    doc["scores"]["Q"]["elegance"] = 5
    assert "unknown ['elegance']" in _refusal(pair, folder, doc)
    doc = answer(pair)
    del doc["scores"]["P"]
    assert "scores.P: missing" in _refusal(pair, folder, doc)


def test_a_score_of_3_or_less_without_a_quote_is_refused(context) -> None:
    pair, folder = context
    doc = answer(pair)
    debug = doc["quotes"][0]["side"]
    doc["quotes"] = [q for q in doc["quotes"] if q["criterion"] != "tidiness"]
    assert f"quotes: {debug} tidiness scored 2 without a quote" in _refusal(pair, folder, doc)


def test_a_bug_must_quote_its_own_patch(context) -> None:
    pair, folder = context
    doc = answer(pair)
    bug = doc["bugs"][0]
    other = "Q" if bug["side"] == "P" else "P"
    doc["bugs"][0] = {**bug, "file": f"{other}.patch"}
    assert "bugs.0.file" in _refusal(pair, folder, doc)
    doc["bugs"][0] = {**bug, "quote": "return None  # a line nobody wrote"}
    assert "bugs.0.quote: not found verbatim" in _refusal(pair, folder, doc)


def test_no_message_and_no_json(context) -> None:
    pair, folder = context
    assert P.check_answer("", folder).status == "no_verdict"
    assert "not a JSON object" in _refusal(pair, folder, "I like P better.")
    assert "schema" in _refusal(pair, folder, {**answer(pair), "schema": "argusic.judge-verdict/1"})
    assert "extra" in _refusal(pair, folder, {**answer(pair), "winner": "P"}).lower()


# --- medians and bugs -----------------------------------------------------------------------------------


def test_medians_over_valid_judges_only() -> None:
    def j(status: str, p: int, q: int) -> dict:
        return {
            "status": status,
            "scores": {"P": dict.fromkeys(P.CRITERIA, p), "Q": dict.fromkeys(P.CRITERIA, q)},
        }

    found = P.medians([j("valid", 5, 1), j("valid", 4, 2), j("valid", 1, 2), j("refused", 1, 1)])
    assert found["P"]["correctness"] == 4 and found["Q"]["overall"] == 2
    assert (
        P.medians([j("valid", 5, 1), j("valid", 4, 2)])["P"]["tidiness"] == 4.5
    )  # the median, not a mean of 3
    assert P.medians([j("refused", 1, 1)])["P"]["correctness"] is None


def test_bugs_have_stable_ids_per_judge() -> None:
    bug = {"side": "Q", "file": "Q.patch", "quote": BUG_LINE, "description": "zero"}
    judgements = [{"judge_id": "judge-claude", "status": "valid", "bugs": [bug]},
                  {"judge_id": "judge-codex", "status": "valid", "bugs": [bug]},
                  {"judge_id": "judge-claude-2", "status": "refused", "bugs": [bug]}]  # fmt: skip
    found = P.bugs_reported("calc-1.abc", judgements)
    assert [b["judge_id"] for b in found] == ["judge-claude", "judge-codex"]
    assert found[0]["bug_id"] == P.bug_id(
        "calc-1.abc", "judge-claude", {**bug, "quote": BUG_LINE.replace(" ", "  ")}
    )


# --- the flow with scripted judges ----------------------------------------------------------------------

JUDGES = ("judge-claude", "judge-codex", "judge-claude-2")


def scripts(tmp_path: Path, pair: P.Pair) -> dict[str, Path]:
    """Three judges: two valid answers that differ, one quoting what no file says (refused)."""
    folder = tmp_path / "scripts"
    folder.mkdir(exist_ok=True)
    lenient = answer(pair)
    clean = "Q" if lenient["quotes"][0]["side"] == "P" else "P"
    lenient["scores"][clean] = {**lenient["scores"][clean], "simplicity": 4}
    invented = answer(pair)
    invented["quotes"][1] = {**invented["quotes"][1], "quote": "console.log('debug')"}
    made = {}
    for judge_id, doc in zip(JUDGES, (answer(pair), lenient, invented), strict=True):
        harness = "codex" if judge_id == "judge-codex" else "claude-code"
        made[judge_id] = folder / f"{judge_id}.json"
        made[judge_id].write_text(json.dumps(paired_judge_script(doc, harness)))
    return made


def final_text_runner(made: dict[str, Path]) -> P.Runner:
    """The double's scripted final message as the judge's (no container: the fast flow)."""

    def run(judge_id: str, context_dir: Path, out_dir: Path):
        data, turns = read_judge_script(made[judge_id])
        return turns[-1]["text"], f"model-double/{hashlib.sha256(data).hexdigest()[:16]}", None

    return run


def check_review(doc: dict, pair: P.Pair) -> None:
    assert doc["schema"] == P.REVIEW_SCHEMA and doc["pair_id"] == pair.pair_id
    assert doc["draw"]["seed"] == pair.seed
    statuses = {j["judge_id"]: j["status"] for j in doc["judgements"]}
    assert statuses == {"judge-claude": "valid", "judge-codex": "valid", "judge-claude-2": "refused"}
    refused = next(j for j in doc["judgements"] if j["status"] == "refused")
    assert "not found verbatim" in refused["reason"] and refused["scores"] == {}
    debug = "P" if pair.p.patch == DEBUG else "Q"
    clean = "Q" if debug == "P" else "P"
    assert doc["medians"][debug]["tidiness"] == 2 and doc["medians"][clean]["simplicity"] == 4.5
    assert [(b["judge_id"], b["side"]) for b in doc["bugs"]] == [
        ("judge-claude", debug),
        ("judge-codex", debug),
    ]
    assert all(j["model"].startswith("model-double/") for j in doc["judgements"])


def test_the_flow_with_three_scripted_judges(tmp_path: Path) -> None:
    pair = the_pair()
    made = scripts(tmp_path, pair)
    doc, path = P.judge_pair(pair, JUDGES, tmp_path / "work", final_text_runner(made),
                             base_files={"calc/div.py": BASE_DIV}, pairs_dir=tmp_path / "pairs")  # fmt: skip
    check_review(doc, pair)
    assert path == tmp_path / "pairs" / pair.pair_id / "review.json"
    assert json.loads(path.read_text()) == json.loads(json.dumps(doc))
    assert b"model-a" in path.read_bytes()  # labels are in the record (the warehouse's), never in the context
    with pytest.raises(P.PairError, match="at least two judges"):
        P.judge_pair(pair, JUDGES[:1], tmp_path / "work", final_text_runner(made))


@pytest.mark.slow
@pytest.mark.docker
def test_three_judges_real_clis_against_the_double(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each judge's pinned CLI (Claude Code twice, Codex once) in its locked container reads the pair's
    context with its own tools and answers from its script through the model double; the answers are
    checked as the fast flow checks them."""
    import uuid

    from test_judges_live import _docker_or_skip

    _docker_or_skip()
    monkeypatch.setenv("ARGUSIC_INSTALLATION", f"t-{uuid.uuid4().hex[:10]}")
    pair = the_pair()
    made = scripts(tmp_path, pair)
    doc, _ = P.judge_pair(pair, JUDGES, tmp_path / "work", P.run_with_double(made),
                          base_files={"calc/div.py": BASE_DIV}, pairs_dir=tmp_path / "pairs")  # fmt: skip
    print(json.dumps(doc["judgements"], indent=1)[:3000])
    check_review(doc, pair)
    session = tmp_path / "work" / pair.pair_id / "sessions" / "judge-claude" / "session.jsonl"
    results = session.read_text()
    assert "a // b" in results  # the CLI's Read tool gave it the patches from the context folder
    assert all(j["session_sha256"] for j in doc["judgements"])


def test_the_prompt_names_the_six_criteria_and_its_example_has_the_answers_shape() -> None:
    import re

    prompt = P.judge_prompt()
    example = json.loads(re.search(r"```json\n(.*?)\n```", prompt, re.DOTALL).group(1))
    assert example["schema"] == P.ANSWER_SCHEMA and all(f"`{c}`" in prompt for c in P.CRITERIA)
    assert set(example["scores"]) == {"P", "Q"} and all(
        list(example["scores"][s]) == list(P.CRITERIA) for s in "PQ"
    )
    assert example["scores"]["Q"]["tidiness"] <= 3 and example["quotes"][0]["criterion"] == "tidiness"
