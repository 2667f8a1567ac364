"""Choosing the pairs of a paired patch review and judging them (issue #31; argusic.judging.paired_select,
`argusic paired review`): from real run records of repair attempts under a runs folder, per item two
patches of different runs (two models first), P and Q drawn and recorded, the same seed choosing the
same pairs, pairs already judged never judged again, no agent id written anywhere. The judges answer
through a runner returning a fixed valid answer (no container: the judges' own flow is
tests/judging/test_paired_review.py's)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest
from argusic.judging import paired as P
from argusic.judging import paired_select as S
from argusic.repair.items import store_item
from conftest import write_record
from test_paired_review import CLEAN, DEBUG, grade_of, item

JUDGES = ("judge-claude", "judge-codex", "judge-claude-2")
OTHER = CLEAN.replace("a / b", "float(a) / b")  # a second resolved fix, another run of alpha
UNRESOLVED = CLEAN.replace("a / b", "a % b")


def fixed_answer() -> dict:
    return {
        "schema": P.ANSWER_SCHEMA,
        "scores": {s: dict.fromkeys(P.CRITERIA, 4) for s in P.SIDES},
        "quotes": [],
        "bugs": [],
        "summary": "Both fix the problem.",
    }


def runner(calls: list[str]) -> P.Runner:
    def run(judge_id: str, context_dir: Path, out_dir: Path):
        calls.append(f"{context_dir.parent.name}/{judge_id}")
        return json.dumps(fixed_answer()), "model-double/fixed", None

    return run


def attempt(
    record_doc: dict, runs: Path, cycle: str, agent: str, no: int, patch: str, verdict: str, it
) -> None:
    """A repair attempt's folder: its run record, patch.diff and grade.json (referenced by sha256)."""
    doc = copy.deepcopy(record_doc)
    aid = f"{cycle}.repair.{agent}.calc.a{no}"
    folder = runs / cycle / aid
    folder.mkdir(parents=True)
    grade = grade_of(it, patch, verdict, {"kind": "attempt", "attempt_id": aid})
    refs = {}
    for name, data in (("patch.diff", patch.encode()), ("grade.json", json.dumps(grade).encode())):
        (folder / name).write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        refs[name] = {"sha256": sha, "uri": f"file:///nowhere/sha256/{sha[:2]}/{sha}", "bytes": len(data)}
    doc.update(
        attempt_id=aid, cycle_id=cycle, purpose="repair", agent_id=agent, project_id="calc", attempt_no=no
    )
    doc["repair"] = {"item_id": it.item_id, "item_revision": it.revision, "track": it.track,
                     "patch": refs["patch.diff"], "grade": refs["grade.json"]}  # fmt: skip
    write_record(folder, doc)


@pytest.fixture
def runs(record_doc: dict, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One item; alpha and beta resolve it in cycle 2026-12, gamma does not; alpha again in 2026-13."""
    monkeypatch.setenv("ARGUSIC_ITEMS_DIR", str(isolated / "items"))
    it = item()
    store_item(it, isolated / "items")
    root = isolated / "runs"
    attempt(record_doc, root, "2026-12", "alpha-agent", 1, CLEAN, "resolved", it)
    attempt(record_doc, root, "2026-12", "beta-agent", 1, DEBUG, "resolved", it)
    attempt(record_doc, root, "2026-12", "gamma-agent", 1, UNRESOLVED, "unresolved", it)
    attempt(record_doc, root, "2026-13", "alpha-agent", 1, OTHER, "resolved", it)
    return root


def review(root: Path, calls: list[str], **options) -> dict:
    return S.review_pairs(runner(calls), seed=options.pop("seed", "s1"), judge_ids=JUDGES, runs_root=root,
                          base_files=lambda pair: {"calc/div.py": "def div(a, b):\n    return a // b\n"},
                          **options)  # fmt: skip


def test_candidates_are_the_graded_patches_of_repair_records_known_by_labels(runs: Path) -> None:
    found, problems = S.repair_candidates(S.record_paths(runs))
    assert problems == []
    assert len(found) == 4
    labels = {c.patch.label for c in found}
    assert all(label.startswith("model-") for label in labels) and len(labels) == 3
    assert not any("agent" in c.patch.patch_id for c in found)


def test_two_models_are_paired_before_two_runs_of_one_and_the_seed_decides(runs: Path) -> None:
    found, _ = S.repair_candidates(S.record_paths(runs))
    chosen = {}
    for seed in (f"seed-{n}" for n in range(12)):
        picked, already = S.choose_pairs(found, seed)
        again, _ = S.choose_pairs(list(reversed(found)), seed)
        assert [c.pair.pair_id for c in picked] == [c.pair.pair_id for c in again]  # order-free
        assert len(picked) == 1 and already == []
        pair = picked[0].pair
        assert pair.p.label != pair.q.label  # two models, not alpha's two runs
        assert "unresolved" not in {pair.p.grade["verdict"], pair.q.grade["verdict"]}
        chosen[seed] = pair.pair_id
    assert len(set(chosen.values())) == 2  # alpha(2026-12)+beta or alpha(2026-13)+beta, by seed
    three, _ = S.choose_pairs(found, "seed-0", per_item=3)
    assert [c.tier for c in three] == [0, 0, 1]  # alpha's two runs only after the two-model pairs
    wider, _ = S.choose_pairs(found, "seed-0", per_item=10, verdicts=("resolved", "unresolved"))
    assert len(wider) == 6  # gamma's unresolved patch joins when asked for


def test_review_judges_records_the_selection_and_resumes(runs: Path) -> None:
    calls: list[str] = []
    first = review(runs, calls, per_item=2, limit=1)
    assert len(first["judged"]) == 1 and first["failed"] == [] and len(calls) == 3
    pair_id = first["judged"][0]
    folder = runs / "paired" / pair_id
    selection = json.loads((folder / "pair.json").read_text())
    review_doc = json.loads((folder / "review.json").read_text())
    assert selection["selection_seed"] == "s1" and selection["pair"]["draw"] == review_doc["draw"]
    assert review_doc["medians"]["P"]["overall"] == 4
    second = review(runs, calls, per_item=2)  # started again: only the pair left is judged
    assert second["already_judged"] == [pair_id] and len(second["judged"]) == 1 and len(calls) == 6
    third = review(runs, calls, per_item=2)
    assert third["judged"] == [] and len(third["already_judged"]) == 2 and len(calls) == 6
    for path in (runs / "paired").rglob("*.json"):
        text = path.read_text()
        assert "-agent" not in text, path  # agent ids stay on the operator's side


def test_the_review_loads_into_the_warehouse(runs: Path) -> None:
    from argusic.warehouse.load_paired import ingest_paired

    review(runs, [], per_item=2)
    assert ingest_paired() == 2


def test_the_command_dry_run_and_json(runs: Path) -> None:
    from argusic.cli.main import app
    from typer.testing import CliRunner

    done = CliRunner().invoke(app, ["paired", "review", "--seed", "s1", "--dry-run", "--json"])
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    assert summary["candidates"] == 4 and len(summary["chosen"]) == 1 and summary["judged"] == []
    refused = CliRunner().invoke(app, ["paired", "review", "--judges", "judge-claude"])
    assert refused.exit_code == 2
