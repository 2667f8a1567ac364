"""Helper of scripts/trial_repair_items.sh: predictions to grade, and the closing table.

    trial_repair_items.py predictions ITEMS_DIR REPO_MAP OUT.jsonl
    trial_repair_items.py table ITEMS_DIR GRADES_DIR OUT.jsonl

`predictions` writes one SWE-bench-style line per (item, kind): the gold patch, an empty patch, and
deliberately broken patches made in a working copy of the item's base (REPO_MAP: a JSON object
{project_id: local git dir}):

- gold          the item's gold patch (expected: resolved)
- empty         no change (expected: unresolved)
- no-fix        a comment added to the first file the gold patch changes, nothing fixed (unresolved)
- breaks-p2p    the gold patch, and the first gold file raising at import (unresolved: p2p tests fail)
- tests-only    only the item's test files edited (excluded by the grader, so unresolved; the
                excluded paths are recorded)
- stale         the gold patch with its first context line changed (patch_apply_failed)
- no-report     the first gold file ending the test process when imported: no report (no_report)
- flaky         the gold patch, and the first gold file raising at its first import only (the failing
                files pass when re-run alone: resolved_after_rerun)

Split items get `partial-gold` too: their topic's files of the gold patch (resolved).
Model names are `trial-<kind>`; grades carry labels only (repair/labels.toml), mapped back here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from argusic.repair.items import load_item
from argusic.repair.predictions import label_for, load_labels

EXPECTED = {
    "gold": "resolved",
    "partial-gold": "resolved",
    "empty": "unresolved",
    "no-fix": "unresolved",
    "breaks-p2p": "unresolved",
    "tests-only": "unresolved",
    "stale": "patch_apply_failed",
    "no-report": "no_report",
    "flaky": "resolved_after_rerun",
}
FLAKY = """

import os as _trial_os  # deliberately flaky (argusic trial): fails at its first import only

if not _trial_os.path.exists(".argusic-trial-flaky"):
    open(".argusic-trial-flaky", "w").close()
    raise ImportError("deliberately flaky: the first import fails")
"""


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def gold_files(patch: str) -> list[str]:
    return [line[len("+++ b/") :] for line in patch.splitlines() if line.startswith("+++ b/")]


def made_patch(work: Path, base: str, change) -> str:
    """The diff of `change(work)` on a clean checkout of base, as the agent's copy would give it."""
    git("checkout", "-q", "-f", base, cwd=work)
    git("clean", "-qfdx", cwd=work)
    change(work)
    git("add", "-A", cwd=work)
    return git("diff", "--cached", "--binary", base, cwd=work).decode()


def stale(patch: str) -> str:
    lines, seen_hunk = patch.splitlines(keepends=True), False
    for n, line in enumerate(lines):
        if line.startswith("@@"):
            seen_hunk = True
        elif seen_hunk and line.startswith(" ") and line.strip():
            lines[n] = " " + line[1:].rstrip("\n") + "  # changed upstream since\n"
            return "".join(lines)
    raise ValueError("no context line in the gold patch")


def broken_patches(item, repo: str) -> dict[str, str]:
    """The deliberately broken patches of one item (see the module's docstring)."""
    target = next(p for p in gold_files(item.gold_patch) if p.endswith(".py"))

    def gold(w: Path) -> None:
        git("apply", "--binary", "-", cwd=w, stdin=item.gold_patch.encode())

    def append(w: Path, path: str, text: str) -> None:
        with (w / path).open("a") as handle:
            handle.write(text)

    def tests_only(w: Path) -> None:
        for test_file in item.test_files:
            if (w / test_file).exists():
                append(w, test_file, "\n# edited by the agent\n")

    changes = {
        "no-fix": lambda w: append(w, target, "\n# looked into this, nothing to change\n"),
        "breaks-p2p": lambda w: (gold(w), append(w, target, '\nraise ImportError("deliberately broken")\n')),
        "tests-only": tests_only,
        "no-report": lambda w: append(w, target, "\nimport os\n\nos._exit(3)  # ends the run, no report\n"),
        "flaky": lambda w: (gold(w), append(w, target, FLAKY)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        git("clone", "-q", "--no-checkout", repo, str(work), cwd=Path(tmp))
        patches = {kind: made_patch(work, item.base, change) for kind, change in changes.items()}
    patches["stale"] = stale(item.gold_patch)
    return patches


def predictions(items_dir: Path, repo_map: dict[str, str], out: Path) -> None:
    lines = []
    for path in sorted(items_dir.glob("*/*.json")):
        if path.name.endswith(".validation.json"):
            continue
        item = load_item(path)
        if item.project_id not in repo_map:
            continue
        patches = {"gold": item.gold_patch, "empty": ""}
        if item.split is not None:
            patches["partial-gold"] = item.partial_gold_patch
        patches |= broken_patches(item, repo_map[item.project_id])
        for kind, patch in patches.items():
            entry = {"instance_id": item.item_id, "model_name_or_path": f"trial-{kind}", "model_patch": patch}
            lines.append(json.dumps(entry))
    out.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} predictions in {out}")


def table(items_dir: Path, grades_dir: Path, predictions_file: Path) -> int:
    labels = load_labels()
    kind_of = {label_for(f"trial-{k}", labels): k for k in EXPECTED}
    grades: dict[tuple[str, str], dict] = {}
    for path in sorted(grades_dir.glob("*.json")):
        g = json.loads(path.read_text())
        if g.get("source", {}).get("kind") == "predictions" and g["source"].get("label") in kind_of:
            grades[(g["item_id"], kind_of[g["source"]["label"]])] = g
    predicted = {
        (p["instance_id"], p["model_name_or_path"].removeprefix("trial-"))
        for p in map(json.loads, predictions_file.read_text().splitlines())
    }
    print()
    print(f"{'item':<36} {'track':<5} {'f2p':>3} {'p2p':>4} {'source':<16} {'validation':<10}")
    for path in sorted(items_dir.glob("*/*.json")):
        if path.name.endswith(".validation.json"):
            continue
        item = load_item(path)
        vpath = path.with_name(f"{item.item_id}.validation.json")
        valid = json.loads(vpath.read_text()) if vpath.exists() else None
        state = "not run" if valid is None else ("usable" if valid["usable"] else "NOT usable")
        split = " (split original)" if item.superseded_by_split else ""
        print(
            f"{item.project_id + '/' + item.item_id:<36} {item.track:<5} {len(item.fail_to_pass):>3} "
            f"{len(item.pass_to_pass):>4} {item.source.kind + ' ' + item.source.ref[:7]:<16} "
            f"{state:<10}{split}"
        )
        for problem in (valid or {}).get("problems", []):
            print(f"    problem: {problem}")
    print()
    print(f"{'item':<36} {'prediction':<13} {'verdict':<22} {'':<22} detail")
    mismatches = 0
    for item_id, kind in sorted(predicted):
        g = grades.get((item_id, kind))
        verdict = g["verdict"] if g else "(no grade)"
        ok = verdict == EXPECTED[kind]
        mismatches += not ok
        detail = ""
        if g:
            if g["failing_tests"]:
                detail = f"{len(g['failing_tests'])} failing, e.g. {g['failing_tests'][0]}"
            if g["excluded_paths"]:
                detail += f" excluded {', '.join(g['excluded_paths'])}"
            if g["rerun_files"]:
                detail += " reruns " + ", ".join(f"{r['file']}×{r['tries']}" for r in g["rerun_files"])
            if g.get("detail") and verdict not in ("resolved", "unresolved"):
                detail += f" ({g['detail'][:80]})"
        mark = "as expected" if ok else f"EXPECTED {EXPECTED[kind]}"
        print(f"{item_id:<36} {kind:<13} {verdict:<22} {mark:<22} {detail.strip()}")
    total = len(predicted)
    print(
        f"\n{total - mismatches} of {total} verdicts as expected"
        + (f"; {mismatches} NOT" if mismatches else "")
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "predictions":
        predictions(Path(args[0]), json.loads(args[1]), Path(args[2]))
    elif command == "table":
        sys.exit(table(Path(args[0]), Path(args[1]), Path(args[2])))
    else:
        sys.exit(f"unknown command {command}")
